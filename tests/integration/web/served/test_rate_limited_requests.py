"""A request GitHub's rate limit refuses before any Run exists queues nothing, and says so.

Creating a Binding and a dry-run reconcile read GitHub while they answer (they open the
sides); when its primary quota is used up, the answer is 429 ``rate_limited`` with
``retry_at``, nothing is recorded, and the suggestion says to send the request again: it
never promises that a Run resumes (issue 23, item 12). So does the command line.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from reposync.cli import main
from reposync.models import Binding, Run
from reposync.service.accounts.users import create_user, issue_token
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext
from reposync.web.app import create_app
from tests.github_env import embedded_world, github_env
from tests.gitrepo import generate
from tests.integration.cli.test_cli import nothing_written
from tests.integration.web.api.test_reconcile import reconcile
from tests.integration.web.conftest import assert_problem, bearer, url

REPO = "acme/widgets"


def rows(ctx: ServiceContext) -> tuple[int, int]:
    with ctx.db.session() as session:
        return (
            session.execute(select(func.count()).select_from(Binding)).scalar_one(),
            session.execute(select(func.count()).select_from(Run)).scalar_one(),
        )


def says_nothing_was_queued(suggestion: str) -> None:
    assert "nothing was queued" in suggestion
    assert "send the request again" in suggestion
    assert "resume" not in suggestion  # no Run exists to resume


def use_up_the_quota(fake) -> None:  # type: ignore[no-untyped-def]
    """Every request of the token's owner now answers 403, x-ratelimit-remaining: 0."""
    fake.limiter.set_limit("user:acme", 0)


def test_creating_a_binding_refused_by_the_rate_limit_records_nothing(tmp_path, github_fake):
    """POST /bindings while GitHub's quota is used up: 429 rate_limited with retry_at (and
    Retry-After), no
    Binding and no Run, and a suggestion to send it again (no Run to resume)."""
    github_fake.state.create_repo(REPO, private=True)
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    with embedded_world(github_fake, tmp_path) as (ctx, _):
        ctx.settings = ctx.settings.with_overrides(local_roots=(tmp_path,))
        client = create_app(ctx.settings, ctx=ctx).test_client()
        admin = bearer(issue_token(ctx, create_user(ctx, "ada", role="admin").id))
        use_up_the_quota(github_fake)

        response = client.post(
            url("/bindings"),
            headers=admin,
            json={"source": f"local:{source}", "target": f"github:{REPO}"},
        )

        body = assert_problem(response, 429, "rate_limited")
        assert body["retry_at"]
        # Retry-After says the same in seconds, for a client that reads only headers.
        wait = datetime.fromisoformat(body["retry_at"]) - datetime.now(UTC)
        assert abs(int(response.headers["Retry-After"]) - wait.total_seconds()) <= 2
        says_nothing_was_queued(body["suggested_action"])
        assert rows(ctx) == (0, 0)


def test_a_dry_run_reconcile_refused_by_the_rate_limit_queues_no_run(tmp_path, github_fake):
    """A dry-run reconcile reads GitHub in the request: refused by the limit, it answers
    429 and leaves no Run behind, saying so."""
    github_fake.state.create_repo(REPO, private=True)
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    with embedded_world(github_fake, tmp_path) as (ctx, _):
        binding = bind(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))
        client = create_app(ctx.settings, ctx=ctx).test_client()
        admin = bearer(issue_token(ctx, create_user(ctx, "ada", role="admin").id))
        use_up_the_quota(github_fake)

        response = reconcile(client, binding.id, admin, mode="dry_run")

        body = assert_problem(response, 429, "rate_limited")
        says_nothing_was_queued(body["suggested_action"])
        assert rows(ctx) == (1, 0)


def test_the_command_line_refused_by_the_rate_limit_says_nothing_was_queued(
    tmp_path: Path, github_fake, data_dir, monkeypatch: pytest.MonkeyPatch, capsys
):
    """reposync sync --json while GitHub's quota is used up: an error naming rate_limited
    and retry_at, suggesting to run it again; the database holds no Binding."""
    github_fake.state.create_repo(REPO, private=True)
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    for name, value in github_env(github_fake, github_fake.add_token("acme")).items():
        monkeypatch.setenv(name, value)
    use_up_the_quota(github_fake)

    status = main(["sync", f"local:{source}", f"github:{REPO}", "--json"])

    captured = capsys.readouterr()
    answer = json.loads(captured.out)
    assert status != 0
    assert (answer["status"], answer["error_code"]) == ("error", "rate_limited")
    assert answer["retry_at"]
    says_nothing_was_queued(answer["suggested_action"])
    assert "[rate_limited]" in captured.err
    assert nothing_written(data_dir)
