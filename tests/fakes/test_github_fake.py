"""The GitHub fake, driven over HTTP with plain requests and the contract harness attached."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests

from tests.fakes.contract import RecordingValidator, attach
from tests.fakes.forge_server.clock import iso
from tests.fakes.forge_server.cut_short import send_cut_short
from tests.fakes.github import (
    AppInstall,
    GitHubFake,
    ManualClock,
    SecondaryLimits,
    accelerated_clock,
    generate_key_pair,
    github_fake,
    make_app_jwt,
)
from tests.gitrepo import commit_on, refs

REPO = "acme/widgets"
T0 = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)

fake = pytest.fixture(name="fake")(github_fake)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def clocked(clock: ManualClock) -> Iterator[GitHubFake]:
    """A fake on a hand-driven clock."""
    with GitHubFake(clock=clock) as server:
        yield server


def seeded(server: GitHubFake, *, private: bool = False) -> tuple[str, requests.Session]:
    """acme/widgets with main and a feature branch one commit ahead; the owner's session."""
    repo = server.state.create_repo(REPO, auto_init=True, private=private)
    commit_on(repo.git_dir, "refs/heads/feature", "feature work")
    token = server.add_token("acme")
    return token, server.session(token)


def api(server: GitHubFake, path: str) -> str:
    return f"{server.api_url}/repos/{REPO}{path}"


def git(
    *args: str, cwd: Path | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Tester",
        "GIT_AUTHOR_EMAIL": "tester@example.com",
        "GIT_COMMITTER_NAME": "Tester",
        "GIT_COMMITTER_EMAIL": "tester@example.com",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=check
    )


# -- every operation of the contract -----------------------------------------------------------


def test_every_contract_operation_succeeds_once(fake):
    """A tour through all 83 described operations; every one answers 2xx validly."""
    _, s = seeded(fake)
    app = fake.install_app("acme")
    jwt_session = fake.session(app.jwt())
    label = s.post(api(fake, "/labels"), json={"name": "bug", "color": "d73a4a"})
    assert label.status_code == 201
    assert s.get(api(fake, "/labels")).status_code == 200
    assert s.get(api(fake, "/labels/bug")).status_code == 200
    assert s.patch(api(fake, "/labels/bug"), json={"new_name": "defect"}).status_code == 200
    ms = s.post(api(fake, "/milestones"), json={"title": "v1", "due_on": "2026-03-01T00:00:00Z"})
    assert ms.status_code == 201
    assert s.get(api(fake, "/milestones")).status_code == 200
    assert s.get(api(fake, "/milestones/1")).status_code == 200
    assert s.patch(api(fake, "/milestones/1"), json={"state": "closed"}).status_code == 200
    issue = s.post(api(fake, "/issues"), json={"title": "Broken", "labels": ["defect"]})
    assert issue.status_code == 201
    assert s.get(api(fake, "/issues")).status_code == 200
    assert s.get(api(fake, "/issues/1")).status_code == 200
    assert s.patch(api(fake, "/issues/1"), json={"milestone": 1}).status_code == 200
    comment = s.post(api(fake, "/issues/1/comments"), json={"body": "Seen it"})
    assert comment.status_code == 201
    cid = comment.json()["id"]
    assert s.get(api(fake, "/issues/comments")).status_code == 200
    assert s.get(api(fake, "/issues/1/comments")).status_code == 200
    assert s.get(api(fake, f"/issues/comments/{cid}")).status_code == 200
    assert s.patch(api(fake, f"/issues/comments/{cid}"), json={"body": "Fixed"}).status_code == 200
    pull = s.post(api(fake, "/pulls"), json={"title": "Feature", "head": "feature", "base": "main"})
    assert pull.status_code == 201
    head = pull.json()["head"]["sha"]
    assert s.get(api(fake, "/pulls")).status_code == 200
    assert s.get(api(fake, "/pulls/2")).status_code == 200
    assert s.patch(api(fake, "/pulls/2"), json={"body": "Adds a feature"}).status_code == 200
    review = s.post(api(fake, "/pulls/2/reviews"), json={"event": "COMMENT", "body": "Looks fine"})
    assert review.status_code == 200
    rid = review.json()["id"]
    assert s.get(api(fake, "/pulls/2/reviews")).status_code == 200
    assert s.put(api(fake, f"/pulls/2/reviews/{rid}"), json={"body": "Fine"}).status_code == 200
    assert s.get(api(fake, f"/pulls/2/reviews/{rid}")).status_code == 200
    rc = s.post(
        api(fake, "/pulls/2/comments"),
        json={"body": "Typo", "commit_id": head, "path": "feature_work.txt", "line": 1},
    )
    assert rc.status_code == 201
    rcid = rc.json()["id"]
    reply = s.post(api(fake, f"/pulls/2/comments/{rcid}/replies"), json={"body": "Done"})
    assert reply.status_code == 201
    assert s.get(api(fake, "/pulls/2/comments")).status_code == 200
    assert s.get(api(fake, "/pulls/comments")).status_code == 200
    assert s.get(api(fake, f"/pulls/comments/{rcid}")).status_code == 200
    assert s.patch(api(fake, f"/pulls/comments/{rcid}"), json={"body": "Typo!"}).status_code == 200
    # -- pull-request family (issue 10): review requests, merge status, pending reviews --
    fake.state.add_collaborator(REPO, "dave")
    assert s.get(api(fake, "/pulls/2/requested_reviewers")).status_code == 200
    asked = s.post(api(fake, "/pulls/2/requested_reviewers"), json={"reviewers": ["dave"]})
    assert asked.status_code == 201
    dropped = s.delete(api(fake, "/pulls/2/requested_reviewers"), json={"reviewers": ["dave"]})
    assert dropped.status_code == 200
    assert s.get(api(fake, "/pulls/2/merge")).status_code == 404  # not merged: 404 is it
    pending = s.post(
        api(fake, "/pulls/2/reviews"),
        json={"body": "Draft", "comments": [{"path": "feature_work.txt", "line": 1, "body": "?"}]},
    )
    assert (pending.status_code, pending.json()["state"]) == (200, "PENDING")
    pid = pending.json()["id"]
    assert s.get(api(fake, f"/pulls/2/reviews/{pid}/comments")).status_code == 200
    submitted = s.post(api(fake, f"/pulls/2/reviews/{pid}/events"), json={"event": "COMMENT"})
    assert (submitted.status_code, submitted.json()["state"]) == (200, "COMMENTED")
    fake.state.merge_pull(REPO, 2)
    assert s.get(api(fake, "/pulls/2/merge")).status_code == 204
    pull_family = {
        "pulls/list-requested-reviewers",
        "pulls/request-reviewers",
        "pulls/remove-requested-reviewers",
        "pulls/check-if-merged",
        "pulls/submit-review",
        "pulls/list-comments-for-review",
    }
    # -- end of the pull-request family block ---------------------------------------------
    release = s.post(api(fake, "/releases"), json={"tag_name": "v1.0", "name": "One"})
    assert release.status_code == 201
    rel = release.json()
    assert s.get(api(fake, "/releases")).status_code == 200
    assert s.get(api(fake, f"/releases/{rel['id']}")).status_code == 200
    assert s.patch(api(fake, f"/releases/{rel['id']}"), json={"body": "Notes"}).status_code == 200
    upload = s.post(
        rel["upload_url"].split("{")[0],
        params={"name": "widget.tar.gz"},
        data=b"\x1f\x8b payload",
        headers={"Content-Type": "application/gzip"},
    )
    assert upload.status_code == 201
    aid = upload.json()["id"]
    assert s.get(api(fake, f"/releases/{rel['id']}/assets")).status_code == 200
    assert s.get(api(fake, f"/releases/assets/{aid}")).status_code == 200
    assert s.get(api(fake, "/git/matching-refs/heads/")).status_code == 200
    assert jwt_session.get(f"{fake.api_url}/app").status_code == 200
    exchange = jwt_session.post(
        f"{fake.api_url}/app/installations/{app.installation.id}/access_tokens"
    )
    assert exchange.status_code == 201
    assert s.get(f"{fake.api_url}/user/installations").status_code == 200
    path = f"/user/installations/{app.installation.id}/repositories"
    assert s.get(fake.api_url + path).status_code == 200
    assert s.get(f"{fake.api_url}/rate_limit").status_code == 200
    assert s.get(api(fake, "")).status_code == 200
    assert s.delete(api(fake, f"/releases/assets/{aid}")).status_code == 204
    assert s.delete(api(fake, f"/releases/{rel['id']}")).status_code == 204
    assert s.delete(api(fake, f"/pulls/comments/{rcid}")).status_code == 204
    assert s.delete(api(fake, f"/issues/comments/{cid}")).status_code == 204
    assert s.delete(api(fake, "/milestones/1")).status_code == 204
    assert s.delete(api(fake, "/labels/defect")).status_code == 204

    # -- issue 10: default branch and git refs (repos/update, git/*-ref) ----------------
    assert s.patch(api(fake, ""), json={"default_branch": "feature"}).status_code == 200
    main_sha = s.get(api(fake, "/git/ref/heads/main")).json()["object"]["sha"]
    topic = s.post(api(fake, "/git/refs"), json={"ref": "refs/heads/topic", "sha": main_sha})
    assert topic.status_code == 201
    feature_sha = s.get(api(fake, "/git/ref/heads/feature")).json()["object"]["sha"]
    moved = s.patch(api(fake, "/git/refs/heads/topic"), json={"sha": feature_sha, "force": True})
    assert moved.status_code == 200
    assert s.delete(api(fake, "/git/refs/heads/topic")).status_code == 204
    # -- end of issue 10: default branch and git refs --------------------------------------

    # -- issue 10: issues and releases family (lock, an issue's labels, tag, asset edit) --
    assert s.put(api(fake, "/issues/1/lock"), json={"lock_reason": "resolved"}).status_code == 204
    assert s.delete(api(fake, "/issues/1/lock")).status_code == 204
    assert s.post(api(fake, "/issues/1/labels"), json={"labels": ["a", "b"]}).status_code == 200
    assert s.get(api(fake, "/issues/1/labels")).status_code == 200
    assert s.delete(api(fake, "/issues/1/labels/a")).status_code == 200
    assert s.put(api(fake, "/issues/1/labels"), json={"labels": ["c"]}).status_code == 200
    assert s.delete(api(fake, "/issues/1/labels")).status_code == 204
    tagged = s.post(api(fake, "/releases"), json={"tag_name": "v2.0"}).json()
    assert s.get(api(fake, "/releases/tags/v2.0")).status_code == 200
    asset = s.post(
        tagged["upload_url"].split("{")[0],
        params={"name": "a b.txt"},
        data=b"x",
        headers={"Content-Type": "text/plain"},
    ).json()
    edited = s.patch(api(fake, f"/releases/assets/{asset['id']}"), json={"label": "a b.txt"})
    assert edited.status_code == 200
    issues_releases_family = {
        "issues/lock",
        "issues/unlock",
        "issues/list-labels-on-issue",
        "issues/add-labels",
        "issues/set-labels",
        "issues/remove-all-labels",
        "issues/remove-label",
        "repos/get-release-by-tag",
        "repos/update-release-asset",
    }
    # -- end of issue 10: issues and releases family ---------------------------------------

    # -- issue 22: accounts, the latest release, dismissing, a pending review, merging --
    fake.state.user("acme-org", type="Organization")
    fake.state.create_repo("acme-org/tools")
    for path in ("/user", "/user/repos", "/users/acme", "/users/acme/repos"):
        assert s.get(fake.api_url + path).status_code == 200, path
    for path in ("/orgs/acme-org", "/orgs/acme-org/repos"):
        assert s.get(fake.api_url + path).status_code == 200, path
    assert s.get(api(fake, "/releases/latest")).status_code == 200
    commit_on(fake.state.git_dir(REPO), "refs/heads/second", "second work")
    second = s.post(api(fake, "/pulls"), json={"title": "Two", "head": "second", "base": "main"})
    number = second.json()["number"]
    approval = fake.session(fake.add_token("dave")).post(
        api(fake, f"/pulls/{number}/reviews"), json={"event": "APPROVE"}
    )
    dismissed = s.put(
        api(fake, f"/pulls/{number}/reviews/{approval.json()['id']}/dismissals"),
        json={"message": "Stale"},
    )
    assert (dismissed.status_code, dismissed.json()["state"]) == (200, "DISMISSED")
    draft = s.post(api(fake, f"/pulls/{number}/reviews"), json={"body": "Draft"}).json()
    assert s.delete(api(fake, f"/pulls/{number}/reviews/{draft['id']}")).status_code == 200
    merged = s.put(api(fake, f"/pulls/{number}/merge"), json={"merge_method": "merge"})
    assert (merged.status_code, merged.json()["merged"]) == (200, True)
    # -- end of issue 22 ------------------------------------------------------------------

    # -- issue 24: creating repositories (binding whole organizations) -------------------
    fake.state.add_member("acme-org", "acme")
    assert s.post(f"{fake.api_url}/user/repos", json={"name": "made"}).status_code == 201
    made = s.post(f"{fake.api_url}/orgs/acme-org/repos", json={"name": "made", "private": True})
    assert made.status_code == 201
    # -- end of issue 24 ------------------------------------------------------------------

    hit = set()
    for record in fake.requests_log:
        base = fake.uploads_url if record.host == "uploads" else fake.api_url
        op = fake.contract.operation_for(record.method, base + record.path)
        if op is not None and record.status < 400:
            hit.add(op.operation_id)
    described = {op.operation_id for op in fake.contract.operations}
    assert pull_family - hit == set()
    assert issues_releases_family - hit == set()
    assert len(described) == 83
    assert described - hit == set()
    fake.assert_clean()


def test_main_errors_of_each_resource(fake):
    """Unknown ids are 404, invalid input is GitHub's 422, and both stay within the contract."""
    _, s = seeded(fake)
    for path in (
        "/labels/nope",
        "/milestones/9",
        "/issues/9",
        "/issues/9/comments",
        "/issues/comments/9",
        "/pulls/9",
        "/pulls/9/reviews",
        "/pulls/9/comments",
        "/pulls/comments/9",
        "/pulls/1/reviews/9",
        "/releases/9",
        "/releases/9/assets",
        "/releases/assets/9",
    ):
        assert s.get(api(fake, path)).status_code == 404, path
    assert s.get(f"{fake.api_url}/repos/acme/nothing").status_code == 404
    assert s.get(f"{fake.api_url}/repos/acme/widgets/wiki").status_code == 404
    for path in ("/milestones/9", "/issues/comments/9", "/pulls/comments/9", "/releases/9"):
        assert s.delete(api(fake, path)).status_code == 404, path
    assert s.patch(api(fake, "/labels/nope"), json={"color": "ffffff"}).status_code == 404
    bad_color = s.post(api(fake, "/labels"), json={"name": "x", "color": "red"})
    assert bad_color.status_code == 422
    assert bad_color.json()["errors"] == [
        {"resource": "Label", "field": "color", "code": "invalid"}
    ]
    no_title = s.post(api(fake, "/milestones"), json={"description": "?"})
    assert no_title.status_code == 422
    assert no_title.json()["errors"][0]["code"] == "missing_field"
    bad_type = s.post(api(fake, "/labels"), json={"name": 7})
    assert bad_type.status_code == 422
    assert bad_type.json()["message"].startswith("Invalid request.")
    assert s.post(api(fake, "/releases"), json={}).status_code == 422
    bad_json = s.post(
        api(fake, "/issues"), data=b"{nope", headers={"Content-Type": "application/json"}
    )
    assert bad_json.status_code == 400
    assert bad_json.json()["message"] == "Problems parsing JSON"
    assert fake.problems(requests_too=False) == []


# -- repositories ------------------------------------------------------------------------------


def test_repository_get_and_rename_keeps_id(fake):
    """GET /repos gives a full repository; a rename keeps the id and the old name redirects."""
    _, s = seeded(fake)
    first = s.get(api(fake, "")).json()
    assert first["full_name"] == REPO
    assert first["permissions"] == {
        "admin": True,
        "maintain": True,
        "push": True,
        "triage": True,
        "pull": True,
    }
    assert first["clone_url"] == f"{fake.git_url}/{REPO}.git"
    fake.state.rename_repo(REPO, "gadgets")
    renamed = s.get(f"{fake.api_url}/repos/acme/gadgets").json()
    assert renamed["id"] == first["id"]
    moved = s.get(api(fake, ""), allow_redirects=False)
    assert moved.status_code == 301
    assert moved.headers["location"] == f"{fake.api_url}/repos/acme/gadgets"
    assert s.get(api(fake, "/issues")).status_code == 200  # followed
    created = s.post(api(fake, "/issues"), json={"title": "via the old name"})  # 307, followed
    assert created.status_code == 201
    assert created.json()["repository_url"] == f"{fake.api_url}/repos/acme/gadgets"
    fake.assert_clean()


def test_label_names_are_path_segments(fake):
    """Names with spaces and slashes are percent-encoded in URLs and found again."""
    _, s = seeded(fake)
    made = s.post(api(fake, "/labels"), json={"name": "area/ui x", "description": "UI"}).json()
    assert made["url"] == api(fake, "/labels/area%2Fui%20x")
    assert s.get(made["url"]).json()["description"] == "UI"
    assert s.get(api(fake, "/labels/AREA%2FUI%20X")).status_code == 200  # case-insensitive
    renamed = s.patch(made["url"], json={"new_name": "area/web", "color": "#00FF00"}).json()
    assert (renamed["name"], renamed["color"]) == ("area/web", "00ff00")
    assert s.delete(api(fake, "/labels/area%2Fweb")).status_code == 204
    assert fake.state.labels(REPO) == []
    fake.assert_clean()


# -- issues, pull requests, numbering ----------------------------------------------------------


def test_issues_and_pull_requests_share_one_number_sequence(fake):
    """Issue #1, PR #2, issue #3; the issues list shows the PR with its issue id."""
    _, s = seeded(fake)
    one = s.post(api(fake, "/issues"), json={"title": "one"}).json()
    pr = s.post(
        api(fake, "/pulls"), json={"title": "two", "head": "feature", "base": "main"}
    ).json()
    three = s.post(api(fake, "/issues"), json={"title": "three"}).json()
    assert [one["number"], pr["number"], three["number"]] == [1, 2, 3]
    listed = s.get(api(fake, "/issues"), params={"direction": "asc"}).json()
    assert [i["number"] for i in listed] == [1, 2, 3]
    as_issue = listed[1]
    assert as_issue["pull_request"]["url"] == api(fake, "/pulls/2")
    assert as_issue["id"] != pr["id"]
    assert as_issue["id"] == s.get(api(fake, "/issues/2")).json()["id"]
    assert "pull_request" not in listed[0]
    fake.assert_clean()


def test_issue_list_defaults_to_open_and_filters(fake):
    """state defaults to open; state=all, labels, milestone and creator filter."""
    seeded(fake)
    fake.state.add_milestone(REPO, "v1")
    fake.state.add_issue(REPO, "open bug", labels=["bug"], milestone=1, author="carol")
    fake.state.add_issue(REPO, "closed", state="closed")
    fake.state.add_issue(REPO, "open plain")
    token = fake.add_token("acme")
    s = fake.session(token)
    assert [i["title"] for i in s.get(api(fake, "/issues")).json()] == ["open plain", "open bug"]
    assert len(s.get(api(fake, "/issues"), params={"state": "all"}).json()) == 3
    assert [i["number"] for i in s.get(api(fake, "/issues"), params={"labels": "bug"}).json()] == [
        1
    ]
    assert [
        i["number"] for i in s.get(api(fake, "/issues"), params={"milestone": "none"}).json()
    ] == [3]
    assert [
        i["number"] for i in s.get(api(fake, "/issues"), params={"creator": "carol"}).json()
    ] == [1]
    closed = s.get(api(fake, "/issues"), params={"state": "closed"}).json()
    assert closed[0]["state_reason"] == "completed"
    fake.assert_clean()


def test_issue_create_edit_and_authorship(fake):
    """The author is the token's owner; labels are created; closing sets closed_at and reason."""
    fake.state.create_repo(REPO, auto_init=True, collaborators=["bob"])
    s = fake.session(fake.add_token("bob"))
    made = s.post(
        api(fake, "/issues"),
        json={
            "title": "Crash",
            "body": "Steps",
            "labels": ["bug", {"name": "p1"}],
            "user": {"login": "mallory"},
            "created_at": "2001-01-01T00:00:00Z",
        },
    ).json()
    assert made["user"]["login"] == "bob"
    assert made["author_association"] == "COLLABORATOR"
    assert made["created_at"] != "2001-01-01T00:00:00Z"
    assert {lb["name"] for lb in made["labels"]} == {"bug", "p1"}
    assert [lb.name for lb in fake.state.labels(REPO)] == ["bug", "p1"]
    closed = s.patch(
        api(fake, "/issues/1"), json={"state": "closed", "state_reason": "not_planned"}
    )
    body = closed.json()
    assert (body["state"], body["state_reason"]) == ("closed", "not_planned")
    assert body["closed_at"] is not None
    assert body["closed_by"]["login"] == "bob"
    reopened = s.patch(api(fake, "/issues/1"), json={"state": "open"}).json()
    assert (reopened["state_reason"], reopened["closed_at"]) == ("reopened", None)
    unknown = s.patch(api(fake, "/issues/1"), json={"milestone": 42})
    assert unknown.status_code == 422
    assert unknown.json()["errors"][0] == {
        "resource": "Issue",
        "field": "milestone",
        "code": "invalid",
        "value": 42,
    }
    too_long = s.post(api(fake, "/issues"), json={"title": "big", "body": "x" * 65537})
    assert too_long.status_code == 422
    assert s.delete(api(fake, "/issues/1")).status_code == 404  # issues cannot be deleted
    assert fake.problems(requests_too=False) == []


def test_comments_bump_the_issue_and_support_since(clocked, clock):
    """Comments list by issue and repository-wide with since; a new comment bumps updated_at."""
    _, s = seeded(clocked)
    s.post(api(clocked, "/issues"), json={"title": "one"})
    s.post(api(clocked, "/issues/1/comments"), json={"body": "early"})
    clock.advance(3600)
    later = s.post(api(clocked, "/issues/1/comments"), json={"body": "late"}).json()
    assert later["created_at"] == iso(T0 + timedelta(hours=1))
    assert s.get(api(clocked, "/issues/1")).json()["updated_at"] == iso(T0 + timedelta(hours=1))
    since = {"since": iso(T0 + timedelta(minutes=30))}
    assert [c["body"] for c in s.get(api(clocked, "/issues/1/comments"), params=since).json()] == [
        "late"
    ]
    assert [c["body"] for c in s.get(api(clocked, "/issues/comments"), params=since).json()] == [
        "late"
    ]
    newest = s.get(
        api(clocked, "/issues/comments"), params={"sort": "created", "direction": "desc"}
    )
    assert [c["body"] for c in newest.json()] == ["late", "early"]
    assert s.post(api(clocked, "/issues/7/comments"), json={"body": "x"}).status_code == 404
    clocked.assert_clean()


def test_since_compares_updated_at(clocked, clock):
    """Issues since T returns the ones updated at or after T, PRs included."""
    _, s = seeded(clocked)
    s.post(api(clocked, "/issues"), json={"title": "old"})
    s.post(api(clocked, "/issues"), json={"title": "touched"})
    clock.advance(600)
    s.patch(api(clocked, "/issues/2"), json={"body": "edited"})
    s.post(api(clocked, "/pulls"), json={"title": "pr", "head": "feature", "base": "main"})
    found = s.get(api(clocked, "/issues"), params={"since": iso(T0 + timedelta(minutes=10))})
    assert sorted(i["number"] for i in found.json()) == [2, 3]
    bad = s.get(api(clocked, "/issues"), params={"since": "yesterday"})
    assert bad.status_code == 422
    assert clocked.problems(requests_too=False) == []


def test_pagination_link_header_in_githubs_format(fake):
    """per_page/page with next/last/first/prev links; no link on a single page; max 100."""
    _, s = seeded(fake)
    for n in range(75):
        fake.state.add_label(REPO, f"label-{n:02d}")
    url = api(fake, "/labels")
    first = s.get(url, params={"per_page": 30})
    assert len(first.json()) == 30
    assert first.headers["link"] == (
        f'<{url}?per_page=30&page=2>; rel="next", <{url}?per_page=30&page=3>; rel="last"'
    )
    middle = s.get(first.links["next"]["url"])
    assert middle.headers["link"] == (
        f'<{url}?per_page=30&page=1>; rel="prev", <{url}?per_page=30&page=3>; rel="next", '
        f'<{url}?per_page=30&page=3>; rel="last", <{url}?per_page=30&page=1>; rel="first"'
    )
    last = s.get(middle.links["next"]["url"])
    assert len(last.json()) == 15
    assert set(last.links) == {"prev", "first"}
    assert len(s.get(url).json()) == 30  # default per_page
    big = s.get(url, params={"per_page": 1000})
    assert len(big.json()) == 75
    assert "link" not in big.headers
    fake.assert_clean()


def test_etag_304_is_free_and_per_token(fake):
    """If-None-Match gives a free 304; ETags differ per token and change with the content."""
    _token, s = seeded(fake)
    url = api(fake, "/labels")
    first = s.get(url)
    etag = first.headers["etag"]
    assert etag.startswith('W/"')
    used = int(first.headers["x-ratelimit-used"])
    again = s.get(url, headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert int(again.headers["x-ratelimit-used"]) == used
    other = fake.session(fake.add_token("acme"))
    assert other.get(url, headers={"If-None-Match": etag}).status_code == 200
    s.post(url, json={"name": "new"})
    assert s.get(url, headers={"If-None-Match": etag}).status_code == 200
    log = fake.requests_log
    assert log.not_modified_count() == 1
    assert log.primary_count() == len(log) - 1
    fake.assert_clean()


# -- pull requests, reviews, review comments ---------------------------------------------------


def test_pull_request_rules(fake):
    """head/base must exist; no empty or duplicate PRs; refs/pull/N/head; merged is read-only."""
    _, s = seeded(fake)
    url = api(fake, "/pulls")
    assert s.post(url, json={"title": "t", "head": "nope", "base": "main"}).status_code == 422
    assert s.post(url, json={"title": "t", "head": "feature", "base": "nope"}).status_code == 422
    empty = s.post(url, json={"title": "t", "head": "main", "base": "feature"})
    assert empty.status_code == 422
    assert empty.json()["errors"][0]["message"] == "No commits between feature and main"
    made = s.post(url, json={"title": "t", "head": "acme:feature", "base": "main", "draft": True})
    assert made.status_code == 201
    pr = made.json()
    assert (pr["head"]["ref"], pr["base"]["ref"], pr["draft"], pr["commits"]) == (
        "feature",
        "main",
        True,
        1,
    )
    again = s.post(url, json={"title": "t2", "head": "feature", "base": "main"})
    assert again.status_code == 422
    assert "already exists" in again.json()["errors"][0]["message"]
    git_dir = fake.state.git_dir(REPO)
    assert refs(git_dir)["refs/pull/1/head"] == pr["head"]["sha"]
    edited = s.patch(url + "/1", json={"title": "Renamed", "merged": True}).json()
    assert (edited["title"], edited["merged"]) == ("Renamed", False)
    fake.state.merge_pull(REPO, 1, merged_by="acme")
    merged = s.get(url + "/1").json()
    assert merged["merged"]
    assert merged["state"] == "closed"
    assert merged["merge_commit_sha"]
    assert refs(git_dir)["refs/heads/main"] == merged["merge_commit_sha"]
    assert s.patch(url + "/1", json={"state": "open"}).status_code == 422
    assert s.get(url).json() == []  # default state=open
    assert len(s.get(url, params={"state": "closed"}).json()) == 1
    assert fake.problems(requests_too=False) == []


def test_reviews_states_and_rules(fake):
    """Events give submitted states, no event PENDING; self-approval and a second pending fail."""
    fake.state.create_repo(REPO, auto_init=True, collaborators=["rita"])
    commit_on(fake.state.git_dir(REPO), "refs/heads/feature", "feature work")
    author = fake.session(fake.add_token("acme"))
    reviewer = fake.session(fake.add_token("rita"))
    author.post(api(fake, "/pulls"), json={"title": "t", "head": "feature", "base": "main"})
    url = api(fake, "/pulls/1/reviews")
    states = []
    for event in ("APPROVE", "REQUEST_CHANGES", "COMMENT"):
        reply = reviewer.post(url, json={"event": event, "body": f"{event} it"})
        assert reply.status_code == 200
        states.append(reply.json()["state"])
        assert "submitted_at" in reply.json()
    assert states == ["APPROVED", "CHANGES_REQUESTED", "COMMENTED"]
    pending = reviewer.post(url, json={"body": "draft"}).json()
    assert pending["state"] == "PENDING"
    assert "submitted_at" not in pending
    second = reviewer.post(url, json={"body": "draft 2"})
    assert second.status_code == 422
    assert second.json()["errors"] == ["User can only have one pending review per pull request"]
    own = author.post(url, json={"event": "APPROVE"})
    assert own.status_code == 422
    assert len(reviewer.get(url).json()) == 4
    assert len(author.get(url).json()) == 3  # others' pending reviews are hidden
    updated = reviewer.put(f"{url}/{pending['id']}", json={"body": "final words"})
    assert updated.json()["body"] == "final words"
    assert reviewer.put(f"{url}/999", json={"body": "x"}).status_code == 404
    no_body = reviewer.put(f"{url}/{pending['id']}", json={})
    assert no_body.status_code == 422
    assert no_body.json()["errors"] == ['"body" wasn\'t supplied.']
    assert fake.problems(requests_too=False) == []


def test_review_comments_replies_and_placement(fake):
    """Comments land on diff lines; off-diff paths/lines are 422; replies carry in_reply_to_id."""
    _, s = seeded(fake)
    head = s.post(
        api(fake, "/pulls"), json={"title": "t", "head": "feature", "base": "main"}
    ).json()["head"]["sha"]
    url = api(fake, "/pulls/1/comments")
    spec = {
        "body": "nit",
        "commit_id": head,
        "path": "feature_work.txt",
        "line": 1,
        "side": "RIGHT",
    }
    made = s.post(url, json=spec).json()
    assert (made["line"], made["side"], made["path"], made["position"]) == (
        1,
        "RIGHT",
        "feature_work.txt",
        1,
    )
    assert made["diff_hunk"].startswith("@@ -0,0 +1 @@")
    assert made["pull_request_review_id"]
    off_path = s.post(url, json={**spec, "path": "README.md"})
    assert off_path.status_code == 422
    assert off_path.json()["errors"][0]["field"] == "pull_request_review_thread.path"
    off_line = s.post(url, json={**spec, "line": 9})
    assert off_line.json()["errors"][0]["field"] == "pull_request_review_thread.line"
    reply = s.post(f"{url}/{made['id']}/replies", json={"body": "fixed"}).json()
    assert (reply["in_reply_to_id"], reply["path"], reply["line"]) == (
        made["id"],
        "feature_work.txt",
        1,
    )
    # The description requires commit_id and path even though a reply ignores them.
    nested = s.post(url, json={**spec, "body": "thanks", "in_reply_to": reply["id"]}).json()
    assert nested["in_reply_to_id"] == made["id"]
    assert s.post(f"{url}/999/replies", json={"body": "x"}).status_code == 404
    assert [c["body"] for c in s.get(url).json()] == ["nit", "fixed", "thanks"]
    assert (
        len(s.get(api(fake, "/pulls/comments"), params={"since": made["created_at"]}).json()) == 3
    )
    assert fake.problems(requests_too=False) == []


# -- releases and assets -----------------------------------------------------------------------


def test_an_upload_whose_body_ends_early_leaves_no_asset(fake):
    """A client that goes away mid-body (an upload stopped by its sender): the uploads
    host keeps nothing of it, and a whole upload of the name then succeeds."""
    token, s = seeded(fake)
    release = s.post(api(fake, "/releases"), json={"tag_name": "v2.0"}).json()
    upload = release["upload_url"].split("{")[0]
    send_cut_short(
        "POST", f"{upload}?name=big.bin", f"token {token}", declared=1024 * 1024, sent=100_000
    )
    assert any(r.host == "uploads" for r in fake.requests_log.records), "the request crashed"
    assert fake.state.assets(REPO, release["id"]) == []
    whole = s.post(
        upload,
        params={"name": "big.bin"},
        data=b"y" * 1000,
        headers={"Content-Type": "application/octet-stream"},
    )
    assert whole.status_code == 201
    assert [a.size for a in fake.state.assets(REPO, release["id"])] == [1000]
    fake.assert_clean()  # the client's going away is no server error


def test_releases_and_assets(fake):
    """Publishing tags the commit; assets go to the uploads host, refuse duplicates, download."""
    _, s = seeded(fake)
    release = s.post(
        api(fake, "/releases"), json={"tag_name": "v2.0", "target_commitish": "feature"}
    ).json()
    assert release["upload_url"].startswith(f"{fake.uploads_url}/repos/{REPO}/releases/")
    assert release["upload_url"].endswith("/assets{?name,label}")
    git_dir = fake.state.git_dir(REPO)
    assert refs(git_dir)["refs/tags/v2.0"] == refs(git_dir)["refs/heads/feature"]
    dup = s.post(api(fake, "/releases"), json={"tag_name": "v2.0"})
    assert dup.json()["errors"][0]["code"] == "already_exists"
    upload_url = release["upload_url"].split("{")[0]
    data = os.urandom(300_000)
    asset = s.post(
        upload_url,
        params={"name": "my build.bin", "label": "Build"},
        data=data,
        headers={"Content-Type": "application/octet-stream"},
    ).json()
    assert (asset["name"], asset["state"], asset["size"], asset["label"]) == (
        "my.build.bin",
        "uploaded",
        len(data),
        "Build",
    )
    again = s.post(
        upload_url,
        params={"name": "my build.bin"},
        data=b"x",
        headers={"Content-Type": "text/plain"},
    )
    assert again.status_code == 422
    assert again.json()["errors"][0] == {
        "resource": "ReleaseAsset",
        "field": "name",
        "code": "already_exists",
    }
    assert (
        s.post(
            api(fake, f"/releases/{release['id']}/assets"), params={"name": "a"}, data=b"x"
        ).status_code
        == 404
    )
    download = s.get(
        api(fake, f"/releases/assets/{asset['id']}"), headers={"Accept": "application/octet-stream"}
    )
    assert download.status_code == 200
    assert download.content == data
    assert s.get(api(fake, f"/releases/assets/{asset['id']}")).json()["download_count"] == 1
    draft = s.post(api(fake, "/releases"), json={"tag_name": "v3.0", "draft": True}).json()
    assert draft["published_at"] is None
    assert "refs/tags/v3.0" not in refs(git_dir)
    reader = fake.session(fake.add_token("acme", write=False))
    assert [r["tag_name"] for r in reader.get(api(fake, "/releases")).json()] == ["v2.0"]
    assert reader.get(api(fake, f"/releases/{draft['id']}")).status_code == 404
    published = s.patch(api(fake, f"/releases/{draft['id']}"), json={"draft": False}).json()
    assert published["published_at"] is not None
    assert "refs/tags/v3.0" in refs(git_dir)
    assert fake.problems(requests_too=False) == []


def test_matching_refs(fake):
    """Prefix matching of heads and tags; an empty repository answers 409."""
    _, s = seeded(fake)
    fake.state.add_release(REPO, "v1")
    heads = s.get(api(fake, "/git/matching-refs/heads/feat")).json()
    assert [r["ref"] for r in heads] == ["refs/heads/feature"]
    assert heads[0]["object"]["type"] == "commit"
    assert [r["ref"] for r in s.get(api(fake, "/git/matching-refs/tags")).json()] == [
        "refs/tags/v1"
    ]
    fake.state.create_repo("acme/empty")
    assert s.get(f"{fake.api_url}/repos/acme/empty/git/matching-refs/heads").status_code == 409
    fake.assert_clean()


# -- rate limits -------------------------------------------------------------------------------


def test_primary_limit_headers_exhaustion_and_reset(clock):
    """Every response has x-ratelimit-*; a user's tokens share the quota; it resets hourly."""
    with GitHubFake(clock=clock, primary_limit=3) as server:
        _, s = seeded(server)
        second = server.session(server.add_token("acme"))
        first = s.get(api(server, ""))
        assert {
            k: first.headers[f"x-ratelimit-{k}"] for k in ("limit", "remaining", "used", "resource")
        } == {
            "limit": "3",
            "remaining": "2",
            "used": "1",
            "resource": "core",
        }
        reset = int(first.headers["x-ratelimit-reset"])
        assert reset == int((T0 + timedelta(hours=1)).timestamp())
        assert s.get(f"{server.api_url}/rate_limit").json()["rate"]["used"] == 1  # free
        second.get(api(server, ""))
        s.get(api(server, ""))
        refused = second.get(api(server, ""))
        assert refused.status_code == 403
        assert refused.headers["x-ratelimit-remaining"] == "0"
        assert refused.json()["message"].startswith("API rate limit exceeded for user ID")
        assert server.requests_log.primary_limited_count() == 1
        clock.advance(3600)
        assert s.get(api(server, "")).headers["x-ratelimit-remaining"] == "2"
        server.assert_clean()


def test_secondary_limit_on_content_creation(clock):
    """Too many creations get 403 "secondary rate limit" with retry-after; later they pass."""
    limits = SecondaryLimits(per_minute=3, per_hour=5)
    with GitHubFake(clock=clock, secondary=limits) as server:
        _, s = seeded(server)
        url = api(server, "/issues")
        assert [s.post(url, json={"title": f"t{n}"}).status_code for n in range(3)] == [201] * 3
        refused = s.post(url, json={"title": "too fast"})
        assert refused.status_code == 403
        assert "secondary rate limit" in refused.json()["message"]
        assert refused.headers["retry-after"] == "60"
        assert int(refused.headers["x-ratelimit-remaining"]) > 0
        assert s.get(url).status_code == 200  # reads are not content creation
        clock.advance(61)
        assert [s.post(url, json={"title": f"u{n}"}).status_code for n in range(3)] == [
            201,
            201,
            403,
        ]
        hourly = s.post(url, json={"title": "x"})
        assert int(hourly.headers["retry-after"]) > 3000
        log = server.requests_log
        assert (log.content_creating_count(), log.secondary_limited_count()) == (5, 3)
        assert len(server.state.issues(REPO)) == 5
        limits.status = 429
        assert s.post(url, json={"title": "y"}).status_code == 429
        limits.enabled = False
        assert s.post(url, json={"title": "z"}).status_code == 201
        server.assert_clean()


def test_accelerated_clock_passes_an_hour_quickly():
    """At 3600x one real second is a fake hour, so the primary window resets."""
    fast = accelerated_clock(3600)
    with GitHubFake(clock=fast, primary_limit=1) as server:
        _, s = seeded(server)
        assert s.get(api(server, "")).status_code == 200
        assert s.get(api(server, "")).status_code == 403
        time.sleep(1.1)
        assert s.get(api(server, "")).status_code == 200
        assert server.problems() == []


# -- GitHub App authentication -----------------------------------------------------------------


def test_app_jwt_exchange_and_bot_authorship(clocked, clock):
    """A valid JWT gets an installation token (1 h on the fake clock); content is the bot's."""
    seeded(clocked)
    app = clocked.install_app("acme")
    s = clocked.session(app.jwt())
    described = s.get(f"{clocked.api_url}/app").json()
    assert (described["slug"], described["installations_count"]) == ("reposync-test", 1)
    grant = s.post(f"{clocked.api_url}/app/installations/{app.installation.id}/access_tokens")
    assert grant.status_code == 201
    body = grant.json()
    assert body["expires_at"] == iso(T0 + timedelta(hours=1))
    assert body["repository_selection"] == "all"
    bot = clocked.session(body["token"])
    issue = bot.post(api(clocked, "/issues"), json={"title": "from the app"}).json()
    assert (issue["user"]["login"], issue["user"]["type"]) == ("reposync-test[bot]", "Bot")
    assert issue["performed_via_github_app"]["slug"] == "reposync-test"
    by_id = clocked.session(app.jwt(issuer=app.app.id))
    assert by_id.get(f"{clocked.api_url}/app").status_code == 200
    assert bot.get(f"{clocked.api_url}/app").status_code == 401
    missing = s.post(f"{clocked.api_url}/app/installations/1/access_tokens")
    assert missing.status_code == 404
    clocked.assert_clean()


@pytest.mark.parametrize(
    ("iat_offset", "lifetime", "message"),
    [
        (-1200, -60, "'Expiration time' claim ('exp') must be a numeric value"),
        (-60, 3600, "'Expiration time' claim ('exp') is too far in the future"),
        (300, 540, "'Issued at' claim ('iat') must be an Integer"),
    ],
)
def test_bad_jwts_are_refused(clocked, iat_offset, lifetime, message):
    """Expired, too long-lived and future-dated JWTs get 401 with GitHub's message."""
    app = clocked.install_app("acme")
    s = clocked.session(app.jwt(iat_offset=iat_offset, lifetime=lifetime))
    refused = s.post(f"{clocked.api_url}/app/installations/{app.installation.id}/access_tokens")
    assert refused.status_code == 401
    assert refused.json()["message"].startswith(message)
    clocked.assert_clean()


def test_jwt_signed_with_another_key_is_refused(clocked):
    """A signature that does not verify with the registered public key is 401."""
    app = clocked.install_app("acme")
    forged = make_app_jwt(generate_key_pair().private_pem, app.app.client_id, now=T0.timestamp())
    refused = clocked.session(forged).get(f"{clocked.api_url}/app")
    assert refused.status_code == 401
    assert refused.json()["message"] == "A JSON web token could not be decoded"
    clocked.assert_clean()


def test_installation_token_expires_after_an_hour(clocked, clock):
    """The token works until expires_at, then "Bad credentials"."""
    seeded(clocked)
    app = clocked.install_app("acme")
    s = clocked.session(clocked.installation_token(app))
    assert s.get(api(clocked, "")).status_code == 200
    clock.advance(3599)
    assert s.get(api(clocked, "")).status_code == 200
    clock.advance(1)
    expired = s.get(api(clocked, ""))
    assert (expired.status_code, expired.json()["message"]) == (401, "Bad credentials")
    clocked.assert_clean()


def test_installation_token_narrowing(clocked):
    """Tokens can be narrowed to repositories and permissions, never widened."""
    seeded(clocked)
    clocked.state.create_repo("acme/other", private=True)
    clocked.state.create_repo("zed/elsewhere")
    app: AppInstall = clocked.install_app(
        "acme", permissions={"metadata": "read", "issues": "write"}
    )
    s = clocked.session(app.jwt())
    url = f"{clocked.api_url}/app/installations/{app.installation.id}/access_tokens"
    narrowed = s.post(url, json={"repositories": ["widgets"], "permissions": {"issues": "read"}})
    assert narrowed.status_code == 201
    assert [r["full_name"] for r in narrowed.json()["repositories"]] == [REPO]
    token = clocked.session(narrowed.json()["token"])
    assert token.get(f"{clocked.api_url}/repos/acme/other").status_code == 404
    assert token.post(api(clocked, "/issues"), json={"title": "x"}).status_code == 403
    assert s.post(url, json={"repositories": ["elsewhere"]}).status_code == 422
    assert s.post(url, json={"permissions": {"contents": "write"}}).status_code == 422
    clocked.assert_clean()


def test_user_installations_listing(fake):
    """A person's token lists the app installations and repositories it can reach."""
    seeded(fake)
    fake.state.create_repo("acme/private-one", private=True)
    app = fake.install_app("acme", repositories=[REPO])
    s = fake.session(fake.add_token("acme"))
    listed = s.get(f"{fake.api_url}/user/installations").json()
    assert listed["total_count"] == 1
    assert listed["installations"][0]["id"] == app.installation.id
    repos = s.get(f"{fake.api_url}/user/installations/{app.installation.id}/repositories").json()
    assert [r["full_name"] for r in repos["repositories"]] == [REPO]
    assert repos["repositories"][0]["permissions"]["push"] is True
    stranger = fake.session(fake.add_token("eve"))
    assert stranger.get(f"{fake.api_url}/user/installations").json()["total_count"] == 0
    assert s.get(f"{fake.api_url}/user/installations/1/repositories").status_code == 404
    bot = fake.session(fake.installation_token(app))
    assert bot.get(f"{fake.api_url}/user/installations").status_code == 403
    fake.assert_clean()


# -- permissions -------------------------------------------------------------------------------


def test_authentication_and_permission_answers(fake):
    """401 for missing/bad credentials, 404 for hidden private repos, 403 for read-only writes."""
    seeded(fake, private=True)
    fake.state.create_repo("acme/public")
    anonymous = fake.session()
    hidden = anonymous.get(api(fake, ""))  # private: not there for an anonymous reader
    assert (hidden.status_code, hidden.json()["message"]) == (404, "Not Found")
    refused = anonymous.post(f"{fake.api_url}/repos/acme/public/issues", json={"title": "x"})
    assert (refused.status_code, refused.json()["message"]) == (401, "Requires authentication")
    assert fake.session("ghp_nope").get(api(fake, "")).json()["message"] == "Bad credentials"
    assert anonymous.get(f"{fake.api_url}/rate_limit").status_code == 401
    outsider = fake.session(fake.add_token("eve"))
    assert outsider.get(api(fake, "")).status_code == 404
    assert outsider.get(f"{fake.api_url}/repos/acme/public").status_code == 200
    denied = outsider.post(f"{fake.api_url}/repos/acme/public/issues", json={"title": "x"})
    assert denied.json()["message"] == "Resource not accessible by personal access token"
    reader = fake.session(fake.add_token("acme", write=False))
    assert reader.get(api(fake, "/issues")).status_code == 200
    assert reader.post(api(fake, "/labels"), json={"name": "x"}).status_code == 403
    narrow = fake.session(fake.add_token("acme", repositories=["acme/public"]))
    assert narrow.get(api(fake, "")).status_code == 404
    app = fake.install_app("acme", permissions={"metadata": "read", "issues": "read"})
    bot = fake.session(fake.installation_token(app))
    assert bot.get(api(fake, "/issues")).status_code == 200
    blocked = bot.post(api(fake, "/issues"), json={"title": "x"})
    assert (blocked.status_code, blocked.json()["message"]) == (
        403,
        "Resource not accessible by integration",
    )
    assert bot.get(api(fake, "/pulls")).status_code == 403
    version = fake.session(fake.add_token("acme"))
    version.headers["X-GitHub-Api-Version"] = "1999-01-01"
    assert version.get(api(fake, "")).status_code == 400
    assert fake.problems(requests_too=False) == []


# -- Git smart HTTP ----------------------------------------------------------------------------


def test_git_clone_and_push_with_installation_token(fake, tmp_path):
    """Clone and (atomic) push over HTTP with x-access-token; read-only tokens cannot push."""
    seeded(fake, private=True)
    app = fake.install_app("acme")
    token = fake.installation_token(app)
    work = tmp_path / "work"
    git("clone", "-q", fake.git_remote(REPO, token), str(work))
    (work / "new.txt").write_text("new\n")
    git("add", "new.txt", cwd=work)
    git("commit", "-q", "-m", "new file", cwd=work)
    git("push", "-q", "--atomic", "origin", "HEAD:main", "HEAD:refs/heads/topic", cwd=work)
    local = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    remote = refs(fake.state.git_dir(REPO))
    assert remote["refs/heads/main"] == remote["refs/heads/topic"] == local
    reader = fake.add_token("acme", write=False)
    git("remote", "set-url", "origin", fake.git_remote(REPO, reader), cwd=work)
    refused = git("push", "origin", "HEAD:refs/heads/other", cwd=work, check=False)
    assert refused.returncode != 0
    assert "403" in refused.stderr
    anonymous = git("ls-remote", fake.git_remote(REPO), check=False)
    assert anonymous.returncode != 0
    assert fake.state.repo(REPO).pushed_at is not None
    fake.assert_clean()


def test_refs_pull_are_hidden_from_push(fake, tmp_path):
    """Pushing refs/pull/N/head fails with "deny updating a hidden ref"; fetching them works."""
    token, s = seeded(fake)
    s.post(api(fake, "/pulls"), json={"title": "t", "head": "feature", "base": "main"})
    work = tmp_path / "work"
    git("clone", "-q", fake.git_remote(REPO, token), str(work))
    listed = git("ls-remote", "origin", cwd=work).stdout
    assert "refs/pull/1/head" in listed
    pushed = git("push", "origin", "HEAD:refs/pull/1/head", cwd=work, check=False)
    assert pushed.returncode != 0
    assert "deny updating a hidden ref" in pushed.stderr
    fake.assert_clean()


def test_push_moves_the_open_pull_request_head(fake, tmp_path):
    """A push to the head branch updates the PR's head sha and refs/pull/N/head."""
    token, s = seeded(fake)
    s.post(api(fake, "/pulls"), json={"title": "t", "head": "feature", "base": "main"})
    work = tmp_path / "work"
    git("clone", "-q", "-b", "feature", fake.git_remote(REPO, token), str(work))
    git("commit", "-q", "--allow-empty", "-m", "more", cwd=work)
    git("push", "-q", "origin", "feature", cwd=work)
    sha = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    assert s.get(api(fake, "/pulls/1")).json()["head"]["sha"] == sha
    assert refs(fake.state.git_dir(REPO))["refs/pull/1/head"] == sha
    fake.assert_clean()


# -- faults ------------------------------------------------------------------------------------


def test_fault_error_answers_without_doing_anything(fake):
    """An injected 502 leaves no trace in the state."""
    _, s = seeded(fake)
    rule = fake.faults.error("POST", r"/issues$", status=502)
    assert s.post(api(fake, "/issues"), json={"title": "lost"}).status_code == 502
    assert fake.state.issues(REPO) == []
    assert rule.hits == 1
    assert s.post(api(fake, "/issues"), json={"title": "kept"}).status_code == 201
    assert [r.fault for r in fake.requests_log.faults_fired()] == ["error"]
    fake.assert_clean()


def test_commit_then_drop_really_commits(fake):
    """The write happens although the client sees a 502 or a closed connection."""
    _, s = seeded(fake)
    fake.faults.commit_then_drop("POST", r"/issues$")
    assert s.post(api(fake, "/issues"), json={"title": "ghost"}).status_code == 502
    fake.faults.commit_then_drop("POST", r"/comments$", drop="close")
    with pytest.raises(requests.ConnectionError):
        s.post(api(fake, "/issues/1/comments"), json={"body": "ghost comment"})
    assert [i.title for i in fake.state.issues(REPO)] == ["ghost"]
    assert [c.body for c in fake.state.comments(REPO)] == ["ghost comment"]
    fake.assert_clean()


def test_timeout_and_latency_faults(fake):
    """A timeout fault commits then stalls past the client's timeout; latency only delays."""
    _, s = seeded(fake)
    fake.faults.timeout("POST", r"/labels$", seconds=1.5)
    with pytest.raises(requests.Timeout):
        s.post(api(fake, "/labels"), json={"name": "slow"}, timeout=0.3)
    assert [lb.name for lb in fake.state.labels(REPO)] == ["slow"]
    fake.faults.latency("GET", r"/labels$", seconds=0.3)
    started = time.monotonic()
    assert s.get(api(fake, "/labels")).status_code == 200
    assert time.monotonic() - started >= 0.3
    fake.assert_clean()


def test_fault_probability_is_reproducible(fake):
    """A seeded probability fires on the same requests every run, up to its count."""
    _, s = seeded(fake)

    def pattern(seed: int) -> list[int]:
        fake.faults.clear()
        fake.faults.error("GET", r"/labels$", status=503, count=None, probability=0.5, seed=seed)
        return [s.get(api(fake, "/labels")).status_code for _ in range(12)]

    first = pattern(7)
    assert first == pattern(7)
    assert set(first) == {200, 503}
    fake.faults.clear()
    fake.faults.error("GET", r"/labels$", status=500, count=2)
    assert [s.get(api(fake, "/labels")).status_code for _ in range(3)] == [500, 500, 200]
    fake.assert_clean()


def test_a_fault_after_n_strikes_the_next_matching_request_only(fake):
    """``after``: the first N matching requests pass untouched, the (N+1)th is struck,
    and requests the rule does not match never count towards N."""
    _, s = seeded(fake)
    rule = fake.faults.error("POST", r"/labels$", status=503, after=2)
    codes = [s.post(api(fake, "/labels"), json={"name": f"l{n}"}).status_code for n in range(2)]
    assert s.get(api(fake, "/labels")).status_code == 200  # not matched: not counted
    codes += [s.post(api(fake, "/labels"), json={"name": f"l{n}"}).status_code for n in (2, 3)]
    assert codes == [201, 201, 503, 201]
    assert (rule.passed, rule.hits) == (2, 1)
    assert sorted(lb.name for lb in fake.state.labels(REPO)) == ["l0", "l1", "l3"]
    fake.assert_clean()


def test_git_push_commit_then_drop(fake, tmp_path):
    """A push whose response is lost still updated the branch."""
    token, _ = seeded(fake)
    work = tmp_path / "work"
    git("clone", "-q", fake.git_remote(REPO, token), str(work))
    git("commit", "-q", "--allow-empty", "-m", "dropped", cwd=work)
    fake.faults.commit_then_drop("POST", r"git-receive-pack$", host="git")
    assert git("push", "origin", "HEAD:main", cwd=work, check=False).returncode != 0
    assert (
        refs(fake.state.git_dir(REPO))["refs/heads/main"]
        == git("rev-parse", "HEAD", cwd=work).stdout.strip()
    )
    fake.assert_clean()


# -- the log and the Python API ----------------------------------------------------------------


def test_requests_log_records_each_request(fake):
    """Records carry method, path, query, status, owner and the counting flags."""
    _, s = seeded(fake)
    s.get(api(fake, "/issues"), params={"state": "all"})
    s.post(api(fake, "/issues"), json={"title": "x"})
    fake.session().get(api(fake, ""))
    listed, created, anonymous = list(fake.requests_log)
    assert (listed.method, listed.path, listed.query, listed.status) == (
        "GET",
        f"/repos/{REPO}/issues",
        {"state": "all"},
        200,
    )
    assert (listed.token_owner, listed.counted_primary, listed.content_creating) == (
        "acme",
        True,
        False,
    )
    assert (created.status, created.content_creating) == (201, True)
    # An anonymous read of a public repository is served, on the anonymous quota.
    assert (anonymous.status, anonymous.token_owner, anonymous.counted_primary) == (
        200,
        None,
        True,
    )
    assert len(fake.requests_log.matching("POST", r"/issues$", owner="acme")) == 1
    fake.assert_clean()


def test_python_api_sets_what_the_rest_api_cannot(clocked):
    """Tests may set numbers, authors and timestamps; the API shows them back."""
    state = clocked.state
    state.create_repo(REPO, auto_init=True)
    commit_on(state.git_dir(REPO), "refs/heads/feature", "feature work")
    when = datetime(2020, 2, 3, 4, 5, 6, tzinfo=UTC)
    state.add_issue(REPO, "imported", number=41, author="dora", created_at=when)
    state.add_comment(REPO, 41, "old remark", author="ed", created_at=when)
    pr = state.add_pull(REPO, "old pr", head="feature", author="dora", created_at=when)
    assert pr.number == 42
    state.add_review(REPO, 42, author="ed", state="APPROVED", submitted_at=when)
    state.add_review_comment(REPO, 42, body="hm", path="feature_work.txt", line=1, author="ed")
    release = state.add_release(REPO, "v0.1", author="dora", created_at=when)
    state.add_asset(REPO, release.id, "notes.txt", b"hello", content_type="text/plain")
    state.merge_pull(REPO, 42, merged_by="ed", at=when + timedelta(days=1))
    s = clocked.session(clocked.add_token("acme"))
    issue = s.get(api(clocked, "/issues/41")).json()
    assert (issue["user"]["login"], issue["created_at"]) == ("dora", "2020-02-03T04:05:06Z")
    assert s.get(api(clocked, "/issues/41/comments")).json()[0]["user"]["login"] == "ed"
    merged = s.get(api(clocked, "/pulls/42")).json()
    assert (merged["merged_by"]["login"], merged["merged_at"]) == ("ed", "2020-02-04T04:05:06Z")
    assert s.get(api(clocked, "/pulls/42/reviews")).json()[0]["state"] == "APPROVED"
    assert s.get(api(clocked, "/pulls/42/comments")).json()[0]["body"] == "hm"
    assert s.get(api(clocked, "/releases")).json()[0]["assets"][0]["name"] == "notes.txt"
    assert s.post(api(clocked, "/issues"), json={"title": "next"}).json()["number"] == 43
    assert [i.number for i in state.issues(REPO)] == [41, 43]
    assert [p.number for p in state.pulls(REPO)] == [42]
    clocked.assert_clean()


def test_attach_records_violations_of_a_careless_client(fake):
    """The harness attached to a session catches a request the description does not allow."""
    _, _ = seeded(fake)
    recorder = RecordingValidator(fake.contract)
    session = requests.Session()
    session.headers["Authorization"] = f"token {fake.add_token('acme')}"
    attach(session, recorder)
    session.post(api(fake, "/labels"), json={"name": "ok"})
    assert recorder.violations == []
    session.post(api(fake, "/labels"), json={"name": ["not", "a", "string"]})
    assert len(recorder.violations) == 1
    assert "$.name" in str(recorder.violations[0])
    assert len(fake.request_violations) == 1
    assert fake.violations == []
