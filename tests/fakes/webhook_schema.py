"""Check webhook payloads against GitHub's webhook JSON Schema (octokit's, draft-07).

The schema is ``tests/contracts/github-webhooks-schema.json`` (``../shared/contracts/``'s,
unchanged; see the README beside it). reposync itself reads deliveries tolerantly
(``reposync/providers/github/payloads.py``); this is what the GitHub test server and the
tests' own payloads are held to, so they never send what GitHub's schema rules out.
Each event has its own definition: most are ``<event>_event`` (a ``oneOf`` of its
actions), a few are ``<event>$event`` (``push``, ``create``, ``delete``, ``ping``...).
A payload is checked against its event's definition with formats (``date-time``...)
checked too, so the GitHub test server's deliveries and anything a test builds by hand
face the same contract.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft7Validator
from jsonschema.exceptions import ValidationError, best_match

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "contracts" / "github-webhooks-schema.json"
MAX_LISTED_ERRORS = 5


@functools.cache
def schema() -> dict[str, Any]:
    with SCHEMA_PATH.open(encoding="utf-8") as handle:
        loaded: dict[str, Any] = json.load(handle)
    return loaded


def definition_name(event: str) -> str:
    """The schema's definition of ``event`` (an ``X-GitHub-Event`` value)."""
    definitions = schema()["definitions"]
    for name in (f"{event}_event", f"{event}$event"):
        if name in definitions:
            return name
    raise KeyError(f"GitHub's webhook schema has no event {event!r}")


@functools.cache
def validator(event: str) -> Draft7Validator:
    """A validator of ``event``'s payloads (the whole schema rides along for its refs)."""
    root = {
        "$ref": f"#/definitions/{definition_name(event)}",
        "definitions": schema()["definitions"],
    }
    return Draft7Validator(root, format_checker=Draft7Validator.FORMAT_CHECKER)


def _leaves(error: ValidationError) -> list[ValidationError]:
    """The errors that say most: inside a ``oneOf`` of actions, those of the branch whose
    ``action`` matched (not the other branches' "'opened' is not one of ['closed']")."""
    if not error.context:
        return [error]
    branches: dict[Any, list[ValidationError]] = {}
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    chosen = [
        errors
        for errors in branches.values()
        if not any(list(e.relative_path) == ["action"] for e in errors)
    ]
    if len(chosen) != 1:
        return _leaves(best_match(error.context))
    return [leaf for sub in chosen[0] for leaf in _leaves(sub)]


def _describe(error: ValidationError) -> str:
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return f"{where}: {error.message[:300]}"


def payload_problems(event: str, payload: Any) -> list[str]:
    """What makes ``payload`` invalid as an ``event`` webhook (empty when it is valid)."""
    try:
        checker = validator(event)
    except KeyError as exc:
        return [str(exc)]
    leaves = [leaf for error in checker.iter_errors(payload) for leaf in _leaves(error)]
    leaves.sort(key=lambda e: [str(p) for p in e.absolute_path])
    return [_describe(e) for e in leaves[:MAX_LISTED_ERRORS]]
