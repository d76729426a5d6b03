"""Routes, the per-request context handed to handlers, and their replies."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from werkzeug.wrappers import Request

from tests.fakes.forge_server.routing import Reply, RequestArgs, RouteBase, RouterBase
from tests.fakes.github.errors import ApiError
from tests.fakes.github.models import App, Repo, Token, User
from tests.fakes.github.paging import page_of
from tests.fakes.github.ratelimit import RateLimiter
from tests.fakes.github.render import Urls
from tests.fakes.github.state import State

if TYPE_CHECKING:
    from tests.fakes.github.webhooks import WebhookHub

#: The viewer of an unauthenticated read.
ANONYMOUS = User(login="", id=0)

__all__ = ["Ctx", "Handler", "Reply", "Route", "Router", "read", "write"]


@dataclass
class Ctx(RequestArgs[Repo]):
    state: State
    urls: Urls
    limiter: RateLimiter
    request: Request
    url: str  # the request's URL on the fake, without the query
    params: dict[str, str]
    query: list[tuple[str, str]]
    token: Token | None = None
    app: App | None = None  # the app a JWT authenticated
    repo: Repo | None = None
    #: Where a change's webhook events go (``webhook_events``); None: nowhere.
    webhooks: WebhookHub | None = None
    layout: str = "github.com"  # the fake's layout: "github.com" or "ghes"
    _json: Any = None

    @property
    def actor(self) -> User:
        """Who acts: the token's user, or for an anonymous read nobody (``ANONYMOUS``,
        which owns nothing: what only an author sees stays hidden). Writes always
        authenticate, so nothing is ever attributed to it."""
        return self.token.user if self.token is not None else ANONYMOUS

    @property
    def via_app(self) -> str | None:
        inst = self.token.installation if self.token is not None else None
        return inst.app.slug if inst is not None else None

    def json_value(self) -> Any:
        """The JSON body, whatever its type ({} when empty); 400 "Problems parsing JSON"
        when it is not JSON."""
        if self._json is None:
            raw = self.request.get_data(cache=True)
            if not raw.strip():
                self._json = {}
            else:
                try:
                    self._json = json.loads(raw)
                except ValueError as exc:
                    raise ApiError(400, "Problems parsing JSON") from exc
        return self._json

    def json(self) -> dict[str, Any]:
        """The JSON object body ({} when empty); 400 "Problems parsing JSON" otherwise."""
        value = self.json_value()
        if not isinstance(value, dict):
            raise ApiError(400, "Problems parsing JSON")
        return value

    def page(self, items: list[Any], render: Callable[[Any], Any]) -> Reply:
        chosen, link = page_of(items, self.query, self.url)
        headers = {"link": link} if link else {}
        return Reply(200, [render(item) for item in chosen], headers)

    def app_of(self, slug: str | None) -> App | None:
        if slug is None:
            return None
        return next((a for a in self.state.apps.values() if a.slug == slug), None)


Handler = Callable[[Ctx], Reply]


@dataclass(frozen=True)
class Route(RouteBase):
    handler: Handler
    host: str = "api"
    #: "repo", "jwt", "user" (a person's token), "token" (any token) or "public" (any
    #: token, or none: a public read such as another user's profile)
    auth: str = "repo"
    permissions: tuple[str, ...] = ("metadata",)
    write: bool = False
    content: bool = False  # creates content: counted by the secondary limit
    resource: str = ""  # names the resource in 422 bodies
    counts: bool = True  # spends primary quota (GET /rate_limit does not)
    #: What a classic token needs (``X-Accepted-OAuth-Scopes``); None: ``repo`` for a
    #: repository's operations, nothing for the others.
    scopes: tuple[str, ...] | None = None

    @property
    def accepted_scopes(self) -> tuple[str, ...]:
        if self.scopes is not None:
            return self.scopes
        return ("repo",) if self.auth == "repo" else ()


class Router(RouterBase[Route]):
    def match(self, host: str, method: str, raw_path: str) -> tuple[Route, dict[str, str]] | None:
        return self._first(raw_path, lambda route: route.host == host and route.method == method)


def read(template: str, handler: Handler, permissions: tuple[str, ...]) -> Route:
    """A GET of repository content."""
    return Route("GET", template, handler, permissions=permissions)


def write(
    method: str,
    template: str,
    handler: Handler,
    permissions: tuple[str, ...],
    resource: str,
    host: str = "api",
) -> Route:
    """A write that creates or changes content (counted by the secondary limit)."""
    return Route(
        method,
        template,
        handler,
        host=host,
        permissions=permissions,
        write=True,
        content=True,
        resource=resource,
    )
