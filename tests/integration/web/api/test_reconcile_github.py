"""A dry-run reconcile against the GitHub test server: it only reads GitHub, and what it
proposes is what a dry-run Run plans, for every object type."""

from __future__ import annotations

from pathlib import Path

from reposync.service.accounts.users import create_user, issue_token
from reposync.service.bindings import SyncRequest, bind
from reposync.service.embedded import sync
from reposync.web.app import create_app
from tests.github_env import embedded_world
from tests.gitrepo import commit_on, generate, refs
from tests.integration.forges.test_forge_sync import forge, populate
from tests.integration.web.api.test_reconcile import planned, reconcile, rows
from tests.integration.web.conftest import bearer

REPO = "acme/widgets"


def test_a_dry_run_against_github_only_reads_and_proposes_the_runs_plan(tmp_path, github_fake):
    github_fake.state.create_repo(REPO, private=True)
    source = generate(tmp_path / "src.git", commits=4, branches=1, tags=1)
    populate(source)
    with embedded_world(github_fake, tmp_path) as (ctx, _):
        request = SyncRequest(f"local:{source}", f"github:{REPO}")
        binding = bind(ctx, request)
        client = create_app(ctx.settings, ctx=ctx).test_client()
        admin = bearer(issue_token(ctx, create_user(ctx, "ada", role="admin").id))

        def propose() -> dict:
            before_rows, before_requests = rows(ctx), len(github_fake.requests_log)
            response = reconcile(client, binding.id, admin, mode="dry_run", item_limit=1000)
            assert response.status_code == 200, response.json
            sent = list(github_fake.requests_log)[before_requests:]
            assert sent, "the proposal reads the target"
            # Reads only: GETs of the API, and Git's upload-pack (a fetch, POSTed).
            writes = [
                (r.method, r.path)
                for r in sent
                if r.method not in ("GET", "HEAD") and not r.path.endswith("/git-upload-pack")
            ]
            assert writes == []
            assert rows(ctx) == before_rows
            return response.json["proposal"]

        bootstrap = propose()
        assert bootstrap["plan_mode"] == "empty_target"
        assert {"git_ref", "label", "milestone", "issue", "pull_request"} <= set(
            bootstrap["object_types"]
        )
        assert _git_refs(github_fake) == {}
        dry = sync(ctx, SyncRequest(request.source, request.target, dry_run=True))
        assert planned(ctx, dry.id) == bootstrap["object_types"]

        assert sync(ctx, request).status == "completed"
        commit_on(source, "refs/heads/main", "one more")
        with forge(source) as f:
            f.create_label("later", color="ededed")
        checkpoint = propose()
        assert checkpoint["plan_mode"] == "checkpoint"
        assert checkpoint["object_types"] == {
            "git_ref": {"update": 1},
            "label": {"create": 1},
        }
        dry = sync(ctx, SyncRequest(request.source, request.target, dry_run=True))
        assert planned(ctx, dry.id) == checkpoint["object_types"]


def _git_refs(fake) -> dict[str, str]:
    return refs(Path(fake.state.git_dir(REPO)))
