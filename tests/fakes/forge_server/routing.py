"""Path templates and replies, the same for both test servers' routers and contracts.

A template's ``{name}`` matches one path segment, or several for the names a forge lets
hold slashes (a Git ref: ``heads/main``); literal segments win over parameters, as in
any router (``/issues/comments`` is not ``/issues/{number}``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar
from urllib.parse import unquote


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


RepoT = TypeVar("RepoT")


class RequestArgs(Generic[RepoT]):
    """A mixin of a route's per-request context with ``repo`` and ``query`` fields."""

    repo: RepoT | None
    query: list[tuple[str, str]]

    def the_repo(self) -> RepoT:
        """The repository the route names (routes under ``/repos/{owner}/{repo}``)."""
        assert self.repo is not None
        return self.repo

    def arg(self, name: str, default: str | None = None) -> str | None:
        return query_arg(self.query, name, default)


@dataclass(frozen=True)
class RouteBase:
    """A route: each forge's adds who may call it."""

    #: Parameters that hold slashes (a Git ref's ``heads/main``).
    MULTI_SEGMENT: ClassVar[frozenset[str]] = frozenset({"ref"})

    method: str
    template: str
    handler: Callable[[Any], Reply]

    def pattern(self) -> re.Pattern[str]:
        return template_pattern(self.template, self.MULTI_SEGMENT)


RouteT = TypeVar("RouteT", bound=RouteBase)


class RouterBase(Generic[RouteT]):
    """Routes in matching order, literal segments first."""

    def __init__(self, routes: list[RouteT]) -> None:
        ordered = sorted(routes, key=lambda r: specificity(r.template))
        self._routes = [(route, route.pattern()) for route in ordered]

    def _first(
        self, path: str, wanted: Callable[[RouteT], bool]
    ) -> tuple[RouteT, dict[str, str]] | None:
        """The first wanted route matching ``path`` (still percent-encoded), and its
        parameters decoded."""
        for route, pattern in self._routes:
            if not wanted(route):
                continue
            found = pattern.match(path)
            if found:
                return route, {k: unquote(v) for k, v in found.groupdict().items()}
        return None
