"""@octokit/rest, GitHub's own JavaScript client, drives the GitHub test server in both layouts.

``tests/node/octokit_script.mjs`` makes the calls an everyday integration makes (the same
ground as the PyGithub script: repositories, labels, milestones, issues, comments, pull
requests, reviews, review comments, releases and assets, pagination with
``octokit.paginate``, a conditional request, the rate limit, GitHub's errors as
``RequestError``). Every call GitHub answers with success must succeed here, and the
server must record no contract violation and no unmodelled operation.
"""

from __future__ import annotations

import json

import pytest

from tests.fakes.github import GitHubFake
from tests.gitrepo import commit_on
from tests.node import NODE_DIR, run_json

SCRIPT = NODE_DIR / "octokit_script.mjs"


def seed(fake: GitHubFake) -> tuple[str, str]:
    """acme/widgets (a feature branch one commit ahead, bob a collaborator) and an
    organization's repository; classic tokens of acme and bob."""
    repo = fake.state.create_repo("acme/widgets", auto_init=True)
    commit_on(repo.git_dir, "refs/heads/feature", "feature work")
    fake.state.add_collaborator(repo, "bob")
    fake.state.user("acme-org", type="Organization")
    fake.state.create_repo("acme-org/tools", auto_init=True, collaborators=["acme"])
    return fake.add_token("acme"), fake.add_token("bob")


@pytest.mark.parametrize("layout", ["github.com", "ghes"])
def test_octokit_script_succeeds_in_both_layouts(layout):
    """Every call of the everyday script succeeds through @octokit/rest (through the named
    hosts' proxy port on github.com, at /api/v3 on GHES), with no contract violation and
    no unmodelled operation on the server."""
    with GitHubFake(layout=layout) as fake:
        acme, bob = seed(fake)
        config = {
            "baseUrl": fake.client_api_url,
            "proxy": fake.proxy_url,
            "acme": acme,
            "bob": bob,
        }
        result = run_json(SCRIPT, json.dumps(config), timeout=60)
        failed = [f"{name}: {message}" for name, message in result["failed"]]
        assert failed == [], f"{len(failed)} of {len(failed) + len(result['passed'])} failed"
        assert len(result["passed"]) >= 100
        fake.assert_clean()
