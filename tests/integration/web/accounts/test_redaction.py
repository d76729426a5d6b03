"""Issue 12 #8: Run errors shown to members carry no server paths (admins see them)."""

from __future__ import annotations

import pytest
from sqlalchemy import insert, update

from reposync.models import Run, RunEvent, RunItem
from reposync.web.redaction import redact_paths
from tests.integration.web.conftest import bearer, url

SERVER_PATH = "/var/lib/reposync/git/binding-1.git"
MESSAGE = f"git push failed: fatal: cannot lock ref in {SERVER_PATH}: File exists"


@pytest.fixture
def failed_run(ctx, queued_run):
    with ctx.db.transaction() as session:
        session.execute(
            update(Run)
            .where(Run.id == queued_run.id)
            .values(
                status="failed",
                error_code="git_transport_failed",
                error_message=MESSAGE,
                report={"problems": [{"message": MESSAGE, "examples": [SERVER_PATH]}]},
            )
        )
        session.execute(
            insert(RunItem).values(
                run_id=queued_run.id,
                phase=0,
                object_type="git_ref",
                object_key="branch main",
                action="update",
                reason="changed",
                state="failed",
                error_code="git_transport_failed",
                error_message=MESSAGE,
                intent={},
            )
        )
        session.execute(
            insert(RunEvent).values(
                run_id=queued_run.id,
                seq=99,
                type="stage_failed",
                stage="applying",
                message=MESSAGE,
                counts={"where": SERVER_PATH},
            )
        )
    return queued_run


def texts(client, token: str, run_id: int) -> str:
    headers = bearer(token)
    run = client.get(url(f"/runs/{run_id}"), headers=headers).get_data(as_text=True)
    items = client.get(url(f"/runs/{run_id}/items"), headers=headers).get_data(as_text=True)
    events = client.get(url(f"/runs/{run_id}/events"), headers=headers).get_data(as_text=True)
    return run + items + events


def test_members_see_errors_without_server_paths(client, tokens, failed_run):
    shown = texts(client, tokens.member, failed_run.id)
    assert "/var/lib" not in shown
    assert "cannot lock ref in <path>: File exists" in shown


def test_admins_see_errors_whole(client, tokens, failed_run):
    assert texts(client, tokens.admin, failed_run.id).count(SERVER_PATH) >= 5


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("open /srv/a b.git: denied", "open <path> b.git: denied"),
        ("(at /tmp/x/y.py:12)", "(at <path>:12)"),
        ("local:/srv/app.git is busy", "local:/srv/app.git is busy"),
        ("https://api.github.com/repos/a/b failed", "https://api.github.com/repos/a/b failed"),
        ("branch refs/heads/x/y moved", "branch refs/heads/x/y moved"),
        ("#12 and 3/4 done", "#12 and 3/4 done"),
    ],
)
def test_only_absolute_paths_are_redacted(text, shown):
    assert redact_paths(text) == shown
