"""Who is asking: ``Authorization: Bearer <token>`` resolved through the service layer.

The rules, checked here and in the service layer:

- every endpoint except ``/health`` and the OpenAPI document needs a valid token (401);
- reads show what ``service.queries.visible`` lets the user see: admins everything, members
  the Bindings one of whose repositories they were granted, and those Bindings' Runs; a
  record the user cannot see answers 404, exactly like one that does not exist;
- Binding administration (create, change, delete, handoff) needs the admin role (403);
- Run operations (create, cancel, retry, recover) need the admin role or a grant on the
  Binding (a member without one cannot see the Binding: 404);
- refused tokens are counted per client (``client_address``): beyond the limit every
  attempt from that client is 429 ``too_many_attempts`` with ``Retry-After``
  (``service.users``' throttle; the web page's sign-in and session cookie count too).
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Callable
from typing import Any, TypeVar, cast

from flask import current_app, g, request

from reposync.models import User
from reposync.service.accounts.authorization import require_admin
from reposync.service.accounts.users import authenticate
from reposync.service.context import ServiceContext

SCHEME = "bearer"


def service_context() -> ServiceContext:
    ctx: ServiceContext = current_app.extensions["reposync.ctx"]
    return ctx


def _bearer_token() -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != SCHEME:
        return None
    return token.strip() or None


def client_address() -> str:
    """Whom the throttle counts for this request: the remote address as the app sees it,
    which behind ``REPOSYNC_PROXY_HOPS`` proxies is the client they forwarded
    (``web/app.py`` applies ProxyFix). An IPv6 client counts by its /64: one host commonly
    holds the whole prefix, and would otherwise get a fresh budget per address."""
    address = request.remote_addr or ""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address[:64] or "unknown"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


#: The one endpoint a stream token opens, and where it may come in the URL.
STREAM_ENDPOINT = "events.RunEventsView"
STREAM_TOKEN_PARAMETER = "access_token"


def load_user() -> None:
    """``before_request`` of every protected blueprint: 401 without a valid token.

    A Run's event stream also takes a stream token of that Run in ``?access_token=``: a
    browser's EventSource cannot send an Authorization header.
    """
    run_id = None
    if request.endpoint == STREAM_ENDPOINT and request.view_args:
        run_id = request.view_args.get("run_id")
    token = _bearer_token()
    if token is None and run_id is not None:
        token = request.args.get(STREAM_TOKEN_PARAMETER) or None
    g.user = authenticate(service_context(), token, run_id=run_id, client=client_address())


def current_user() -> User:
    user: User = g.user
    return user


F = TypeVar("F", bound=Callable[..., Any])


def admin_only(view: F) -> F:
    """403 unless the current user is an admin, before the request body is even parsed.

    Put it above ``@blueprint.arguments`` so a member learns nothing from validation.
    """

    @functools.wraps(view)
    def check_role(*args: Any, **kwargs: Any) -> Any:
        require_admin(current_user())
        return view(*args, **kwargs)

    return cast(F, check_role)
