"""GitHub's documented webhook examples (``@octokit/webhooks-examples``, npm, MIT).

The corpus octokit keeps from GitHub's documentation and real deliveries: one set for
api.github.com and one per GitHub Enterprise Server release (``ghes-3.x``). These are
what a real installation sends first; the tests post every example of an event reposync
handles and check what it did. Identical payloads that appear in several sets are one
example (named after the first set that has it).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from reposync.providers.github.events import HANDLED_EVENTS
from tests.node import package_dir

PACKAGE = "@octokit/webhooks-examples"


@dataclass(frozen=True)
class Example:
    #: ``api.github.com-push-3``: the set, the event and its place in the set.
    name: str
    sets: tuple[str, ...]
    event: str
    payload: dict[str, Any]

    @property
    def action(self) -> str | None:
        action = self.payload.get("action")
        return action if isinstance(action, str) else None

    def fresh(self) -> dict[str, Any]:
        """A copy to change."""
        return copy.deepcopy(self.payload)


def sets() -> list[str]:
    """The sets the package holds: ``api.github.com`` first, then ``ghes-*`` in order."""
    root = package_dir(PACKAGE)
    found = sorted(p.name for p in root.iterdir() if (p / "index.json").is_file())
    return sorted(found, key=lambda name: (name != "api.github.com", name))


@functools.cache
def examples() -> tuple[Example, ...]:
    """Every distinct example of an event reposync handles, over every set."""
    by_digest: dict[str, tuple[str, str, dict[str, Any], list[str]]] = {}
    root = package_dir(PACKAGE)
    for name in sets():
        for webhook in json.loads((root / name / "index.json").read_text("utf-8")):
            event = webhook["name"]
            if event not in HANDLED_EVENTS:
                continue
            for index, payload in enumerate(webhook["examples"]):
                digest = hashlib.sha256(
                    json.dumps([event, payload], sort_keys=True).encode()
                ).hexdigest()
                if digest in by_digest:
                    by_digest[digest][3].append(name)
                else:
                    by_digest[digest] = (f"{name}-{event}-{index}", event, payload, [name])
    return tuple(
        Example(label, tuple(in_sets), event, payload)
        for label, event, payload, in_sets in by_digest.values()
    )


def with_unknown_properties(value: Any, depth: int = 0) -> Any:
    """``value`` with a property reposync has never heard of added to every object, at
    every level (GitHub adds fields without notice), holding values of every JSON kind."""
    if isinstance(value, dict):
        grown = {k: with_unknown_properties(v, depth + 1) for k, v in value.items()}
        grown[f"x_added_by_github_{depth}"] = {
            "id": "not-an-int",
            "full_name": None,
            "list": [1, 2.5, "three", None, True, {"deeper": []}],
        }
        return grown
    if isinstance(value, list):
        return [with_unknown_properties(v, depth + 1) for v in value]
    return value


def objects(value: Any, path: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object in ``value`` with its JSON path."""
    if isinstance(value, dict):
        yield path, value
        for key, child in value.items():
            yield from objects(child, f"{path}.{key}")
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from objects(child, f"{path}[{index}]")
