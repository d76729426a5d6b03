"""What reposync reads of a GitHub delivery, and nothing more: a tolerant reader.

GitHub adds properties to its payloads without notice, leaves optional ones out, and
sends objects that come and go with the account and the product (``enterprise`` for an
organization an enterprise owns, ``organization``, ``installation``, GitHub Enterprise
Server's own fields). A published schema of *everything* (octokit's, whose definitions
forbid unknown properties and require fields that real deliveries lack) refused 15 of
GitHub's own 143 documented examples and every one of the Enterprise Server set. So a
delivery is checked against reposync's own schema of the properties it reads, in the
shape it reads them, and nothing else: a property reposync does not read can be
anything, or absent.

What reposync reads must be there and be in range: ids are positive 64-bit integers,
times are seconds since the epoch or RFC 3339 date-times that a ``datetime`` can hold,
object ids are Git's hex. A delivery that breaks this is refused (422
``webhook_payload_invalid``) naming the path, before anything is recorded, so a value
out of range can never reach the database or a ``datetime`` as a 500.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

from reposync.errors import WebhookPayloadInvalid
from reposync.providers import webhooks

#: GitHub's ids are 64-bit and positive.
MAX_ID = 2**63 - 1
#: 9999-12-31T23:59:59Z, the last second a ``datetime`` holds.
MAX_EPOCH = 253_402_300_799
#: The longest ``owner/name`` a delivery record keeps (its column's width).
MAX_FULL_NAME = 1024
#: A ref name longer than this is no ref git would make (its own limit is 4096 bytes).
MAX_REF = 4096
TIME_FORMAT = "reposync-time"
#: Git object ids: SHA-1, or SHA-256 in a repository that uses it.
_OBJECT_ID = "^([0-9a-f]{40}|[0-9a-f]{64})$"


#: An object of which these properties are read (the readers' shared helper).
_object = webhooks.read_object

ID: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": MAX_ID}
#: ``pushed_at`` is an epoch in push events and a date-time elsewhere; null before a push.
TIME: dict[str, Any] = {
    "type": ["integer", "string", "null"],
    "minimum": 0,
    "maximum": MAX_EPOCH,
    "format": TIME_FORMAT,
}
FULL_NAME: dict[str, Any] = {"type": "string", "minLength": 3, "maxLength": MAX_FULL_NAME}
OBJECT_ID: dict[str, Any] = {"type": "string", "pattern": _OBJECT_ID}
REPOSITORY = _object(
    {"id": ID, "full_name": FULL_NAME},
    {"pushed_at": TIME, "updated_at": TIME, "visibility": {"type": ["string", "null"]}},
)
#: A repository as an installation's lists name it (``repositories_added``, ...).
LISTED_REPOSITORY = _object({"id": ID, "full_name": FULL_NAME})
ACTION: dict[str, Any] = {"type": "string", "maxLength": 64}
INSTALLATION = _object({"id": ID})
REPOSITORY_LIST: dict[str, Any] = {"type": ["array", "null"], "items": LISTED_REPOSITORY}


def _content(extra: dict[str, Any] | None = None, **optional: Any) -> dict[str, Any]:
    return _object({"repository": REPOSITORY, **(extra or {})}, {"action": ACTION, **optional})


#: Per event, what reposync reads of its payload.
SCHEMAS: dict[str, dict[str, Any]] = {
    "push": _content(
        {
            "ref": {"type": "string", "minLength": 1, "maxLength": MAX_REF},
            "before": OBJECT_ID,
            "after": OBJECT_ID,
        },
        created={"type": "boolean"},
        deleted={"type": "boolean"},
    ),
    **{
        event: _content(
            {
                "ref": {"type": "string", "minLength": 1, "maxLength": MAX_REF},
                "ref_type": {"type": "string", "maxLength": 64},
            }
        )
        for event in ("create", "delete")
    },
    **{
        event: _content()
        for event in (
            "issues",
            "issue_comment",
            "label",
            "milestone",
            "pull_request",
            "pull_request_review",
            "pull_request_review_comment",
            "release",
        )
    },
    "repository": _object({"repository": REPOSITORY, "action": ACTION}),
    "installation": _object(
        {"installation": INSTALLATION, "action": ACTION}, {"repositories": REPOSITORY_LIST}
    ),
    "installation_repositories": _object(
        {"installation": INSTALLATION, "action": ACTION},
        {"repositories_added": REPOSITORY_LIST, "repositories_removed": REPOSITORY_LIST},
    ),
    "ping": {"type": "object"},
}

_formats = FormatChecker(formats=())


@_formats.checks(TIME_FORMAT, raises=ValueError)
def _is_time(value: object) -> bool:
    """A date-time string a ``datetime`` can hold, with its offset (the epoch form is
    ranged by the schema)."""
    if isinstance(value, str):
        parse_time(value)
    return True


def parse_time(value: str) -> datetime:
    """An RFC 3339 date-time as GitHub writes it (``2026-12-05T10:00:00Z``); ValueError
    for anything without an offset or beyond what a ``datetime`` holds."""
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError(f"{value!r} has no time zone offset")
    return parsed.astimezone(UTC)


def epoch_time(value: int) -> datetime:
    """Seconds since the epoch (the schema has ranged them)."""
    return datetime.fromtimestamp(value, UTC)


@functools.cache
def _validator(event: str) -> Draft202012Validator:
    return Draft202012Validator(SCHEMAS[event], format_checker=_formats)


def read(event: str, payload: object) -> dict[str, Any]:
    """``payload`` once it holds what reposync reads of ``event`` (a key of ``SCHEMAS``);
    ``WebhookPayloadInvalid`` naming the first path that does not."""
    return webhooks.checked(_validator(event), event, payload)


def refuse(event: str, path: str, why: str) -> WebhookPayloadInvalid:
    """The refusal of a value the schema admits but reposync cannot use (a renamed
    repository's name outside GitHub's grammar)."""
    return WebhookPayloadInvalid(f"the {event} delivery's {path} {why}")
