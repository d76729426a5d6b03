"""Path templates and replies, the same for both test servers' routers and contracts.

A template's ``{name}`` matches one path segment, or several for the names a forge lets
hold slashes (a Git ref: ``heads/main``); literal segments win over parameters, as in
any router (``/issues/comments`` is not ``/issues/{number}``).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    status: int
    body: Any = None  # JSON-able, or None for no body
    headers: dict[str, str] = field(default_factory=dict)
    #: Bytes sent as they are instead of JSON (``headers`` then names their type).
    raw: bytes | None = None


def template_pattern(template: str, multi_segment: Collection[str] = ()) -> re.Pattern[str]:
    """The regular expression of a path template, one named group per parameter."""
    regex = re.escape(template)
    for name in re.findall(r"\{(\w+)\}", template):
        part = ".+" if name in multi_segment else "[^/]+"
        regex = regex.replace(re.escape("{" + name + "}"), f"(?P<{name}>{part})")
    return re.compile(f"^{regex}$")


def specificity(template: str) -> tuple[int, int]:
    """A sort key putting the template with fewer parameters, then the longer, first."""
    return template.count("{"), -len(template)


def query_arg(
    query: Sequence[tuple[str, str]], name: str, default: str | None = None
) -> str | None:
    """The first value of ``name`` in a parsed query string."""
    for key, value in query:
        if key == name:
            return value
    return default
