"""pyforgejo, a client generated from Forgejo's own description, drives the Forgejo test server.

The script is what a sync does with a Forgejo instance: the instance's limits, accounts,
repositories, labels, milestones, issues and pull requests on one index, comments and
reactions, review requests, reviews and their comments, merging, releases and their
attachments, refs, hooks, paging and Forgejo's error answers. Every call Forgejo answers
with success must succeed here, every error must be the one Forgejo gives, and the
server must record no contract violation while it runs (both sides: the server checks
what it receives and sends, the client's httpx hook what it sends and receives).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pyforgejo import PyforgejoApi
from pyforgejo.core.api_error import ApiError
from pyforgejo.core.request_options import RequestOptions

from tests.fakes.client_script import Script
from tests.fakes.forgejo import ForgejoFake
from tests.gitrepo import commit_on

OWNER, NAME = "acme", "widgets"
REPO = f"{OWNER}/{NAME}"
PULL = 3  # after issues 1 and 2: one index for both
#: pyforgejo retries a 409 with back-off; a conflict the script provokes is asked once.
ONCE: RequestOptions = {"max_retries": 0}
ORG = "acme-org"


def seed(fake: ForgejoFake) -> tuple[str, str]:
    """acme/widgets (a feature branch one commit ahead, bob a collaborator), an
    organization with a repository; tokens of acme and bob."""
    repo = fake.state.create_repo(REPO, auto_init=True)
    commit_on(repo.git_dir, "refs/heads/feature", "feature work")
    fake.state.add_collaborator(repo, "bob")
    fake.state.create_org(ORG, members=[OWNER])
    fake.state.create_repo(f"{ORG}/tools", auto_init=True)
    return fake.add_token(OWNER), fake.add_token("bob")


def client(fake: ForgejoFake, token: str) -> PyforgejoApi:
    return PyforgejoApi(base_url=fake.api_url, api_key=token, httpx_client=fake.httpx_client())


def status_of(error: pytest.ExceptionInfo[ApiError]) -> tuple[int | None, object]:
    return error.value.status_code, error.value.body


def run_script(fake: ForgejoFake, g: PyforgejoApi, bob: PyforgejoApi, s: Script) -> None:
    """Every call a sync makes, in the order it makes them."""
    # -- the instance and accounts --------------------------------------------------------
    with s.call("get_version"):
        assert g.miscellaneous.get_version().version.startswith("11.")
    with s.call("get_general_api_settings"):
        limits = g.settings.get_general_api_settings()
        assert (limits.max_response_items, limits.default_paging_num) == (50, 30)
    with s.call("user.get_current"):
        me = g.user.get_current()
        assert me.login == OWNER
        assert me.email == f"{OWNER}@noreply.forgejo.test"
    with s.call("user.get"):
        assert g.user.get(username="bob").login == "bob"
    with s.call("user.list_repos"):
        assert [r.full_name for r in g.user.list_repos(username=OWNER)] == [REPO]
    with s.call("user.current_list_repos"):
        mine = {r.full_name for r in g.user.current_list_repos()}
        assert {REPO, f"{ORG}/tools"} <= mine, mine
    with s.call("organization.org_get"):
        assert g.organization.org_get(org=ORG).username == ORG
    with s.call("organization.org_list_repos"):
        assert [r.name for r in g.organization.org_list_repos(org=ORG)] == ["tools"]
    with s.call("organization.create_org_repo"):
        made = g.organization.create_org_repo(org=ORG, name="mirror", auto_init=True)
        assert made.owner.login == ORG
        assert made.default_branch == "main"
    with s.call("repository.create_current_user_repo"):
        assert g.repository.create_current_user_repo(name="scratch", private=True).private
    with s.call("create_current_user_repo (exists): 409"):
        with pytest.raises(ApiError) as taken:
            g.repository.create_current_user_repo(name="scratch", request_options=ONCE)
        assert status_of(taken)[0] == 409
        assert "already exists" in str(status_of(taken)[1])

    # -- the repository -------------------------------------------------------------------
    with s.call("repository.repo_get"):
        repo = g.repository.repo_get(owner=OWNER, repo=NAME)
        assert repo.default_branch == "main"
        assert repo.permissions.push
    with s.call("repository.repo_edit"):
        edited = g.repository.repo_edit(owner=OWNER, repo=NAME, description="Kept in sync")
        assert edited.description == "Kept in sync"
    with s.call("repo_edit (default branch)"):
        assert (
            g.repository.repo_edit(owner=OWNER, repo=NAME, default_branch="feature").default_branch
            == "feature"
        )
        g.repository.repo_edit(owner=OWNER, repo=NAME, default_branch="main")
    with s.call("repo_get (missing): 404 APINotFound"):
        with pytest.raises(ApiError) as missing:
            g.repository.repo_get(owner=OWNER, repo="missing")
        code, body = status_of(missing)
        assert code == 404
        assert isinstance(body, dict)
        assert body["message"] == "The target couldn't be found."
        assert body["errors"] == []
    with s.call("repository.repo_list_all_git_refs"):
        refs = [r.ref for r in g.repository.repo_list_all_git_refs(owner=OWNER, repo=NAME)]
        assert {"refs/heads/main", "refs/heads/feature"} <= set(refs)
    with s.call("repository.repo_list_git_refs"):
        heads = g.repository.repo_list_git_refs(owner=OWNER, repo=NAME, ref="heads/feature")
        assert [r.ref for r in heads] == ["refs/heads/feature"]

    # -- labels and milestones ------------------------------------------------------------
    with s.call("issue.create_label"):
        bug = g.issue.create_label(owner=OWNER, repo=NAME, name="bug", color="#d73a4a")
        assert bug.color == "d73a4a"
    with s.call("create_label (no color): 422"):
        with pytest.raises(ApiError) as invalid:
            g.issue.create_label(owner=OWNER, repo=NAME, name="nameless", color="")
        assert status_of(invalid)[0] == 422
    with s.call("issue.list_labels"):
        triage = g.issue.create_label(owner=OWNER, repo=NAME, name="triage", color="ededed")
        assert [lb.name for lb in g.issue.list_labels(owner=OWNER, repo=NAME)] == ["bug", "triage"]
    with s.call("issue.get_label / edit_label / delete_label"):
        assert g.issue.get_label(owner=OWNER, repo=NAME, id=bug.id).name == "bug"
        assert (
            g.issue.edit_label(owner=OWNER, repo=NAME, id=bug.id, description="Broken").description
            == "Broken"
        )
        g.issue.delete_label(owner=OWNER, repo=NAME, id=triage.id)
    due = datetime(2026, 3, 1, 12, tzinfo=UTC)
    with s.call("issue.create_milestone"):
        ms = g.issue.create_milestone(owner=OWNER, repo=NAME, title="v1.0", due_on=due)
        assert ms.due_on == due
        assert ms.state == "open"
    with s.call("issue.get_milestones_list / get_milestone / edit_milestone"):
        assert [m.title for m in g.issue.get_milestones_list(owner=OWNER, repo=NAME)] == ["v1.0"]
        assert g.issue.get_milestone(owner=OWNER, repo=NAME, id=str(ms.id)).title == "v1.0"
        closed = g.issue.edit_milestone(owner=OWNER, repo=NAME, id=str(ms.id), state="closed")
        assert closed.state == "closed"
        assert closed.closed_at is not None
        g.issue.edit_milestone(owner=OWNER, repo=NAME, id=str(ms.id), state="open")
    with s.call("issue.delete_milestone"):
        scratch = g.issue.create_milestone(owner=OWNER, repo=NAME, title="scratch")
        assert scratch.due_on is None
        g.issue.delete_milestone(owner=OWNER, repo=NAME, id=str(scratch.id))

    # -- issues ---------------------------------------------------------------------------
    with s.call("issue.create_issue"):
        issue = g.issue.create_issue(
            owner=OWNER,
            repo=NAME,
            title="Crash on start",
            body="It crashes.",
            labels=[bug.id],
            milestone=ms.id,
            assignees=[OWNER],
        )
        assert issue.number == 1
        assert [lb.name for lb in issue.labels] == ["bug"]
        assert issue.user.login == OWNER
        assert issue.assignees[0].login == OWNER
    with s.call("create_issue (by a non-writer: no labels)"):
        outsider = client(fake, fake.add_token("carol", scopes=("write:issue",)))
        theirs = outsider.issue.create_issue(
            owner=OWNER, repo=NAME, title="Question", labels=[bug.id]
        )
        assert theirs.labels == []
        assert theirs.user.login == "carol"
    with s.call("create_issue (no title): 422"):
        with pytest.raises(ApiError) as untitled:
            g.issue.create_issue(owner=OWNER, repo=NAME, title="")
        assert status_of(untitled) == (
            422,
            {"message": "[Title]: Required", "url": fake.swagger_url},
        )
    with s.call("issue.get_issue"):
        assert g.issue.get_issue(owner=OWNER, repo=NAME, index=1).title == "Crash on start"
    with s.call("issue.edit_issue (state)"):
        shut = g.issue.edit_issue(owner=OWNER, repo=NAME, index=2, state="closed")
        assert shut.state == "closed"
        assert shut.closed_at is not None
    with s.call("issue.list_issues (type, state)"):
        everything = g.issue.list_issues(owner=OWNER, repo=NAME, state="all", type="issues")
        assert [i.number for i in everything] == [2, 1]  # the refused one took no number
    with s.call("list_issues (since)"):
        since = datetime(2000, 1, 1, tzinfo=UTC)
        assert [i.number for i in g.issue.list_issues(owner=OWNER, repo=NAME, since=since)] == [1]
    with s.call("issue labels: get/add/replace/remove/clear"):
        again = g.issue.create_label(owner=OWNER, repo=NAME, name="again", color="00ff00")
        assert [
            lb.name for lb in g.issue.add_label(owner=OWNER, repo=NAME, index=1, labels=["again"])
        ] == ["bug", "again"]
        assert [
            lb.id
            for lb in g.issue.replace_labels(owner=OWNER, repo=NAME, index=1, labels=[again.id])
        ] == [again.id]
        g.issue.remove_label(owner=OWNER, repo=NAME, index=1, identifier=str(again.id))
        assert g.issue.get_labels(owner=OWNER, repo=NAME, index=1) == []
        g.issue.add_label(owner=OWNER, repo=NAME, index=1, labels=[bug.id])
        g.issue.clear_labels(owner=OWNER, repo=NAME, index=1)
        assert g.issue.get_labels(owner=OWNER, repo=NAME, index=1) == []

    # -- comments and reactions -----------------------------------------------------------
    with s.call("issue.create_comment"):
        first = g.issue.create_comment(owner=OWNER, repo=NAME, index=1, body="Seen it.")
        assert first.user.login == OWNER
    with s.call("issue.get_comments / get_repo_comments"):
        bob.issue.create_comment(owner=OWNER, repo=NAME, index=1, body="Me too.")
        assert [c.body for c in g.issue.get_comments(owner=OWNER, repo=NAME, index=1)] == [
            "Seen it.",
            "Me too.",
        ]
        assert len(g.issue.get_repo_comments(owner=OWNER, repo=NAME)) == 2
    with s.call("issue.get_comment / edit_comment"):
        assert g.issue.get_comment(owner=OWNER, repo=NAME, id=first.id).body == "Seen it."
        assert (
            g.issue.edit_comment(owner=OWNER, repo=NAME, id=first.id, body="Seen.").body == "Seen."
        )
    with s.call("issue reactions: post (201, then 200) / get / delete"):
        heart = g.issue.post_issue_reaction(owner=OWNER, repo=NAME, index=1, content="heart")
        assert heart.content == "heart"
        g.issue.post_issue_reaction(owner=OWNER, repo=NAME, index=1, content="heart")
        assert [
            r.content for r in g.issue.get_issue_reactions(owner=OWNER, repo=NAME, index=1)
        ] == ["heart"]
        g.issue.delete_issue_reaction(owner=OWNER, repo=NAME, index=1, content="heart")
        assert g.issue.get_issue_reactions(owner=OWNER, repo=NAME, index=1) == []
    with s.call("comment reactions: post / get / delete"):
        g.issue.post_comment_reaction(owner=OWNER, repo=NAME, id=first.id, content="+1")
        assert [
            r.content for r in g.issue.get_comment_reactions(owner=OWNER, repo=NAME, id=first.id)
        ] == ["+1"]
        g.issue.delete_comment_reaction(owner=OWNER, repo=NAME, id=first.id, content="+1")
    with s.call("post_issue_reaction (not allowed): 403"):
        with pytest.raises(ApiError) as odd:
            g.issue.post_issue_reaction(owner=OWNER, repo=NAME, index=1, content="banana")
        assert status_of(odd)[0] == 403
    with s.call("issue.delete_comment"):
        g.issue.delete_comment(owner=OWNER, repo=NAME, id=first.id)
        assert len(g.issue.get_comments(owner=OWNER, repo=NAME, index=1)) == 1

    # -- pull requests and reviews --------------------------------------------------------
    with s.call("repository.repo_create_pull_request (shares the index)"):
        pull = bob.repository.repo_create_pull_request(
            owner=OWNER, repo=NAME, head="feature", base="main", title="Feature", body="Adds it."
        )
        assert pull.number == PULL
        assert pull.head.ref == "feature"
        assert pull.user.login == "bob"
    with s.call("create_pull_request (again): 409"):
        with pytest.raises(ApiError) as twice:
            bob.repository.repo_create_pull_request(
                owner=OWNER,
                repo=NAME,
                head="feature",
                base="main",
                title="Again",
                request_options=ONCE,
            )
        assert status_of(twice)[0] == 409
    with s.call("repository.repo_list_pull_requests / repo_get_pull_request"):
        assert [p.number for p in g.repository.repo_list_pull_requests(owner=OWNER, repo=NAME)] == [
            PULL
        ]
        assert g.repository.repo_get_pull_request(owner=OWNER, repo=NAME, index=PULL).mergeable
    with s.call("list_issues (type=pulls)"):
        assert [i.number for i in g.issue.list_issues(owner=OWNER, repo=NAME, type="pulls")] == [
            PULL
        ]
    with s.call("repository.repo_edit_pull_request"):
        assert (
            g.repository.repo_edit_pull_request(
                owner=OWNER, repo=NAME, index=PULL, title="Feature work"
            ).title
            == "Feature work"
        )
    with s.call("review requests: create / delete"):
        asked = bob.repository.repo_create_pull_review_requests(
            owner=OWNER, repo=NAME, index=PULL, reviewers=[OWNER]
        )
        assert asked[0].state == "REQUEST_REVIEW"
        assert [
            u.login
            for u in g.repository.repo_get_pull_request(
                owner=OWNER, repo=NAME, index=PULL
            ).requested_reviewers
        ] == [OWNER]
        bob.repository.repo_delete_pull_review_requests(
            owner=OWNER, repo=NAME, index=PULL, reviewers=[OWNER]
        )
        bob.repository.repo_create_pull_review_requests(
            owner=OWNER, repo=NAME, index=PULL, reviewers=[OWNER]
        )
    with s.call("repository.repo_create_pull_review (pending, with a comment)"):
        pending = g.repository.repo_create_pull_review(
            owner=OWNER,
            repo=NAME,
            index=PULL,
            body="",
            comments=[{"path": "feature_work.txt", "body": "Why?", "new_position": 1}],
        )
        assert pending.state == "PENDING"
        assert pending.comments_count == 1
    with s.call("review comments: list / create / get / delete"):
        found = g.repository.repo_get_pull_review_comments(
            owner=OWNER, repo=NAME, index=PULL, id=pending.id
        )
        assert found[0].path == "feature_work.txt"
        assert found[0].diff_hunk.startswith("@@")
        extra = g.repository.repo_create_pull_review_comment(
            owner=OWNER,
            repo=NAME,
            index=PULL,
            id=pending.id,
            path="feature_work.txt",
            body="And?",
            new_position=1,
        )
        assert (
            g.repository.repo_get_pull_review_comment(
                owner=OWNER, repo=NAME, index=PULL, id=pending.id, comment=extra.id
            ).body
            == "And?"
        )
        g.repository.repo_delete_pull_review_comment(
            owner=OWNER, repo=NAME, index=PULL, id=pending.id, comment=extra.id
        )
    with s.call("repository.repo_submit_pull_review"):
        done = g.repository.repo_submit_pull_review(
            owner=OWNER, repo=NAME, index=PULL, id=pending.id, event="APPROVED", body="Fine."
        )
        assert done.state == "APPROVED"
        assert done.official
        assert (
            g.repository.repo_get_pull_request(
                owner=OWNER, repo=NAME, index=PULL
            ).requested_reviewers
            == []
        )
    with s.call("repo_create_pull_review (own pull, approve): 422"):
        with pytest.raises(ApiError) as own:
            bob.repository.repo_create_pull_review(
                owner=OWNER, repo=NAME, index=PULL, event="APPROVED"
            )
        assert status_of(own)[0] == 422
    with s.call("reviews: list / get / dismiss / undismiss / delete"):
        assert [
            r.state for r in g.repository.repo_list_pull_reviews(owner=OWNER, repo=NAME, index=PULL)
        ] == ["APPROVED"]
        assert (
            g.repository.repo_get_pull_review(owner=OWNER, repo=NAME, index=PULL, id=done.id).body
            == "Fine."
        )
        assert g.repository.repo_dismiss_pull_review(
            owner=OWNER, repo=NAME, index=PULL, id=done.id, message="stale"
        ).dismissed
        assert not g.repository.repo_un_dismiss_pull_review(
            owner=OWNER, repo=NAME, index=PULL, id=done.id
        ).dismissed
        note = bob.repository.repo_create_pull_review(
            owner=OWNER, repo=NAME, index=PULL, event="COMMENT", body="Note."
        )
        bob.repository.repo_delete_pull_review(owner=OWNER, repo=NAME, index=PULL, id=note.id)
    with s.call("repo_pull_request_is_merged (not yet): 404"):
        with pytest.raises(ApiError) as unmerged:
            g.repository.repo_pull_request_is_merged(owner=OWNER, repo=NAME, index=PULL)
        assert status_of(unmerged)[0] == 404
    with s.call("repository.repo_merge_pull_request"):
        g.repository.repo_merge_pull_request(owner=OWNER, repo=NAME, index=PULL, do="merge")
        merged = g.repository.repo_get_pull_request(owner=OWNER, repo=NAME, index=PULL)
        assert merged.merged
        assert merged.state == "closed"
        assert merged.merged_by.login == OWNER
        g.repository.repo_pull_request_is_merged(owner=OWNER, repo=NAME, index=PULL)
    with s.call("repo_merge_pull_request (again): 405"):
        with pytest.raises(ApiError) as again_merge:
            g.repository.repo_merge_pull_request(owner=OWNER, repo=NAME, index=PULL, do="merge")
        assert status_of(again_merge)[0] == 405

    # -- releases and attachments ---------------------------------------------------------
    with s.call("repository.repo_create_release"):
        rel = g.repository.repo_create_release(
            owner=OWNER, repo=NAME, tag_name="v1.0", name="One", body="First."
        )
        assert rel.tag_name == "v1.0"
        assert rel.author.login == OWNER
    with s.call("create_release (tag taken): 409"):
        with pytest.raises(ApiError) as taken_tag:
            g.repository.repo_create_release(
                owner=OWNER, repo=NAME, tag_name="v1.0", request_options=ONCE
            )
        assert status_of(taken_tag)[0] == 409
    with s.call("releases: list / get / by tag / latest / edit"):
        assert [r.tag_name for r in g.repository.repo_list_releases(owner=OWNER, repo=NAME)] == [
            "v1.0"
        ]
        assert g.repository.repo_get_release(owner=OWNER, repo=NAME, id=rel.id).name == "One"
        assert g.repository.repo_get_release_by_tag(owner=OWNER, repo=NAME, tag="v1.0").id == rel.id
        assert g.repository.repo_get_latest_release(owner=OWNER, repo=NAME).id == rel.id
        assert (
            g.repository.repo_edit_release(
                owner=OWNER, repo=NAME, id=rel.id, body="The first."
            ).body
            == "The first."
        )
    with s.call("attachments: upload / list / get / edit / download / delete"):
        blob = b"\x00binary\xffbytes"
        asset = g.repository.repo_create_release_attachment(
            owner=OWNER, repo=NAME, id=rel.id, request=blob, name="w.bin"
        )
        assert asset.size == len(blob)
        assert [
            a.name
            for a in g.repository.repo_list_release_attachments(owner=OWNER, repo=NAME, id=rel.id)
        ] == ["w.bin"]
        assert (
            g.repository.repo_get_release_attachment(
                owner=OWNER, repo=NAME, id=rel.id, attachment_id=asset.id
            ).browser_download_url
            == asset.browser_download_url
        )
        renamed = g.repository.repo_edit_release_attachment(
            owner=OWNER, repo=NAME, id=rel.id, attachment_id=asset.id, name="widgets.bin"
        )
        assert renamed.name == "widgets.bin"
        assert fake.session().get(renamed.browser_download_url).content == blob
        g.repository.repo_delete_release_attachment(
            owner=OWNER, repo=NAME, id=rel.id, attachment_id=asset.id
        )
    with s.call("releases: delete / delete by tag"):
        g.repository.repo_delete_release_by_tag(owner=OWNER, repo=NAME, tag="v1.0")
        other = g.repository.repo_create_release(
            owner=OWNER, repo=NAME, tag_name="v2.0", draft=True
        )
        g.repository.repo_delete_release(owner=OWNER, repo=NAME, id=other.id)
        assert g.repository.repo_list_releases(owner=OWNER, repo=NAME) == []

    # -- hooks ----------------------------------------------------------------------------
    with s.call("hooks: create / list / get / edit / delete"):
        hook = g.repository.repo_create_hook(
            owner=OWNER,
            repo=NAME,
            type="forgejo",
            active=True,
            events=["push"],
            config={"url": "http://127.0.0.1:9/hook", "content_type": "json", "secret": "s"},
        )
        assert hook.type == "forgejo"
        assert hook.active
        assert [h.id for h in g.repository.repo_list_hooks(owner=OWNER, repo=NAME)] == [hook.id]
        assert g.repository.repo_get_hook(owner=OWNER, repo=NAME, id=hook.id).events == ["push"]
        assert not g.repository.repo_edit_hook(
            owner=OWNER, repo=NAME, id=hook.id, active=False
        ).active
        g.repository.repo_delete_hook(owner=OWNER, repo=NAME, id=hook.id)

    # -- paging and scopes ----------------------------------------------------------------
    with s.call("paging: limit, page, X-Total-Count, Link"):
        for n in range(12):
            fake.state.create_issue(REPO, f"Bulk {n}", author="bob")
        raw = g.issue.with_raw_response.list_issues(
            owner=OWNER, repo=NAME, state="all", limit=5, page=2
        )
        assert len(raw.data) == 5
        assert raw.headers["x-total-count"] == "15"
        assert 'rel="next"' in raw.headers["link"]
        assert 'rel="prev"' in raw.headers["link"]
    with s.call("a read-only token writing: 403 scope"):
        reader = client(fake, fake.add_token(OWNER, scopes=("read:issue", "read:repository")))
        with pytest.raises(ApiError) as scoped:
            reader.issue.create_issue(owner=OWNER, repo=NAME, title="Nope")
        assert status_of(scoped) == (
            403,
            {
                "message": "token does not have at least one of required scope(s): [write:issue]",
                "url": fake.swagger_url,
            },
        )


def test_pyforgejo_script_runs_clean_against_the_forgejo_test_server():
    """Every call of the script succeeds and neither side records a contract violation."""
    with ForgejoFake() as fake:
        token, bob_token = seed(fake)
        script = Script()
        run_script(fake, client(fake, token), client(fake, bob_token), script)
        assert not script.failed, "\n".join(script.failed)
        assert len(script.passed) >= 50
        fake.assert_clean(requests_too=False)
        # The script's only bad requests are the two it sends to get Forgejo's 422.
        refused = sorted(str(v).split(" [")[1].split("]")[0] for v in fake.request_violations)
        assert refused == ["issueCreateIssue", "issueCreateLabel"], refused
