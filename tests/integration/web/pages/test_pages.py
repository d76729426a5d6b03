"""The web management page with Flask's test client: sign-in, cookies, CSRF, what each
user sees. The browser drives it for real in ``test_pages_browser.py``."""

from __future__ import annotations

import re

import pytest
from flask.testing import FlaskClient
from sqlalchemy import func, select, update

from reposync.models import Binding, Run
from reposync.service.context import ServiceContext
from tests.integration.web.conftest import bearer, url

CSRF = re.compile(r'name="csrf" value="([0-9a-f]{64})"')


def csrf_of(html: str) -> str:
    found = CSRF.search(html)
    assert found, "the page has a form without a CSRF token"
    return found.group(1)


def sign_in(client: FlaskClient, token: str, *, base_url: str | None = None) -> None:
    extra = {"base_url": base_url} if base_url else {}
    form = client.get("/signin", **extra)
    response = client.post(
        "/signin",
        data={"token": token, "csrf": csrf_of(form.get_data(as_text=True)), "next": "/"},
        **extra,
    )
    assert response.status_code == 302, response.get_data(as_text=True)


def set_cookie_header(response, name: str) -> str:
    [header] = [h for h in response.headers.getlist("Set-Cookie") if h.startswith(name + "=")]
    return header


def runs_of(ctx: ServiceContext, binding_id: int) -> int:
    with ctx.db.session() as session:
        return session.execute(
            select(func.count()).select_from(Run).where(Run.binding_id == binding_id)
        ).scalar_one()


def test_the_root_answers_with_the_page_after_sign_in(client, tokens, binding):
    """`/` sends a stranger to the sign-in form, and shows the Overview once signed in."""
    response = client.get("/")
    assert response.status_code == 302
    assert response.headers["Location"].startswith("/signin?next=/")
    sign_in(client, tokens.admin)
    page = client.get("/").get_data(as_text=True)
    assert f'id="binding-{binding.id}"' in page
    assert binding.a_locator in page


def test_the_session_cookie_is_httponly_strict_and_secure_over_https(client, tokens):
    form = client.get("/signin")
    nonce = set_cookie_header(form, "reposync_signin")
    assert "HttpOnly" in nonce
    assert "SameSite=Strict" in nonce
    response = client.post(
        "/signin", data={"token": tokens.admin, "csrf": csrf_of(form.get_data(as_text=True))}
    )
    cookie = set_cookie_header(response, "reposync_session")
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    assert "Secure" not in cookie  # plain HTTP: a Secure cookie would never come back
    assert tokens.admin not in cookie  # the API token typed in is never the session

    https = client.application.test_client()
    form = https.get("/signin", base_url="https://reposync.example")
    response = https.post(
        "/signin",
        data={"token": tokens.admin, "csrf": csrf_of(form.get_data(as_text=True))},
        base_url="https://reposync.example",
    )
    assert "Secure" in set_cookie_header(response, "reposync_session")


def test_the_secure_setting_marks_the_cookie_behind_a_proxy(app, tokens):
    """Behind a TLS-terminating proxy the app sees HTTP: the setting says otherwise."""
    settings = app.extensions["reposync.settings"]
    app.extensions["reposync.settings"] = settings.with_overrides(web_secure_cookie=True)
    client = app.test_client()
    form = client.get("/signin")
    response = client.post(
        "/signin", data={"token": tokens.admin, "csrf": csrf_of(form.get_data(as_text=True))}
    )
    assert "Secure" in set_cookie_header(response, "reposync_session")


def test_sign_in_refuses_a_bad_token_and_a_missing_csrf(client, tokens):
    form = client.get("/signin")
    refused = client.post(
        "/signin", data={"token": "rs_nope", "csrf": csrf_of(form.get_data(as_text=True))}
    )
    assert refused.status_code == 401
    assert "not valid" in refused.get_data(as_text=True)
    assert client.get_cookie("reposync_session") is None
    forged = client.post("/signin", data={"token": tokens.admin})
    assert forged.status_code == 400
    assert client.get_cookie("reposync_session") is None


def test_a_post_without_the_sessions_csrf_token_changes_nothing(app, ctx, client, tokens, binding):
    """No token, or another session's token: 400 and no Run; the page's own: a Run."""
    sign_in(client, tokens.admin)
    action = f"/bindings/{binding.id}/runs"
    assert client.post(action, data={"action": "sync"}).status_code == 400
    other = app.test_client()
    sign_in(other, tokens.admin)
    foreign = csrf_of(other.get("/").get_data(as_text=True))
    assert client.post(action, data={"action": "sync", "csrf": foreign}).status_code == 400
    assert runs_of(ctx, binding.id) == 0

    own = csrf_of(client.get("/").get_data(as_text=True))
    response = client.post(action, data={"action": "dry_run", "csrf": own})
    assert response.status_code == 302
    assert re.fullmatch(r"/runs/\d+", response.headers["Location"])
    assert runs_of(ctx, binding.id) == 1


def test_sign_out_ends_the_session_on_the_server(app, client, tokens):
    """The old cookie is worthless after sign-out, even replayed by another client."""
    sign_in(client, tokens.admin)
    secret = client.get_cookie("reposync_session").value
    token = csrf_of(client.get("/").get_data(as_text=True))
    assert client.post("/signout", data={"csrf": token}).status_code == 302
    replay = app.test_client()
    replay.set_cookie("reposync_session", secret)
    assert replay.get("/").status_code == 302  # to the sign-in form
    assert "/signin" in replay.get("/").headers["Location"]


def test_a_member_sees_only_what_the_api_shows_them(client, tokens, binding, finished_run):
    """The granted member sees the Binding and its Run; a member without a grant sees
    neither on any page, and their ids answer 404 exactly like missing ones."""
    sign_in(client, tokens.member)
    assert f'id="binding-{binding.id}"' in client.get("/").get_data(as_text=True)
    assert client.get(f"/runs/{finished_run.id}").status_code == 200

    stranger = client.application.test_client()
    sign_in(stranger, tokens.stranger)
    overview = stranger.get("/").get_data(as_text=True)
    assert 'id="no-bindings"' in overview
    assert binding.a_locator not in overview
    assert stranger.get(f"/bindings/{binding.id}").status_code == 404
    assert stranger.get(f"/runs/{finished_run.id}").status_code == 404
    assert stranger.get("/bindings/999999").status_code == 404
    assert f'data-run="{finished_run.id}"' not in stranger.get("/activity").get_data(as_text=True)
    token = csrf_of(overview)
    refused = stranger.post(f"/runs/{finished_run.id}/retry", data={"csrf": token})
    assert refused.status_code == 404
    api = client.get(url("/overview"), headers=bearer(tokens.stranger)).json
    assert api == {"bindings": [], "next_after_id": None}  # what the API shows them, too


def test_a_member_cannot_change_settings_or_create(client, ctx, tokens, binding):
    sign_in(client, tokens.member)
    token = csrf_of(client.get(f"/bindings/{binding.id}").get_data(as_text=True))
    changed = client.post(
        f"/bindings/{binding.id}/settings", data={"csrf": token, "schedule_cron": "0 * * * *"}
    )
    assert changed.status_code == 403
    assert "admin role" in changed.get_data(as_text=True)
    created = client.post("/bindings", data={"csrf": token, "source": "x", "target": "y"})
    assert created.status_code == 403


def test_the_binding_page_says_why_sync_cannot_be_enabled_and_saves_settings(
    client, tokens, binding
):
    """No full apply yet: the reason is on the page, and switching sync on is refused
    with it; the schedule and policy are saved."""
    sign_in(client, tokens.admin)
    page = client.get(f"/bindings/{binding.id}").get_data(as_text=True)
    assert "Sync cannot be enabled now" in page
    assert "no successful full apply" in page
    token = csrf_of(page)
    form = {
        "csrf": token,
        "schedule_cron": "*/30 * * * *",
        "ref_conflict_policy": "use_source",
        "full_audit_interval": "7200",
    }
    assert client.post(f"/bindings/{binding.id}/settings", data=form).status_code == 302
    saved = client.get(f"/bindings/{binding.id}").get_data(as_text=True)
    assert 'value="*/30 * * * *"' in saved
    assert "<option selected>use_source</option>" in saved
    assert 'value="7200"' in saved
    refused = client.post(f"/bindings/{binding.id}/settings", data={**form, "sync_enabled": "1"})
    assert refused.status_code == 409
    assert "full apply" in refused.get_data(as_text=True)


def test_after_a_full_apply_sync_can_be_enabled(client, tokens, binding, finished_run):
    sign_in(client, tokens.admin)
    page = client.get(f"/bindings/{binding.id}").get_data(as_text=True)
    assert "Sync can be enabled." in page
    form = {"csrf": csrf_of(page), "sync_enabled": "1"}
    assert client.post(f"/bindings/{binding.id}/settings", data=form).status_code == 302
    assert 'name="sync_enabled" value="1" checked' in client.get(
        f"/bindings/{binding.id}"
    ).get_data(as_text=True)


def test_the_run_page_shows_stages_progress_events_and_items(client, tokens, finished_run):
    sign_in(client, tokens.admin)
    page = client.get(f"/runs/{finished_run.id}").get_data(as_text=True)
    assert 'id="run-status" class="status s-completed">completed<' in page
    assert '<li class="current" data-stage="completed">' in page
    assert '<tr data-type="git_ref">' in page
    for state in ("planned", "applying", "verifying", "completed", "failed", "superseded"):
        assert f"<th>{state}</th>" in page  # every item state is a column
    assert 'id="retry"' not in page  # a completed Run has nothing to retry
    assert 'id="cancel"' not in page
    assert "run_created" in page  # its events
    filtered = client.get(f"/runs/{finished_run.id}?state=failed").get_data(as_text=True)
    assert "No items." in filtered


@pytest.mark.parametrize(
    ("status", "error_code", "offered"),
    [
        ("failed", "git_transport_error", True),
        ("cancelled", None, True),
        ("blocked", "result_unknown", False),  # Recover settles it, not a retry
        ("completed_with_pending_changes", None, False),  # a follow-up Run comes by itself
    ],
)
def test_retry_is_offered_where_running_again_helps(
    ctx, client, tokens, finished_run, status, error_code, offered
):
    """Retry follows how the Run ended: offered after a failure or a cancel, not after
    unknown writes or a completed Run."""
    with ctx.db.transaction() as session:
        session.execute(
            update(Run)
            .where(Run.id == finished_run.id)
            .values(status=status, error_code=error_code, error_message="it stopped")
        )
    sign_in(client, tokens.admin)
    page = client.get(f"/runs/{finished_run.id}").get_data(as_text=True)
    assert ('id="retry"' in page) is offered


def test_the_stream_endpoint_opens_the_apis_event_stream(client, tokens, finished_run):
    """The page's EventSource gets a stream token of this Run; the API's stream answers."""
    sign_in(client, tokens.member)
    token = csrf_of(client.get(f"/runs/{finished_run.id}").get_data(as_text=True))
    assert client.post(f"/runs/{finished_run.id}/stream").status_code == 400  # no CSRF
    body = client.post(
        f"/runs/{finished_run.id}/stream", headers={"X-CSRF-Token": token}
    ).get_json()
    client.delete_cookie("reposync_session")  # the stream needs no session
    stream = client.get(body["url"], headers={"Accept": "text/event-stream"})
    assert stream.status_code == 200
    text = stream.get_data(as_text=True)
    assert "event: end" in text
    assert '"status":"completed"' in text


def test_activity_filters_and_pages(client, ctx, tokens, binding, finished_run):
    from reposync.service.runs import create_run

    queued = create_run(ctx, binding.id)
    sign_in(client, tokens.admin)
    everything = client.get("/activity").get_data(as_text=True)
    assert f'data-run="{queued.id}"' in everything
    assert f'data-run="{finished_run.id}"' in everything
    completed = client.get("/activity?status=completed").get_data(as_text=True)
    assert f'data-run="{queued.id}"' not in completed
    assert f'data-run="{finished_run.id}"' in completed
    older = client.get(f"/activity?after_id={queued.id}").get_data(as_text=True)
    assert f'data-run="{queued.id}"' not in older
    assert f'data-run="{finished_run.id}"' in older


@pytest.mark.parametrize("path", ["/ui/static/run.js", "/ui/static/pages.css"])
def test_assets_are_served_by_reposync(client, path):
    assert client.get(path).status_code == 200


def test_no_page_loads_anything_from_another_host(client, tokens, finished_run):
    """Offline machines: every script, style and image comes from reposync itself
    (the API's Swagger UI included)."""
    sign_in(client, tokens.admin)
    for path in ("/", f"/runs/{finished_run.id}", "/activity", url("/docs"), "/signin"):
        html = client.get(path).get_data(as_text=True)
        for attribute in re.findall(r'(?:src|href)="([^"]+)"', html):
            assert not re.match(r"(https?:)?//", attribute), (path, attribute)


@pytest.mark.parametrize(
    ("action", "mode", "audit_mode"),
    [
        ("sync", "apply", "checkpoint"),
        ("dry_run", "dry_run", "checkpoint"),
        ("full_audit", "apply", "full"),
    ],
)
def test_the_binding_pages_actions_queue_the_run_they_name(
    ctx, client, tokens, binding, action, mode, audit_mode
):
    """Sync now, dry-run and full audit: a member with a grant may; the Run's page next."""
    sign_in(client, tokens.member)
    token = csrf_of(client.get(f"/bindings/{binding.id}").get_data(as_text=True))
    response = client.post(f"/bindings/{binding.id}/runs", data={"action": action, "csrf": token})
    assert response.status_code == 302
    run_id = int(response.headers["Location"].rsplit("/", 1)[1])
    with ctx.db.session() as session:
        run = session.get(Run, run_id)
        assert (run.mode, run.audit_mode, run.binding_id) == (mode, audit_mode, binding.id)
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert 'id="cancel"' in page  # queued: it may be cancelled
    busy = client.post(f"/bindings/{binding.id}/runs", data={"action": action, "csrf": token})
    assert busy.status_code == 409  # one active Run per Binding: the problem, as a page
    assert "already has an active run" in busy.get_data(as_text=True)


def test_a_handoff_run_page_shows_its_reverse_dry_run(ctx, client, tokens, binding, finished_run):
    """The page queues the handoff; once it ran (here in-process, as the handoff task
    runs it), its page says whether it switched and links the reverse dry-run."""
    from reposync.service.handoff import handoff

    sign_in(client, tokens.admin)
    token = csrf_of(client.get(f"/bindings/{binding.id}").get_data(as_text=True))
    response = client.post(f"/bindings/{binding.id}/handoff", data={"csrf": token})
    assert response.status_code == 302
    forward_id = int(response.headers["Location"].rsplit("/", 1)[1])
    outcome = handoff(ctx, binding.id, forward_run_id=forward_id)
    assert outcome.switched, outcome
    page = client.get(f"/runs/{forward_id}").get_data(as_text=True)
    assert "Switched: switched" in page
    assert (
        f'href="/runs/{outcome.reverse_run_id}">Run {outcome.reverse_run_id}</a> completed' in page
    )
    reverse = client.get(f"/runs/{outcome.reverse_run_id}").get_data(as_text=True)
    assert "dry_run" in reverse


def test_the_page_hands_off_a_github_authority_only_with_its_box_ticked(
    ctx, client, tokens, binding, finished_run
):
    """The handoff form's box is the word that writes stopped: without it a GitHub
    authority's handoff is the 409 problem page, with it the handoff Run is queued."""
    with ctx.db.transaction() as session:  # the authority's side is a GitHub repository
        session.get(Binding, binding.id).a_provider = "github"
    sign_in(client, tokens.admin)
    page = client.get(f"/bindings/{binding.id}").get_data(as_text=True)
    assert 'name="confirm_writes_stopped"' in page
    token = csrf_of(page)

    refused = client.post(f"/bindings/{binding.id}/handoff", data={"csrf": token})
    assert refused.status_code == 409
    assert "cannot freeze" in refused.get_data(as_text=True)
    queued = client.post(
        f"/bindings/{binding.id}/handoff", data={"csrf": token, "confirm_writes_stopped": "1"}
    )
    assert queued.status_code == 302


@pytest.mark.parametrize(
    ("next_", "lands"),
    [
        ("/activity?status=failed", "/activity?status=failed"),
        ("//evil.example/x", "/"),
        ("/\\evil.example", "/"),
        ("https://evil.example/", "/"),
    ],
)
def test_sign_in_returns_only_to_a_page_of_this_site(client, tokens, next_, lands):
    form = client.get("/signin")
    response = client.post(
        "/signin",
        data={"token": tokens.admin, "csrf": csrf_of(form.get_data(as_text=True)), "next": next_},
    )
    assert response.headers["Location"] == lands


def test_a_stream_token_does_not_sign_in(ctx, client, tokens, finished_run):
    """A stream token opens one Run's events, nothing else: not a page session."""
    from reposync.service.accounts.users import find_user, issue_stream_token

    stream_token, _ = issue_stream_token(ctx, find_user(ctx, "ada"), finished_run.id)
    form = client.get("/signin")
    response = client.post(
        "/signin", data={"token": stream_token, "csrf": csrf_of(form.get_data(as_text=True))}
    )
    assert response.status_code == 401
    assert client.get_cookie("reposync_session") is None


def test_pages_forbid_framing_and_foreign_sources(client):
    response = client.get("/signin")
    policy = response.headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    assert response.headers["Cache-Control"] == "no-store"


def test_swagger_ui_asks_no_online_validator(client):
    """Swagger UI's default shows a badge loaded from validator.swagger.io: off."""
    html = client.get(url("/docs")).get_data(as_text=True)
    assert '"validatorUrl": null' in html
