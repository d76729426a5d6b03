"""The REST API as a WSGI application: auth, limits, routing, ETags, faults, logging.

One instance serves the API host and one the uploads host; both share the fake's state.
Handlers run under the state's lock, so the fake is consistent under concurrent clients.
Every response except 304 is validated against GitHub's description (``fake.violations``),
and so is every request (``fake.request_violations``). An operation GitHub has and the
fake does not model is answered 501 and recorded (``fake.unmodelled``; tests/fakes/operations.py).

Who asked is in the headers, as GitHub answers them: a classic token's scopes
(``X-OAuth-Scopes``) and the scopes the operation accepts (``X-Accepted-OAuth-Scopes``);
for fine-grained, installation and user tokens the permissions it accepts
(``X-Accepted-GitHub-Permissions``, alternatives separated by ``; ``).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
import traceback
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from werkzeug.datastructures import Headers
from werkzeug.http import HTTP_STATUS_CODES, http_date
from werkzeug.http import parse_date as parse_http_date
from werkzeug.wrappers import Request, Response

from tests.fakes.github import auth
from tests.fakes.github.errors import (
    RATE_LIMIT_DOCS,
    SECONDARY_DOCS,
    ApiError,
    Unmodelled,
    bad_credentials,
    not_found,
)
from tests.fakes.github.faults import FaultRule
from tests.fakes.github.models import Token
from tests.fakes.github.requests_log import RequestRecord
from tests.fakes.github.routes_git import ROUTES as GIT_ROUTES
from tests.fakes.github.routes_issues import ROUTES as ISSUE_ROUTES
from tests.fakes.github.routes_meta import ROUTES as META_ROUTES
from tests.fakes.github.routes_pulls import ROUTES as PULL_ROUTES
from tests.fakes.github.routes_releases import ROUTES as RELEASE_ROUTES
from tests.fakes.github.routes_reviews import ROUTES as REVIEW_ROUTES
from tests.fakes.github.routes_users import ROUTES as USER_ROUTES
from tests.fakes.github.routing import Ctx, Reply, Route, Router
from tests.fakes.gitserver.wsgi import drop_connection as _drop_connection
from tests.fakes.gitserver.wsgi import raw_target
from tests.fakes.operations import github_operation

if TYPE_CHECKING:
    from collections.abc import Iterable

    from _typeshed.wsgi import StartResponse, WSGIEnvironment

    from tests.fakes.github.server import GitHubFake

API_VERSIONS = ("2022-11-28", "2026-03-10")
SECONDARY_MESSAGE = (
    "You have exceeded a secondary rate limit and have been temporarily blocked from "
    "content creation. Please retry your request again later. If you reach out to GitHub "
    "Support for help, please include the request ID {request_id}."
)
SIMPLE_ERRORS = {"PullRequestReview"}  # its 422 is validation-error-simple: string errors
#: Unauthenticated requests per hour and address (docs: "rate limits for the REST API").
ANONYMOUS_LIMIT = 60
ROUTER = Router(
    META_ROUTES
    + GIT_ROUTES
    + ISSUE_ROUTES
    + PULL_ROUTES
    + REVIEW_ROUTES
    + RELEASE_ROUTES
    + USER_ROUTES
)


@dataclass
class Meta:
    """What the log records about a request besides its status."""

    owner: str | None = None
    rate_key: str | None = None
    counts: bool = False  # the route spends primary quota
    counted: bool = False
    not_modified: bool = False
    content: bool = False
    secondary: bool = False
    primary: bool = False
    route: Route | None = None


def _etag(token: str, body: bytes) -> str:
    """Weak, and different for each token (as GitHub's)."""
    return 'W/"' + hashlib.sha256(token.encode() + b"\0" + body).hexdigest() + '"'


def _etag_matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    wanted = etag.removeprefix("W/")
    return any(
        part.strip() == "*" or part.strip().removeprefix("W/") == wanted
        for part in header.split(",")
    )


def _last_modified(body: Any) -> datetime | None:
    """When a single resource last changed (GitHub sends ``Last-Modified`` for those):
    its ``updated_at``, or a repository's ``pushed_at`` when later. Lists have none."""
    if not isinstance(body, dict):
        return None
    stamps = [body.get("updated_at"), body.get("pushed_at")]
    times = [parse_date(s) for s in stamps if isinstance(s, str)]
    return max(times, default=None)


def parse_date(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _not_modified(headers: Any, etag: str, modified: datetime | None) -> bool:
    """RFC 9110 13.2.2: ``If-None-Match`` decides when sent; else ``If-Modified-Since``
    (second precision, as HTTP dates are)."""
    if headers.get("If-None-Match"):
        return _etag_matches(headers.get("If-None-Match"), etag)
    since = parse_http_date(headers.get("If-Modified-Since") or "")
    if since is None or modified is None:
        return False
    return modified.replace(microsecond=0) <= since


def _request_id() -> str:
    return ":".join(secrets.token_hex(n).upper() for n in (2, 3, 4, 4, 4))


class ApiApp:
    def __init__(self, fake: GitHubFake, host: str) -> None:
        self.fake = fake
        self.host = host

    @property
    def base(self) -> str:
        """This host's base URL on 127.0.0.1: what the contract maps onto GitHub's."""
        return self.fake.api_url if self.host == "api" else self.fake.uploads_url

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        request = Request(environ)
        raw_path, raw_query = raw_target(environ)
        method = request.method.upper()
        urls = self.fake.urls_for(environ)  # the host names the client addressed
        url = (urls.api if self.host == "api" else urls.uploads) + raw_path
        query_part = f"?{raw_query}" if raw_query else ""
        full_url = self.base + raw_path + query_part
        query = parse_qsl(raw_query, keep_blank_values=True)
        arrived = self.fake.state.now()
        meta = Meta()
        request_id = _request_id()
        fault = self.fake.faults.pick(self.host, method, raw_path)
        if fault is not None and fault.kind == "latency":
            time.sleep(fault.seconds)
        if fault is not None and fault.kind == "error":
            reply = Reply(
                fault.status,
                {
                    "message": "Validation Failed"
                    if fault.status == 422
                    else HTTP_STATUS_CODES.get(fault.status, "Error"),
                    "documentation_url": "https://docs.github.com/rest",
                },
                dict(fault.answer_headers()),
            )
            ctx = None
        else:
            ctx = Ctx(
                state=self.fake.state,
                urls=urls,
                limiter=self.fake.limiter,
                request=request,
                url=url,
                params={},
                query=query,
                webhooks=self.fake.webhooks,
                layout=self.fake.layout,
            )
            reply = self._handle(ctx, method, raw_path, full_url, meta, request_id)
        response = self._respond(ctx, reply, method, meta, request_id)
        self._validate_response(method, full_url, response)
        if fault is not None and fault.kind == "commit_then_drop":
            if fault.drop == "close":
                self._log(arrived, method, raw_path, query, 0, meta, fault)
                _drop_connection(environ)
            response = self._respond(
                ctx, Reply(502, {"message": "Server Error"}), method, Meta(), request_id
            )
        if fault is not None and fault.kind == "timeout":
            time.sleep(fault.seconds)
        self._log(arrived, method, raw_path, query, response.status_code, meta, fault)
        return response(environ, start_response)

    # -- the request --------------------------------------------------------------------

    def _handle(
        self, ctx: Ctx, method: str, raw_path: str, full_url: str, meta: Meta, request_id: str
    ) -> Reply:
        request = ctx.request
        matched = ROUTER.match(self.host, method, raw_path)
        if matched is None:
            operation = github_operation(self.host, method, raw_path)
            if operation is not None:
                return self._unmodelled(Unmodelled(str(operation)), method, full_url)
        body = None if self.host == "uploads" else request.get_data(cache=True)
        check = self.fake.contract.check_request(method, full_url, request.headers, body)
        if check.problems and self.fake.validate_requests:
            violation = self.fake.contract.violation(method, full_url, "request", check.problems)
            self.fake.request_violations.append(violation)
        try:
            with self.fake.state.lock:
                if matched is None:
                    raise not_found()
                route, ctx.params = matched
                meta.counts, meta.route = route.counts, route
                version = request.headers.get("X-GitHub-Api-Version")
                if version is not None and version not in API_VERSIONS:
                    raise ApiError(400, f"API version '{version}' is not supported.")
                self._authenticate(ctx, route, meta)
                if route.counts and meta.rate_key and self.fake.limiter.exhausted(meta.rate_key):
                    meta.primary = True
                    raise self._primary_exceeded(ctx)
                if "owner" in ctx.params and "repo" in ctx.params:
                    self._resolve_repo(ctx, route, raw_path, full_url)
                self._reject_invalid_body(ctx, route, method, full_url, check.body_errors)
                if route.content and meta.rate_key:
                    self._secondary(meta, request_id)
                return route.handler(ctx)
        except Unmodelled as error:
            return self._unmodelled(error, method, full_url)
        except ApiError as error:
            if error.documentation_url is None:  # the operation's page, as GitHub links it
                error.documentation_url = self.fake.contract.documentation_url(method, full_url)
            return Reply(error.status, error.body(), error.headers)
        except Exception:
            self.fake.server_errors.append(traceback.format_exc())
            return Reply(500, {"message": "Server Error"})

    def _unmodelled(self, error: Unmodelled, method: str, full_url: str) -> Reply:
        """501 naming what is not modelled, never a 404 that reads as a missing resource;
        the fake records it so that the test that sent it fails (``assert_clean``)."""
        self.fake.unmodelled.append(f"{method} {full_url}: {error.message}")
        return Reply(error.status, error.body(), error.headers)

    def _authenticate(self, ctx: Ctx, route: Route, meta: Meta) -> None:
        credential = auth.credential_from(ctx.request.headers.get("Authorization"))
        if route.auth == "jwt":
            if credential is None:
                raise ApiError(401, "Requires authentication")
            if not auth.looks_like_jwt(credential):
                raise ApiError(401, auth.UNDECODABLE)
            ctx.app = auth.verify_app_jwt(self.fake.state, credential)
            meta.owner, meta.rate_key = ctx.app.slug, f"app:{ctx.app.id}"
            return
        if credential is None and route.auth in ("repo", "public") and not route.write:
            # Anonymous: public repositories are readable, on a quota of 60 an hour per
            # address (a private one answers 404 in ``_resolve_repo``).
            meta.rate_key = f"ip:{ctx.request.remote_addr or '127.0.0.1'}"
            if meta.rate_key not in self.fake.limiter.limits_by_key:
                self.fake.limiter.set_limit(meta.rate_key, ANONYMOUS_LIMIT)
            return
        if credential is None:
            raise ApiError(401, "Requires authentication")
        if not credential:
            raise bad_credentials()
        ctx.token = auth.resolve_token(self.fake.state, credential)
        meta.owner, meta.rate_key = ctx.token.user.login, ctx.token.rate_key

    def _primary_exceeded(self, ctx: Ctx) -> ApiError:
        token = ctx.token
        if token is not None and token.installation is not None:
            who = f"installation ID {token.installation.id}"
        elif token is not None:
            who = f"user ID {token.user.id}"
        elif ctx.app is None:
            who = (
                f"{ctx.request.remote_addr}. (But here's the good news: Authenticated "
                "requests get a higher rate limit. Check out the documentation for more "
                "details.)"
            )
            return ApiError(
                403, f"API rate limit exceeded for {who}", documentation_url=RATE_LIMIT_DOCS
            )
        else:
            who = "this app"
        return ApiError(
            403, f"API rate limit exceeded for {who}.", documentation_url=RATE_LIMIT_DOCS
        )

    def _resolve_repo(self, ctx: Ctx, route: Route, raw_path: str, full_url: str) -> None:
        owner, name = ctx.params["owner"], ctx.params["repo"]
        repo, moved = self.fake.state.find_repo(owner, name)
        if repo is None or (ctx.token is None and repo.private):
            raise not_found()
        if ctx.token is not None:
            auth.check_repo_access(self.fake.state, ctx.token, repo, route.permissions, route.write)
        if moved:
            prefix = f"/repos/{owner}/{name}"
            here = ctx.url + (f"?{ctx.request.query_string.decode()}" if ctx.query else "")
            target = here.replace(prefix, f"/repos/{repo.owner.login}/{repo.name}", 1)
            status = 301 if ctx.request.method in ("GET", "HEAD") else 307
            error = ApiError(
                status,
                "Moved Permanently",
                documentation_url="https://docs.github.com/rest/guides/best-practices-for-using-the-rest-api#follow-redirects",
                headers={"location": target},
            )
            raise error
        ctx.repo = repo

    def _reject_invalid_body(
        self, ctx: Ctx, route: Route, method: str, full_url: str, errors: list[Any]
    ) -> None:
        """GitHub checks bodies against the same JSON schemas: 422 "Invalid request."."""
        if self.host == "uploads" or method not in ("POST", "PATCH", "PUT"):
            return
        if not ctx.request.get_data(cache=True).strip():
            errors = self.fake.contract.check_request(
                method, full_url, {"content-type": "application/json"}, b"{}"
            ).body_errors
        if not errors:
            return
        message = "Invalid request.\n\n" + "\n".join(e.message for e in errors)
        if route.resource in SIMPLE_ERRORS:
            raise ApiError(422, message, errors=[e.message for e in errors])
        resource = route.resource or "Resource"
        raise ApiError(
            422,
            message,
            errors=[{"resource": resource, "field": e.field, "code": e.code} for e in errors],
        )

    def _secondary(self, meta: Meta, request_id: str) -> None:
        limiter = self.fake.limiter
        assert meta.rate_key is not None
        retry_after = limiter.secondary_retry_after(meta.rate_key)
        if retry_after is not None:
            meta.secondary = True
            raise ApiError(
                limiter.secondary.status,
                SECONDARY_MESSAGE.format(request_id=request_id),
                documentation_url=SECONDARY_DOCS,
                headers={"retry-after": str(retry_after)},
            )
        limiter.record_creation(meta.rate_key)
        meta.content = True

    # -- the response -------------------------------------------------------------------

    def _respond(
        self, ctx: Ctx | None, reply: Reply, method: str, meta: Meta, request_id: str
    ) -> Response:
        headers = Headers()
        body = b""
        if reply.raw is not None:  # bytes as they are (an asset streamed by the API)
            body = reply.raw
        elif reply.body is not None:
            body = json.dumps(reply.body, separators=(",", ":")).encode()
            headers["content-type"] = "application/json; charset=utf-8"
        status = reply.status
        token = ctx.token if ctx is not None else None
        if method == "GET" and status == 200 and ctx is not None:
            etag = _etag(token.value if token is not None else "", body)
            headers["etag"] = etag
            visibility = "private" if token is not None else "public"
            headers["cache-control"] = f"{visibility}, max-age=60, s-maxage=60"
            modified = _last_modified(reply.body)
            if modified is not None:
                headers["last-modified"] = http_date(modified)
            if _not_modified(ctx.request.headers, etag, modified):
                status, body = 304, b""
                headers.pop("content-type", None)
                meta.not_modified = True
        limiter = self.fake.limiter
        if meta.rate_key and meta.counts and not meta.primary and not meta.not_modified:
            limiter.spend(meta.rate_key)
            meta.counted = True
        if meta.rate_key:
            headers.extend(limiter.snapshot(meta.rate_key).headers())
        else:
            reset = int(self.fake.state.now().timestamp()) + 3600
            headers.extend(
                {
                    "x-ratelimit-limit": "60",
                    "x-ratelimit-remaining": "60",
                    "x-ratelimit-used": "0",
                    "x-ratelimit-reset": str(reset),
                    "x-ratelimit-resource": "core",
                }
            )
        headers["vary"] = "Accept, Authorization, Cookie, X-GitHub-OTP"
        headers["x-github-media-type"] = "github.v3; format=json"
        version = ctx.request.headers.get("X-GitHub-Api-Version") if ctx else None
        headers["x-github-api-version-selected"] = (
            version if version in API_VERSIONS else API_VERSIONS[0]
        )
        headers["x-github-request-id"] = request_id
        if token is not None:
            headers.extend(_credential_headers(token, meta.route))
        for key, value in reply.headers.items():
            headers[key] = value
        response = Response(body, status=status, headers=headers)
        if not body:
            response.headers.pop("content-type", None)
        return response

    def _validate_response(self, method: str, full_url: str, response: Response) -> None:
        if response.status_code == 304 or not self.fake.validate_responses:
            return
        if not self.fake.contract.describes(method, full_url):
            return  # already a request violation; nothing describes the answer
        problems = self.fake.contract.response_problems(
            method, full_url, response.status_code, response.headers, response.get_data()
        )
        if problems:
            what = f"response {response.status_code}"
            violation = self.fake.contract.violation(method, full_url, what, problems)
            self.fake.violations.append(violation)

    def _log(
        self,
        arrived: Any,
        method: str,
        raw_path: str,
        query: list[tuple[str, str]],
        status: int,
        meta: Meta,
        fault: FaultRule | None,
    ) -> None:
        self.fake.requests_log.add(
            RequestRecord(
                at=arrived,
                host=self.host,
                method=method,
                path=raw_path,
                query=dict(query),
                status=status,
                token_owner=meta.owner,
                counted_primary=meta.counted,
                not_modified=meta.not_modified,
                content_creating=meta.content,
                secondary_limited=meta.secondary,
                primary_limited=meta.primary,
                fault=fault.kind if fault is not None else None,
                quota=meta.rate_key,
            )
        )


def _credential_headers(token: Token, route: Route | None) -> dict[str, str]:
    """What GitHub tells a token about itself and about the operation it called."""
    if token.scopes is not None:
        return {
            "x-oauth-scopes": ", ".join(token.scopes),
            "x-accepted-oauth-scopes": ", ".join(route.accepted_scopes) if route else "",
        }
    if route is None or route.auth != "repo":
        return {}
    level = "write" if route.write else "read"
    return {"x-accepted-github-permissions": "; ".join(f"{p}={level}" for p in route.permissions)}
