"""Issue 23 #7: refused API tokens are throttled per client, bearer tokens, the page's
sign-in form and its session cookie alike (one count per client, kept in the database
every API process shares); sign-in sessions are bounded per user and removed once expired.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select, update

from reposync.models import ApiToken, AuthFailure, utcnow
from reposync.service.accounts.users import (
    MAX_SESSIONS_PER_USER,
    create_user,
    hash_token,
    issue_session_token,
    issue_stream_token,
    issue_token,
    purge_expired,
)
from reposync.service.context import ServiceContext
from reposync.web.app import create_app
from reposync.web.pages import session as page_session
from tests.integration.web.conftest import assert_problem, bearer, url
from tests.integration.web.pages.test_pages import csrf_of, set_cookie_header, sign_in

LIMIT = 3


@pytest.fixture
def settings(settings):
    """The web tests' settings with a small throttle."""
    return settings.with_overrides(auth_failure_limit=LIMIT, auth_failure_window=600.0)


def from_address(app: Flask, address: str) -> FlaskClient:
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = address
    return client


def overview(client: FlaskClient, token: str, **headers: str):
    return client.get(url("/overview"), headers={**bearer(token), **headers})


def test_refused_tokens_beyond_the_limit_refuse_everything_from_that_client(app, tokens):
    """LIMIT refusals are 401; then every attempt from that client is 429 with
    Retry-After, its valid token too (a guesser must not learn a hit); another client is
    not affected."""
    guesser, neighbour = from_address(app, "198.51.100.7"), from_address(app, "198.51.100.8")
    for n in range(LIMIT):
        assert_problem(overview(guesser, f"rs_guess_{n}"), 401, "unauthenticated")
    refused = overview(guesser, "rs_guess_again")
    body = assert_problem(refused, 429, "too_many_attempts")
    assert 0 < int(refused.headers["Retry-After"]) <= 600
    assert body["retry_after"] == int(refused.headers["Retry-After"])
    assert "REPOSYNC_PROXY_HOPS" in body["suggested_action"]
    assert_problem(overview(guesser, tokens.admin), 429, "too_many_attempts")
    assert overview(neighbour, tokens.admin).status_code == 200
    assert_problem(overview(neighbour, "rs_guess"), 401, "unauthenticated")


def test_requests_without_a_token_and_valid_tokens_count_nothing(app, tokens, ctx):
    """No token is no guess, a valid token no refusal: neither moves the count."""
    client = from_address(app, "198.51.100.9")
    for _ in range(LIMIT + 2):
        assert_problem(client.get(url("/overview")), 401, "unauthenticated")
        assert overview(client, tokens.member).status_code == 200
    with ctx.db.session() as session:
        assert session.execute(select(AuthFailure)).first() is None


def test_the_client_gets_in_again_once_its_window_ends(app, tokens, ctx):
    """After the window a valid token answers again, and the count starts over."""
    client = from_address(app, "198.51.100.10")
    for n in range(LIMIT + 1):
        overview(client, f"rs_guess_{n}")
    assert_problem(overview(client, tokens.admin), 429, "too_many_attempts")
    with ctx.db.transaction() as session:
        session.execute(update(AuthFailure).values(window_ends_at=utcnow() - timedelta(seconds=1)))
    assert overview(client, tokens.admin).status_code == 200
    for n in range(LIMIT):
        assert_problem(overview(client, f"rs_late_{n}"), 401, "unauthenticated")
    assert_problem(overview(client, "rs_one_more"), 429, "too_many_attempts")


def test_ipv6_clients_count_by_their_64_prefix(app, tokens):
    """Addresses of one /64 (one host can hold them all) share a count; the next /64 not."""
    for n in range(LIMIT):
        overview(from_address(app, f"2001:db8:1:2::{n + 1}"), "rs_guess")
    same_prefix = from_address(app, "2001:db8:1:2:ffff::9")
    assert_problem(overview(same_prefix, tokens.admin), 429, "too_many_attempts")
    assert overview(from_address(app, "2001:db8:1:3::1"), tokens.admin).status_code == 200


def test_forwarded_addresses_count_only_behind_declared_proxies(ctx, tokens):
    """Without REPOSYNC_PROXY_HOPS a client's own X-Forwarded-For changes nothing (no
    fresh budget per forged header); with one proxy declared, the forwarded client is
    counted, not the proxy every client shares."""
    direct = create_app(ctx.settings, ctx=ctx)
    client = from_address(direct, "203.0.113.5")
    for n in range(LIMIT + 1):
        overview(client, "rs_guess", **{"X-Forwarded-For": f"192.0.2.{n}"})
    assert_problem(
        overview(client, tokens.admin, **{"X-Forwarded-For": "192.0.2.200"}),
        429,
        "too_many_attempts",
    )

    proxied_settings = ctx.settings.with_overrides(proxy_hops=1)
    proxied = create_app(proxied_settings, ctx=ServiceContext(proxied_settings, ctx.db))
    proxy = from_address(proxied, "10.0.0.1")
    for _ in range(LIMIT + 1):
        overview(proxy, "rs_guess", **{"X-Forwarded-For": "192.0.2.66"})
    blocked = overview(proxy, tokens.admin, **{"X-Forwarded-For": "192.0.2.66"})
    assert_problem(blocked, 429, "too_many_attempts")
    assert overview(proxy, tokens.admin, **{"X-Forwarded-For": "192.0.2.67"}).status_code == 200
    secure = proxy.get("/signin", headers={"X-Forwarded-Proto": "https"})
    assert "Secure" in set_cookie_header(secure, page_session.SIGNIN_COOKIE)


def test_the_sign_in_form_and_session_cookies_share_the_count(app, tokens):
    """Refused sign-ins and a refused session cookie count with bearer tokens; the stale
    cookie is cleared (it counts once); then the form answers 429 with Retry-After, a
    valid token included."""
    browser = from_address(app, "198.51.100.20")
    overview(browser, "rs_guess")  # a bearer token
    form = browser.get("/signin")
    refused = browser.post(
        "/signin", data={"token": "rs_nope", "csrf": csrf_of(form.get_data(as_text=True))}
    )
    assert refused.status_code == 401
    browser.set_cookie(page_session.SESSION_COOKIE, "rs_an_ended_session")
    back = browser.get("/")
    assert back.status_code == 302
    assert "reposync_session=;" in set_cookie_header(back, page_session.SESSION_COOKIE)
    assert browser.get("/").status_code == 302  # no cookie now: not counted again

    form = browser.get("/signin")
    throttled = browser.post(
        "/signin", data={"token": tokens.admin, "csrf": csrf_of(form.get_data(as_text=True))}
    )
    assert throttled.status_code == 429
    assert throttled.headers["Retry-After"].isdigit()
    assert "too many refused API tokens" in throttled.get_data(as_text=True)
    assert browser.get_cookie(page_session.SESSION_COOKIE) is None


def test_a_throttled_client_with_a_session_gets_the_429_page(app, tokens):
    """A signed-in browser whose address is throttled sees 429 pages until the window
    ends (its cookie is a token like any other)."""
    browser = from_address(app, "198.51.100.30")
    sign_in(browser, tokens.admin)
    for n in range(LIMIT + 1):
        overview(browser, f"rs_guess_{n}")
    page = browser.get("/")
    assert page.status_code == 429
    assert page.headers["Retry-After"].isdigit()
    assert "too_many_attempts" in page.get_data(as_text=True)


def _sessions(ctx: ServiceContext, user_id: int) -> list[ApiToken]:
    with ctx.db.session() as session:
        return list(
            session.execute(
                select(ApiToken).where(ApiToken.user_id == user_id).order_by(ApiToken.id)
            ).scalars()
        )


def test_a_user_holds_a_bounded_number_of_sessions(app, ctx, tokens):
    """Signing in once more than the bound revokes the oldest session, whose browser is
    then signed out; the newer ones and the user's API tokens stay."""
    user = create_user(ctx, "tim", role="admin")
    token = issue_token(ctx, user.id, "ci")
    browsers = []
    for n in range(MAX_SESSIONS_PER_USER + 2):
        browser = from_address(app, f"192.0.2.{n + 1}")
        sign_in(browser, token)
        browsers.append(browser)
    rows = _sessions(ctx, user.id)
    sessions = [t for t in rows if t.kind == "session"]
    assert len(sessions) == MAX_SESSIONS_PER_USER + 2
    assert [t.revoked_at is not None for t in sessions] == [True, True] + [False] * (
        MAX_SESSIONS_PER_USER
    )
    assert [t.revoked_at for t in rows if t.kind == "api"] == [None]
    assert browsers[0].get("/").status_code == 302  # signed out
    assert browsers[1].get("/").status_code == 302
    assert browsers[2].get("/").status_code == 200
    assert browsers[-1].get("/").status_code == 200


def test_expired_sessions_stream_tokens_and_ended_windows_are_purged(ctx, tokens, queued_run):
    """The tick's purge removes expired sessions and stream tokens, revoked or not, and
    throttle windows that ended; live ones and API tokens (even expired) stay listed."""
    user = create_user(ctx, "pat", role="admin")
    live_session = issue_session_token(ctx, user.id, "web page session", days=1)
    issue_session_token(ctx, user.id, "web page session", days=1)
    issue_stream_token(ctx, user, queued_run.id)
    issue_token(ctx, user.id, "old api token", days=1)
    now = utcnow()
    with ctx.db.transaction() as session:
        session.execute(
            update(ApiToken)
            .where(ApiToken.user_id == user.id, ApiToken.token_hash != hash_token(live_session))
            .values(expires_at=now - timedelta(seconds=1))
        )
        session.add_all(
            [
                AuthFailure(client="192.0.2.1", failures=9, window_ends_at=now),
                AuthFailure(client="192.0.2.2", failures=1, window_ends_at=now + timedelta(1)),
            ]
        )
    assert purge_expired(ctx, now) == (2, 1)
    left = _sessions(ctx, user.id)
    assert sorted((t.kind, t.name) for t in left) == [
        ("api", "old api token"),
        ("session", "web page session"),
    ]
    with ctx.db.session() as session:
        assert session.execute(select(AuthFailure.client)).scalars().all() == ["192.0.2.2"]
    assert purge_expired(ctx, now) == (0, 0)
