"""The REST API under ``/api/v1`` as a WSGI application: authentication, ``Sudo``, token
scopes, routing, Forgejo's paging and error shapes, and the contract on every exchange.

What Forgejo does, and this models (routers/api/v1/api.go and services/context/api.go in
Forgejo's source unless said otherwise):

* Credentials: ``Authorization: token <t>``, ``Bearer <t>``, or Basic with the token as
  password (any user name). A token that does not exist is refused 401 "access token
  does not exist [sha: <t>]" (Forgejo's words as a public client's tests record them
  for a recent Forgejo; not confirmed from Forgejo 11's source, where an unknown token
  may read as anonymous); no credential at all reads what anonymous users may, and an
  operation that needs one answers 401 "token is required" (``reqToken``).
* ``Sudo`` (header, or the ``sudo`` query parameter): a site administrator's token acts
  as the named user (404 when there is none); anyone else's is refused 403 with the
  body ``{"message": "Only administrators allowed to sudo."}`` (no ``url``).
* Scopes: a token carries scopes per category (``read:issue``, ``write:repository``,
  ``all``); GET needs ``read:``, every other method ``write:`` of the route group's
  category, checked before the repository is looked up: 403 "token does not have at
  least one of required scope(s): [write:issue]" (``tokenRequiresScopes``).
* A repository the caller may not read is 404, one it may not write to is 403 "user
  should have a permission to write to a repo" (``reqRepoWriter``).
* A request body the binding rejects is 422 "[<Go field>]: Required" (``bind``).
* Faults are injected per request (``fake.faults``: ``tests/fakes/github/faults.py``'s
  latency, error, commit-then-drop and timeout, matched on the path under ``/api/v1``),
  so a client's handling of lost answers can be tested as against GitHub's server.
* Every answer has ``Cache-Control: max-age=0, private, must-revalidate, no-transform``
  (``APIContexter``) and no ``ETag``: Forgejo sets ETags only where it serves blobs,
  LFS objects and attachments (``httpcache.HandleGenericETagCache``), never on the JSON
  API, and so ignores ``If-None-Match`` there. There is no rate limit (Forgejo has none
  by default), so no rate-limit headers.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
import traceback
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

from werkzeug.exceptions import ClientDisconnected
from werkzeug.wrappers import Request, Response

from tests.fakes.forgejo.errors import NOT_WRITER, ApiError, not_found
from tests.fakes.forgejo.routes_issues import ROUTES as ISSUE_ROUTES
from tests.fakes.forgejo.routes_meta import ROUTES as META_ROUTES
from tests.fakes.forgejo.routes_pulls import ROUTES as PULL_ROUTES
from tests.fakes.forgejo.routes_releases import ROUTES as RELEASE_ROUTES
from tests.fakes.forgejo.routing import Ctx, Reply, Route, Router
from tests.fakes.gitserver.wsgi import drop_connection, raw_target
from tests.fakes.operations import forgejo_operation

if TYPE_CHECKING:
    from collections.abc import Iterable

    from _typeshed.wsgi import StartResponse, WSGIEnvironment

    from tests.fakes.forgejo.models import Token
    from tests.fakes.forgejo.server import ForgejoFake

API_PREFIX = "/api/v1"
ROUTER = Router(META_ROUTES + ISSUE_ROUTES + PULL_ROUTES + RELEASE_ROUTES)
SUDO_REFUSED = "Only administrators allowed to sudo."
CACHE_CONTROL = "max-age=0, private, must-revalidate, no-transform"


@dataclass(frozen=True)
class RequestRecord:
    """One request the API answered (``fake.requests``)."""

    at: datetime
    method: str
    path: str  # under /api/v1, as sent
    query: dict[str, str]
    status: int
    doer: str | None  # whom it acted as (after Sudo)
    #: JSON objects the answer held: a list's length, 1 for an object, 0 for none (what
    #: a client read, for read-economy tests).
    returned: int = 0


def _returned(reply: Reply) -> int:
    if reply.status >= 300 or reply.body is None:
        return 0
    return len(reply.body) if isinstance(reply.body, list) else 1


def token_from(header: str | None) -> str | None:
    """The token of an ``Authorization`` header: ``token``/``Bearer`` or Basic's password
    (or its user name when the password is empty, as Forgejo's Basic auth reads it)."""
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    scheme = scheme.lower()
    if scheme in ("token", "bearer"):
        return value.strip()
    if scheme == "basic":
        try:
            decoded = base64.b64decode(value.strip()).decode()
        except (binascii.Error, UnicodeDecodeError):
            return ""
        user, _, password = decoded.partition(":")
        return password or user
    return ""


class ApiApp:
    """Forgejo's REST API; handlers run under the state's lock."""

    def __init__(self, fake: ForgejoFake) -> None:
        self.fake = fake

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        request = Request(environ)
        raw_path, raw_query = raw_target(environ)
        path = raw_path[len(API_PREFIX) :] or "/"
        query = parse_qsl(raw_query, keep_blank_values=True)
        full_url = self.fake.root_url + raw_path + (f"?{raw_query}" if raw_query else "")
        method = request.method.upper()
        ctx = Ctx(
            state=self.fake.state,
            urls=self.fake.urls,
            request=request,
            path=path,
            params={},
            query=query,
            webhooks=self.fake.webhooks,
            limits=(self.fake.default_paging_num, self.fake.max_response_items),
        )
        fault = self.fake.faults.pick("api", method, path)
        if fault is not None and fault.kind == "latency":
            time.sleep(fault.seconds)
        if fault is not None and fault.kind == "error":
            reply = Reply(
                fault.status,
                {"message": "", "url": self.fake.swagger_url},
                dict(fault.answer_headers()),
            )
        else:
            reply = self._handle(ctx, method, path, full_url)
        response = self._respond(reply)
        if fault is None or fault.kind != "error":  # an injected failure is not Forgejo's
            self._validate_response(method, full_url, response)
        record = RequestRecord(
            at=self.fake.state.now(),
            method=method,
            path=path,
            query=dict(query),
            status=response.status_code,
            doer=ctx.doer.login if ctx.doer is not None else None,
            returned=_returned(reply),
        )
        self.fake.requests.append(record)
        if fault is not None and fault.kind == "commit_then_drop":
            if fault.drop == "close":  # done, and no answer at all
                drop_connection(environ)
            response = self._respond(Reply(502, {"message": "", "url": self.fake.swagger_url}))
        if fault is not None and fault.kind == "timeout":
            time.sleep(fault.seconds)
        return response(environ, start_response)

    def _handle(self, ctx: Ctx, method: str, path: str, full_url: str) -> Reply:
        contract = self.fake.contract
        try:
            body = ctx.request.get_data(cache=True)
        except ClientDisconnected:  # the client went away mid-body: nothing of it is kept
            return Reply(
                400, {"message": "the request body ended early", "url": self.fake.swagger_url}
            )
        check = contract.check_request(method, full_url, ctx.request.headers, body)
        if check.problems and self.fake.validate_requests:
            violation = contract.violation(method, full_url, "request", check.problems)
            self.fake.request_violations.append(violation)
        try:
            with self.fake.state.lock:
                matched = ROUTER.match(method, path)
                if matched is None:
                    if ROUTER.allows_path(path):
                        return Reply(405)
                    operation = forgejo_operation(method, path)
                    if operation is not None:  # Forgejo has it; the fake does not model it
                        self.fake.unmodelled.append(f"{method} {full_url}: {operation}")
                        raise ApiError(
                            501, f"{operation} is not modelled by the Forgejo test server"
                        )
                    raise not_found()
                route, ctx.params = matched
                self._authenticate(ctx, route, method)
                self._sudo(ctx)
                self._check_scope(ctx, route, method)
                if "owner" in ctx.params and "repo" in ctx.params:
                    self._resolve_repo(ctx, route, method)
                if check.body_errors and method in ("POST", "PATCH", "PUT", "DELETE"):
                    first = check.body_errors[0]
                    go_name = contract.go_name(method, full_url, first.field)
                    what = "Required" if first.code == "missing_field" else "Invalid"
                    raise ApiError(422, f"[{go_name}]: {what}")
                return route.handler(ctx)
        except ApiError as error:
            return Reply(error.status, error.body(self.fake.swagger_url))
        except Exception:
            self.fake.server_errors.append(traceback.format_exc())
            return Reply(500, {"message": "", "url": self.fake.swagger_url})

    def _authenticate(self, ctx: Ctx, route: Route, method: str) -> None:
        header = ctx.request.headers.get("Authorization")
        secret = token_from(header)
        if secret is not None:
            token = self.fake.state.token(secret) if secret else None
            if token is None:
                raise ApiError(401, f"access token does not exist [sha: {secret}]")
            ctx.token, ctx.doer = token, token.user
            return
        needs_token = route.access in ("signed", "write") or method != "GET"
        if needs_token:
            raise ApiError(401, "token is required")

    def _sudo(self, ctx: Ctx) -> None:
        name = ctx.arg("sudo") or ctx.request.headers.get("Sudo")
        if not name:
            return
        if ctx.doer is None or not ctx.doer.is_admin:
            raise ApiError(403, SUDO_REFUSED, plain=True)
        found = self.fake.state.find_user(name)
        if found is None:
            raise not_found(f"user redirect does not exist [name: {name}]")
        ctx.doer = found

    def _check_scope(self, ctx: Ctx, route: Route, method: str) -> None:
        token: Token | None = ctx.token
        if token is None or not route.scope:
            return
        write = method != "GET"
        if not token.allows(route.scope, write):
            needed = f"{'write' if write else 'read'}:{route.scope}"
            raise ApiError(
                403, f"token does not have at least one of required scope(s): [{needed}]"
            )

    def _resolve_repo(self, ctx: Ctx, route: Route, method: str) -> None:
        state = self.fake.state
        repo = state.find_repo(ctx.params["owner"], ctx.params["repo"])
        if repo is None or not state.can_read(ctx.doer, repo):
            raise not_found()
        if route.access == "write" and (ctx.doer is None or not state.can_write(ctx.doer, repo)):
            raise ApiError(403, NOT_WRITER)
        ctx.repo = repo

    def _respond(self, reply: Reply) -> Response:
        body = b""
        headers: dict[str, str] = {
            "Cache-Control": CACHE_CONTROL,
            "X-Content-Type-Options": "nosniff",
            "X-Frame-Options": "SAMEORIGIN",
        }
        if reply.body is not None:
            body = json.dumps(reply.body, separators=(",", ":")).encode() + b"\n"
            headers["Content-Type"] = "application/json;charset=utf-8"
        headers.update(reply.headers)
        return Response(body, status=reply.status, headers=headers)

    def _validate_response(self, method: str, full_url: str, response: Response) -> None:
        contract = self.fake.contract
        if not self.fake.validate_responses or not contract.describes(method, full_url):
            return
        problems = contract.response_problems(
            method, full_url, response.status_code, response.headers, response.get_data()
        )
        if problems:
            what = f"response {response.status_code}"
            self.fake.violations.append(contract.violation(method, full_url, what, problems))
