"""Routes, the per-request context handed to handlers, their replies, and Forgejo's paging.

Paging is Forgejo's (routers/api/v1/utils.GetListOptions, services/context/api.go
``SetLinkHeader``): ``page`` (from 1) and ``limit`` (default ``default_paging_num``, at
most ``max_response_items`` of ``/settings/api``); the answer carries ``X-Total-Count``
and, when there is more than one page, ``Link`` with ``next``, ``last``, ``first`` and
``prev`` in that order, joined by a bare comma, each URL the request's own with ``page``
replaced and the query's keys sorted (Go's ``url.Values.Encode``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from werkzeug.wrappers import Request

from tests.fakes.forge_server.routing import Reply, RequestArgs, RouteBase, RouterBase
from tests.fakes.forgejo.errors import unprocessable
from tests.fakes.forgejo.models import Repo, Token, User
from tests.fakes.forgejo.render import Urls
from tests.fakes.forgejo.state import State

if TYPE_CHECKING:
    from tests.fakes.forgejo.webhooks import ForgejoWebhooks

DEFAULT_PAGING_NUM = 30
MAX_RESPONSE_ITEMS = 50

__all__ = ["Ctx", "Handler", "Reply", "Route", "Router"]


@dataclass
class Ctx(RequestArgs[Repo]):
    state: State
    urls: Urls
    request: Request
    path: str  # the request's path under /api/v1, as sent
    params: dict[str, str]
    query: list[tuple[str, str]]
    webhooks: ForgejoWebhooks
    limits: tuple[int, int] = (DEFAULT_PAGING_NUM, MAX_RESPONSE_ITEMS)
    token: Token | None = None
    doer: User | None = None  # the token's user, or whom an admin's Sudo names
    repo: Repo | None = None
    _json: Any = None

    def the_doer(self) -> User:
        assert self.doer is not None
        return self.doer

    def int_param(self, name: str) -> int:
        try:
            return int(self.params[name])
        except ValueError:
            raise unprocessable(f"[{name}]: must be an integer") from None

    def json(self) -> dict[str, Any]:
        """The JSON object body ({} when empty); 422 as Forgejo's binding answers."""
        if self._json is None:
            raw = self.request.get_data(cache=True)
            try:
                self._json = json.loads(raw) if raw.strip() else {}
            except ValueError as exc:
                raise unprocessable(f"[]: {exc}") from exc
        if not isinstance(self._json, dict):
            raise unprocessable("[]: the body is not a JSON object")
        return self._json

    def page(self, items: Sequence[Any], render: Callable[[Any], Any]) -> Reply:
        """One page of ``items`` with Forgejo's paging headers."""
        default, most = self.limits
        try:
            page = max(int(self.arg("page") or 1), 1)
        except ValueError:
            page = 1
        try:
            limit = int(self.arg("limit") or 0)
        except ValueError:
            limit = 0
        limit = default if limit <= 0 else min(limit, most)
        chosen = items[(page - 1) * limit : page * limit]
        headers = {"X-Total-Count": str(len(items))}
        link = self._links(len(items), limit, page)
        if link:
            headers["Link"] = link
        headers["Access-Control-Expose-Headers"] = (
            "X-Total-Count, Link" if link else "X-Total-Count"
        )
        return Reply(200, [render(item) for item in chosen], headers)

    def _links(self, total: int, size: int, current: int) -> str:
        pages = max((total + size - 1) // size, 1)
        current = min(current, pages)
        base = f"{self.urls.api}{self.path}"

        def link(number: int, rel: str) -> str:
            kept = {k: v for k, v in self.query}
            kept["page"] = str(number)
            return f'<{base}?{urlencode(sorted(kept.items()))}>; rel="{rel}"'

        links = []
        if total > current * size:
            links.append(link(current + 1, "next"))
            links.append(link(pages, "last"))
        if current != 1:
            links.append(link(1, "first"))
            links.append(link(current - 1, "prev"))
        return ",".join(links)


Handler = Callable[[Ctx], Reply]


@dataclass(frozen=True)
class Route(RouteBase):
    handler: Handler
    #: The token scope category (``issue``, ``repository``, ``user``, ``organization``),
    #: "" for none; a GET needs ``read:``, anything else ``write:``.
    scope: str = "repository"
    #: "none": anyone; "signed": a token; for repository routes "read" or "write" access.
    access: str = "read"


def under_repo(prefix: str = "", scope: str = "repository") -> Callable[..., Route]:
    """A maker of a family's routes: ``(method, path, handler, access="read")`` for
    ``/repos/{owner}/{repo}<prefix><path>``, all of one token scope category."""

    def route(method: str, path: str, handler: Handler, access: str = "read") -> Route:
        template = f"/repos/{{owner}}/{{repo}}{prefix}{path}"
        return Route(method, template, handler, scope=scope, access=access)

    return route


class Router(RouterBase[Route]):
    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        return self._first(path, lambda route: route.method == method)

    def allows_path(self, path: str) -> list[str]:
        return sorted({r.method for r, p in self._routes if p.match(path)})
