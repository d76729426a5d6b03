"""PyGithub, a GitHub client other people wrote, drives the GitHub test server in both layouts.

The script is what an integration does every day: repositories, labels, milestones, issues
and their comments, pull requests, reviews and review comments, releases and their assets,
pagination, conditional requests, the rate limit and GitHub's error answers. Every call
GitHub answers with success must succeed here, and the server must record no contract
violation and no unmodelled operation while it runs.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest
from github import Auth, Github, GithubException, UnknownObjectException

from tests.fakes.client_script import Script
from tests.fakes.github import GitHubFake
from tests.gitrepo import commit_on

REPO = "acme/widgets"
ORG_REPO = "acme-org/tools"
FILE = "feature_work.txt"  # what tests.gitrepo.commit_on adds for "feature work"


def seed(fake: GitHubFake) -> tuple[str, str]:
    """acme/widgets (a feature branch one commit ahead, bob a collaborator) and an
    organization's repository; classic tokens of acme and bob."""
    repo = fake.state.create_repo(REPO, auto_init=True)
    commit_on(repo.git_dir, "refs/heads/feature", "feature work")
    fake.state.add_collaborator(repo, "bob")
    fake.state.user("acme-org", type="Organization")
    fake.state.create_repo(ORG_REPO, auto_init=True, collaborators=["acme"])
    return fake.add_token("acme"), fake.add_token("bob")


def run_script(g: Github, bob: Github, s: Script) -> None:
    """Every call an everyday integration makes, in the order it makes them."""
    # -- repositories ---------------------------------------------------------------------
    with s.call("get_repo"):
        repo = g.get_repo(REPO)
        assert repo.default_branch == "main"
    with s.call("Repository.edit"):
        repo.edit(description="Widgets, kept in sync")
        assert repo.description == "Widgets, kept in sync"
    with s.call("AuthenticatedUser.get_repos"):
        mine = [r.full_name for r in g.get_user().get_repos()]
        assert REPO in mine, mine
    with s.call("AuthenticatedUser.login"):
        assert g.get_user().login == "acme"
    with s.call("get_user"):
        acme = g.get_user("acme")
        assert acme.login == "acme"
    with s.call("NamedUser.get_repos"):
        assert [r.full_name for r in acme.get_repos()] == [REPO]
    with s.call("get_organization"):
        org = g.get_organization("acme-org")
        assert org.login == "acme-org"
    with s.call("Organization.get_repos"):
        assert [r.full_name for r in org.get_repos()] == [ORG_REPO]
    with s.call("Repository.update (changed since read)"):
        assert repo.update() is True  # the edit changed it: 200 with the new state
    with s.call("Repository.update (conditional, unchanged)"):
        before = g.rate_limiting[0]
        assert repo.update() is False  # 304 Not Modified
        assert g.rate_limiting[0] == before  # a 304 does not count against the quota
    with s.call("get_repo (missing): UnknownObjectException"):
        with pytest.raises(UnknownObjectException) as missing:
            g.get_repo("acme/missing")
        assert missing.value.status == 404
        assert missing.value.data["message"] == "Not Found"
        assert missing.value.data["documentation_url"].startswith("https://docs.github.com/")

    # -- labels -----------------------------------------------------------------------------
    with s.call("create_label"):
        bug = repo.create_label("bug", "d73a4a", "Something isn't working")
        assert bug.color == "d73a4a"
    with s.call("create_label (no description)"):
        triage = repo.create_label("triage", "ededed")
    with s.call("create_label (exists): GithubException 422"):
        with pytest.raises(GithubException) as taken:
            repo.create_label("bug", "000000")
        assert (taken.value.status, taken.value.message) == (422, "Validation Failed")
        assert taken.value.data["errors"][0]["code"] == "already_exists"
        assert taken.value.data["documentation_url"].startswith("https://docs.github.com/")
    with s.call("get_labels"):
        assert {lb.name for lb in repo.get_labels()} == {"bug", "triage"}
    with s.call("get_label"):
        assert repo.get_label("bug").description == "Something isn't working"
    with s.call("Label.edit"):
        bug.edit("bug", "b60205", "Broken behaviour")
        assert bug.color == "b60205"
    with s.call("Label.delete"):
        triage.delete()

    # -- milestones -------------------------------------------------------------------------
    with s.call("create_milestone"):
        due = datetime(2026, 3, 1, 12, tzinfo=UTC)
        ms = repo.create_milestone("v1.0", description="First release", due_on=due.date())
        assert ms.title == "v1.0"
    with s.call("get_milestones"):
        assert [m.title for m in repo.get_milestones(state="all")] == ["v1.0"]
    with s.call("get_milestone"):
        assert repo.get_milestone(ms.number).description == "First release"
    with s.call("Milestone.edit"):
        ms.edit("v1.0", description="The first release")
        assert ms.description == "The first release"
    with s.call("Milestone.delete"):
        repo.create_milestone("scratch").delete()

    # -- issues -----------------------------------------------------------------------------
    with s.call("create_issue"):
        issue = repo.create_issue(
            "Crash on start", body="It crashes.", labels=["bug"], milestone=ms, assignee="acme"
        )
        assert [lb.name for lb in issue.labels] == ["bug"]
        assert issue.milestone.number == ms.number
    with s.call("create_issue (four more)"):
        for n in range(4):
            repo.create_issue(f"Chore {n}")
    with s.call("get_issue"):
        assert repo.get_issue(issue.number).title == "Crash on start"
    with s.call("get_issues (labels, sort, direction)"):
        found = repo.get_issues(state="open", labels=[bug], sort="created", direction="asc")
        assert [i.number for i in found] == [issue.number]
    with s.call("get_issues (milestone)"):
        assert [i.number for i in repo.get_issues(milestone=ms)] == [issue.number]
    with s.call("get_issues (assignee, creator)"):
        found = repo.get_issues(assignee="acme", creator=acme)
        assert [i.number for i in found] == [issue.number]
    with s.call("get_issues (since)"):
        since = datetime.now(UTC) - timedelta(hours=1)
        assert len(list(repo.get_issues(since=since))) == 5
    with s.call("PaginatedList over pages (per_page=2)"):
        paged = repo.get_issues(state="all")
        assert paged.totalCount == 5  # from the last page's Link
        assert len({i.number for i in paged}) == 5
    with s.call("PaginatedList.get_page"):
        assert len(repo.get_issues(state="all").get_page(2)) == 1
    with s.call("Issue.edit"):
        issue.edit(title="Crash on start-up", body="It crashes at once.")
        assert issue.title == "Crash on start-up"
    with s.call("Issue.edit (close as not planned)"):
        issue.edit(state="closed", state_reason="not_planned")
        assert issue.state == "closed"
    with s.call("Issue.edit (reopen)"):
        issue.edit(state="open")
        assert issue.state_reason == "reopened"
    with s.call("Issue.lock"):
        issue.lock("resolved")
        assert repo.get_issue(issue.number).locked
    with s.call("Issue.unlock"):
        issue.unlock()
    with s.call("Issue.add_to_labels (bare array)"):
        issue.add_to_labels("needs-info")
    with s.call("Issue.set_labels (bare array)"):
        issue.set_labels("bug", "docs")
    with s.call("Issue.get_labels"):
        assert sorted(lb.name for lb in issue.get_labels()) == ["bug", "docs"]
    with s.call("Issue.remove_from_labels"):
        issue.remove_from_labels("docs")
    with s.call("Issue.set_labels() (empty array: clears)"):
        issue.set_labels()
        assert list(issue.get_labels()) == []
    with s.call("Issue.delete_labels"):
        issue.set_labels("bug")
        issue.delete_labels()
        assert list(issue.get_labels()) == []
    with s.call("get_issue (missing): UnknownObjectException"):
        with pytest.raises(UnknownObjectException) as gone:
            repo.get_issue(999)
        assert gone.value.status == 404

    # -- issue comments ---------------------------------------------------------------------
    with s.call("Issue.create_comment"):
        comment = issue.create_comment("Seen it too.")
    with s.call("Issue.get_comments"):
        assert [c.body for c in issue.get_comments()] == ["Seen it too."]
    with s.call("get_issues_comments"):
        assert [c.id for c in repo.get_issues_comments(sort="created")] == [comment.id]
    with s.call("Issue.get_comment"):
        assert issue.get_comment(comment.id).body == "Seen it too."
    with s.call("IssueComment.edit"):
        comment.edit("Seen it too, on 1.2.")
        assert comment.body == "Seen it too, on 1.2."
    with s.call("IssueComment.delete"):
        comment.delete()

    # -- pull requests ----------------------------------------------------------------------
    with s.call("create_pull"):
        pr = repo.create_pull(base="main", head="feature", title="Feature", body="Adds it.")
        assert pr.head.ref == "feature"
    with s.call("create_pull (again): GithubException 422"):
        with pytest.raises(GithubException) as again:
            repo.create_pull(base="main", head="feature", title="Again")
        assert again.value.status == 422
        assert "already exists" in again.value.data["errors"][0]["message"]
    with s.call("get_pull"):
        assert repo.get_pull(pr.number).mergeable is True
    with s.call("get_pulls (state, sort, base)"):
        assert [p.number for p in repo.get_pulls(state="open", sort="created", base="main")] == [
            pr.number
        ]
    with s.call("get_pulls (head)"):
        assert [p.number for p in repo.get_pulls(head="acme:feature")] == [pr.number]
    with s.call("PullRequest.edit"):
        pr.edit(title="Feature, finished", body="Adds it, tested.")
        assert pr.title == "Feature, finished"
    with s.call("PullRequest.is_merged"):
        assert pr.is_merged() is False
    with s.call("PullRequest.create_review_request"):
        pr.create_review_request(reviewers=["bob"])
    with s.call("PullRequest.get_review_requests"):
        users, teams = pr.get_review_requests()
        assert [u.login for u in users] == ["bob"]
        assert list(teams) == []
    with s.call("PullRequest.delete_review_request"):
        pr.delete_review_request(reviewers=["bob"])
        assert [u.login for u in pr.get_review_requests()[0]] == []
    with s.call("PullRequest.add_to_labels (bare array)"):
        pr.add_to_labels("bug")

    # -- reviews (bob reviews acme's pull request) ------------------------------------------
    with s.call("bob: get_pull"):
        bob_pr = bob.get_repo(REPO).get_pull(pr.number)
    with s.call("PullRequest.create_review (with comments)"):
        review = bob_pr.create_review(
            body="A few notes.",
            event="COMMENT",
            comments=[{"path": FILE, "line": 1, "body": "Spell it out?"}],
        )
        assert review.state == "COMMENTED"
    with s.call("PullRequest.create_review (pending)"):
        pending = bob_pr.create_review(body="Still reading.")
        assert pending.state == "PENDING"
    with s.call("PullRequestReview.edit"):
        pending.edit("Still reading, half done.")
    with s.call("PullRequest.get_reviews"):
        assert [r.id for r in bob_pr.get_reviews()] == [review.id, pending.id]
    with s.call("PullRequest.get_review"):
        assert pr.get_review(review.id).body == "A few notes."
    with s.call("PullRequest.get_single_review_comments"):
        assert [c.body for c in pr.get_single_review_comments(review.id)] == ["Spell it out?"]
    with s.call("PullRequest.create_review (approve)"):
        approval = (
            bob.get_repo(REPO)
            .get_pull(pr.number)
            .create_review(body="Good to go.", event="APPROVE")
        )
    with s.call("PullRequestReview.dismiss"):
        approval.dismiss("The branch changed.")
        assert pr.get_review(approval.id).state == "DISMISSED"

    # -- review comments --------------------------------------------------------------------
    with s.call("PullRequest.create_review_comment"):
        rc = pr.create_review_comment("Why this name?", pr.head.sha, FILE, line=1, side="RIGHT")
        assert rc.line == 1
    with s.call("PullRequest.create_review_comment_reply"):
        reply = bob_pr.create_review_comment_reply(rc.id, "It reads better.")
        assert reply.in_reply_to_id == rc.id
    with s.call("PullRequest.get_review_comments"):
        assert len(list(pr.get_review_comments())) == 3
    with s.call("get_pulls_review_comments"):
        assert len(list(repo.get_pulls_review_comments(sort="created", direction="asc"))) == 3
    with s.call("PullRequest.get_review_comment"):
        assert pr.get_review_comment(rc.id).body == "Why this name?"
    with s.call("PullRequestComment.edit"):
        rc.edit("Why this name, exactly?")
        assert rc.body == "Why this name, exactly?"
    with s.call("PullRequestComment.delete"):
        reply.delete()

    # -- releases and assets ----------------------------------------------------------------
    with s.call("create_git_release"):
        release = repo.create_git_release("v1.0.0", "1.0.0", "First release.")
        assert release.tag_name == "v1.0.0"
    with s.call("create_git_release (draft)"):
        draft = repo.create_git_release("v1.1.0", "1.1.0", "Next.", draft=True)
        assert draft.draft
    with s.call("get_release (id)"):
        assert repo.get_release(release.id).name == "1.0.0"
    with s.call("get_release (tag)"):
        assert repo.get_release("v1.0.0").id == release.id
    with s.call("get_releases"):
        assert {r.id for r in repo.get_releases()} == {release.id, draft.id}
    with s.call("get_latest_release"):
        assert repo.get_latest_release().id == release.id
    with s.call("GitRelease.update_release"):
        release = release.update_release("1.0.0 (stable)", "First release, stable.")
        assert release.name == "1.0.0 (stable)"
    with s.call("GitRelease.upload_asset_from_memory"):
        data = b"widgets binary\n" * 100
        asset = release.upload_asset_from_memory(
            io.BytesIO(data), len(data), "widgets-1.0.0.bin", "application/octet-stream"
        )
        assert asset.size == len(data)
    with s.call("GitRelease.get_assets"):
        assert [a.name for a in release.get_assets()] == ["widgets-1.0.0.bin"]
    with s.call("get_release_asset"):
        assert repo.get_release_asset(asset.id).name == "widgets-1.0.0.bin"
    with s.call("GitReleaseAsset.download_asset"):
        _, _, chunks = asset.download_asset(chunk_size=4096)
        assert b"".join(chunks) == data
    with s.call("GitReleaseAsset.update_asset"):
        asset = asset.update_asset("widgets-1.0.0-linux.bin", label="Linux")
        assert asset.label == "Linux"
    with s.call("GitReleaseAsset.delete_asset"):
        assert asset.delete_asset() is True
    with s.call("GitRelease.delete_release"):
        draft.delete_release()
        assert [r.id for r in repo.get_releases()] == [release.id]

    # -- git references -------------------------------------------------------------------------
    with s.call("get_git_ref"):
        main = repo.get_git_ref("heads/main")
    with s.call("get_git_matching_refs"):
        assert [r.ref for r in repo.get_git_matching_refs("heads/")] == [
            "refs/heads/feature",
            "refs/heads/main",
        ]
    with s.call("create_git_ref"):
        ref = repo.create_git_ref("refs/heads/backup", main.object.sha)
    with s.call("GitRef.edit"):
        ref.edit(pr.head.sha)
    with s.call("GitRef.delete"):
        ref.delete()

    # -- rate limit and scopes --------------------------------------------------------------
    with s.call("get_rate_limit"):
        limits = g.get_rate_limit()
        assert limits.resources.core.limit == 5000
    with s.call("rate_limiting"):
        remaining, limit = g.rate_limiting
        assert 0 < remaining < limit == 5000
    with s.call("rate_limiting_resettime"):
        assert g.rate_limiting_resettime > datetime.now(UTC).timestamp()
    with s.call("oauth_scopes"):
        assert g.oauth_scopes == ["repo"]


def client(fake: GitHubFake, token: str) -> Github:
    """PyGithub as an integration sets it up against this server: the API's base URL;
    two items a page, so that the script's lists span pages; no retries and no pauses
    between requests (PyGithub's own throttle, a quarter second a request)."""
    return Github(
        base_url=fake.client_api_url,
        auth=Auth.Token(token),
        per_page=2,
        retry=None,
        seconds_between_requests=None,
        seconds_between_writes=None,
    )


@pytest.mark.parametrize("layout", ["github.com", "ghes"])
def test_pygithub_script_succeeds_in_both_layouts(layout, monkeypatch):
    """Every call of the everyday script succeeds through PyGithub, with no contract
    violation and no unmodelled operation on the server."""
    with GitHubFake(layout=layout) as fake:
        for name, value in fake.client_proxy_env().items():
            monkeypatch.setenv(name, value)
        acme, bob = seed(fake)
        script = Script()
        run_script(client(fake, acme), client(fake, bob), script)
        assert script.failed == [], f"{len(script.failed)} of {script.total} calls failed"
        assert script.total >= 100
        fake.assert_clean()
