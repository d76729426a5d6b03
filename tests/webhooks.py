"""GitHub webhook deliveries for the tests and the bench, valid against GitHub's published
schema (octokit's, ``tests/fakes/webhook_schema.py``) and signed as GitHub signs them.

Until the GitHub test server delivers webhooks itself, the tests build payloads here: a
minimal instance of the event's definition is generated from the schema (every required
property, the first choice of each ``oneOf``/``enum``), then the fields a test cares about
are set, and the result is checked against the schema before anyone sends it, so a test
never passes on a payload GitHub would not send.
"""

from __future__ import annotations

import copy
import functools
import json
import uuid
from datetime import UTC, datetime
from typing import Any

from reposync.providers.github.webhooks import sign
from tests.fakes import webhook_schema

DATE = "2026-12-05T10:00:00Z"


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = webhook_schema.schema()["definitions"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def _instance(node: dict[str, Any]) -> Any:
    node = _resolve(node)
    if "const" in node:
        return node["const"]
    if "enum" in node:
        return node["enum"][0]
    if "allOf" in node:
        merged: dict[str, Any] = {}
        for part in node["allOf"]:
            merged.update(_instance(part))
        return merged
    for key in ("oneOf", "anyOf"):
        if key in node:
            options = [_resolve(o) for o in node[key]]
            plain = [o for o in options if o.get("type") == "null"]
            return _instance(plain[0] if plain else options[0])
    kind = node.get("type", "object")
    if isinstance(kind, list):
        kind = "null" if "null" in kind else kind[0]
    if kind == "null":
        return None
    if kind == "object":
        properties = node.get("properties", {})
        return {name: _instance(properties.get(name, {})) for name in node.get("required", [])}
    if kind == "array":
        return [_instance(node.get("items", {})) for _ in range(node.get("minItems", 0))]
    if kind == "string":
        return {"date-time": DATE, "uri": "https://github.invalid/x"}.get(
            node.get("format", ""), "x"
        )
    if kind in ("integer", "number"):
        return max(1, node.get("minimum", 1))
    if kind == "boolean":
        return False
    raise AssertionError(f"no instance for {node}")


@functools.cache
def _skeleton(definition: str) -> dict[str, Any]:
    value: dict[str, Any] = _instance({"$ref": f"#/definitions/{definition}"})
    return value


def skeleton(definition: str) -> dict[str, Any]:
    """A minimal valid instance of a schema definition (a fresh copy to change)."""
    return copy.deepcopy(_skeleton(definition))


def repository(
    repository_id: int,
    full_name: str,
    *,
    visibility: str = "private",
    updated_at: str = DATE,
    pushed_at: str | int | None = DATE,
) -> dict[str, Any]:
    """A webhook's ``repository`` object."""
    repo = skeleton("repository")
    owner, name = full_name.split("/", 1)
    repo.update(
        id=repository_id,
        name=name,
        full_name=full_name,
        private=visibility != "public",
        visibility=visibility,
        updated_at=updated_at,
        pushed_at=pushed_at,
        default_branch="main",
    )
    repo["owner"]["login"] = owner
    return repo


def definition_name(event: str, action: str | None) -> str:
    """The narrowest definition of a payload: its action's (``issues$opened``), else its
    event's."""
    if action is not None and f"{event}${action}" in webhook_schema.schema()["definitions"]:
        return f"{event}${action}"
    return webhook_schema.definition_name(event)


def payload(event: str, action: str | None = None, **fields: Any) -> dict[str, Any]:
    """A valid payload of ``event`` (and ``action``) with ``fields`` set at the top level."""
    body = skeleton(definition_name(event, action))
    if action is not None:
        body["action"] = action
    body.update(fields)
    problems = webhook_schema.payload_problems(event, body)
    assert not problems, problems  # never send what GitHub would not
    return body


def push(
    repository_id: int, full_name: str, ref: str, before: str, after: str, **repo: Any
) -> dict[str, Any]:
    return payload(
        "push",
        ref=ref,
        before=before,
        after=after,
        created=before == "0" * 40,
        deleted=after == "0" * 40,
        repository=repository(repository_id, full_name, **repo),
    )


def issue_comment_edited(repository_id: int, full_name: str, body: str) -> dict[str, Any]:
    fields = skeleton("issue_comment$edited")
    fields["comment"]["body"] = body
    return payload(
        "issue_comment",
        "edited",
        comment=fields["comment"],
        issue=fields["issue"],
        changes={"body": {"from": "before"}},
        repository=repository(repository_id, full_name),
    )


def renamed(repository_id: int, new_name: str, old: str, *, at: str = DATE) -> dict[str, Any]:
    return payload(
        "repository",
        "renamed",
        changes={"repository": {"name": {"from": old}}},
        repository=repository(repository_id, new_name, updated_at=at),
    )


def visibility_changed(
    repository_id: int, full_name: str, visibility: str, *, at: str = DATE
) -> dict[str, Any]:
    action = "publicized" if visibility == "public" else "privatized"
    body = payload(
        "repository",
        action,
        repository=repository(repository_id, full_name, visibility=visibility, updated_at=at),
    )
    return body


def encode(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode()


def headers(
    event: str, raw: bytes, secret: str | None, delivery_id: str | None = None
) -> dict[str, str]:
    """The headers GitHub sends with a delivery (no signature without a secret)."""
    sent = {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/test",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
        "X-GitHub-Hook-ID": "1",
    }
    if secret is not None:
        sent["X-Hub-Signature-256"] = sign(secret, raw)
    return sent


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
