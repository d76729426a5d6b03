"""The GitHub test server's pull-request family behaves like GitHub where reposync's
fidelity depends on it: which review a comment lands in, pending reviews and their
submission, review requests, merge status. Every exchange is checked against the
contract (``assert_clean``)."""

from __future__ import annotations

from tests.fakes.test_github_fake import REPO, api, fake, seeded

__all__ = ["fake"]


def _pull(server, s) -> tuple[int, str]:
    made = s.post(api(server, "/pulls"), json={"title": "F", "head": "feature", "base": "main"})
    assert made.status_code == 201
    return made.json()["number"], made.json()["head"]["sha"]


def test_a_single_comment_opens_its_own_review_and_create_review_keeps_its_comments(fake):
    _, s = seeded(fake)
    number, head = _pull(fake, s)
    single = s.post(
        api(fake, f"/pulls/{number}/comments"),
        json={"body": "alone", "commit_id": head, "path": "feature_work.txt", "line": 1},
    ).json()
    review = s.post(
        api(fake, f"/pulls/{number}/reviews"),
        json={
            "event": "COMMENT",
            "body": "two notes",
            "comments": [
                {"path": "feature_work.txt", "line": 1, "body": "one"},
                {"path": "feature_work.txt", "line": 1, "side": "RIGHT", "body": "two"},
            ],
        },
    ).json()

    reviews = s.get(api(fake, f"/pulls/{number}/reviews")).json()
    assert len(reviews) == 2  # the single comment's own review, and the one made whole
    assert single["pull_request_review_id"] not in (None, review["id"])
    inside = s.get(api(fake, f"/pulls/{number}/reviews/{review['id']}/comments")).json()
    assert sorted(c["body"] for c in inside) == ["one", "two"]
    fake.assert_clean()


def test_a_pending_review_is_its_authors_until_submitted(fake):
    _, s = seeded(fake)
    number, head = _pull(fake, s)
    pending = s.post(
        api(fake, f"/pulls/{number}/reviews"),
        json={"body": "draft", "comments": [{"path": "feature_work.txt", "line": 1, "body": "?"}]},
    ).json()
    assert pending["state"] == "PENDING"
    assert "submitted_at" not in pending
    other = fake.session(fake.add_token("octocat"))
    assert other.get(api(fake, f"/pulls/{number}/reviews")).json() == []
    assert other.get(api(fake, f"/pulls/{number}/comments")).json() == []
    # One pending review at a time; a single comment would open a second one.
    again = s.post(api(fake, f"/pulls/{number}/reviews"), json={"body": "more"})
    assert again.status_code == 422
    single = s.post(
        api(fake, f"/pulls/{number}/comments"),
        json={"body": "x", "commit_id": head, "path": "feature_work.txt", "line": 1},
    )
    assert single.status_code == 422

    path = f"/pulls/{number}/reviews/{pending['id']}/events"
    assert s.post(api(fake, path), json={"event": "APPROVE"}).status_code == 422  # own PR
    done = s.post(api(fake, path), json={"event": "COMMENT", "body": "final"})
    assert (done.status_code, done.json()["state"], done.json()["body"]) == (
        200,
        "COMMENTED",
        "final",
    )
    assert "submitted_at" in done.json()
    assert s.post(api(fake, path), json={"event": "COMMENT"}).status_code == 422  # not pending
    assert len(other.get(api(fake, f"/pulls/{number}/comments")).json()) == 1
    fake.assert_clean()


def test_review_requests_go_to_collaborators_and_a_review_answers_them(fake):
    _, s = seeded(fake)
    number, _ = _pull(fake, s)
    path = api(fake, f"/pulls/{number}/requested_reviewers")
    assert s.post(path, json={"reviewers": ["stranger"]}).status_code == 422
    assert s.post(path, json={"reviewers": ["acme"]}).status_code == 422  # the author
    fake.state.add_collaborator(REPO, "dave")
    asked = s.post(path, json={"reviewers": ["dave"]})
    assert asked.status_code == 201
    assert [u["login"] for u in asked.json()["requested_reviewers"]] == ["dave"]
    assert [u["login"] for u in s.get(path).json()["users"]] == ["dave"]
    dave = fake.session(fake.add_token("dave"))
    reviewed = dave.post(
        api(fake, f"/pulls/{number}/reviews"), json={"event": "APPROVE", "body": ""}
    )
    assert reviewed.status_code == 200
    assert s.get(path).json() == {"users": [], "teams": []}
    dropped = s.delete(path, json={"reviewers": ["nobody"]})  # not asked: nothing changes
    assert dropped.status_code == 200
    fake.assert_clean()


def test_merge_status_is_204_or_404(fake):
    _, s = seeded(fake)
    number, _ = _pull(fake, s)
    assert s.get(api(fake, f"/pulls/{number}/merge")).status_code == 404
    fake.state.merge_pull(REPO, number)
    merged = s.get(api(fake, f"/pulls/{number}/merge"))
    assert (merged.status_code, merged.content) == (204, b"")
    fake.assert_clean()


def test_merging_closes_the_pull_request_with_a_merge_commit_on_its_base(fake):
    """PUT …/merge makes the merge commit on the base branch and answers its sha; a stale
    ``sha`` is 409 and a second merge 405, as on GitHub."""
    _, s = seeded(fake)
    number, head = _pull(fake, s)
    stale = s.put(api(fake, f"/pulls/{number}/merge"), json={"sha": "0" * 40})
    assert (stale.status_code, stale.json()["message"]) == (
        409,
        "Head branch was modified. Review and try the merge again.",
    )
    merged = s.put(
        api(fake, f"/pulls/{number}/merge"), json={"sha": head, "commit_title": "Ship it"}
    )
    assert merged.status_code == 200
    sha = merged.json()["sha"]
    assert s.get(api(fake, "/git/ref/heads/main")).json()["object"]["sha"] == sha
    pull = s.get(api(fake, f"/pulls/{number}")).json()
    assert (pull["state"], pull["merged"], pull["merge_commit_sha"]) == ("closed", True, sha)
    assert s.get(api(fake, f"/pulls/{number}/merge")).status_code == 204
    again = s.put(api(fake, f"/pulls/{number}/merge"), json={})
    assert (again.status_code, again.json()["message"]) == (405, "Pull Request is not mergeable")
    fake.assert_clean()


def test_only_an_approval_or_a_change_request_can_be_dismissed(fake):
    """Dismissing an approval makes it DISMISSED; a commented review cannot be (422)."""
    _, s = seeded(fake)
    number, _ = _pull(fake, s)
    fake.state.add_collaborator(REPO, "dave")
    dave = fake.session(fake.add_token("dave"))
    approval = dave.post(api(fake, f"/pulls/{number}/reviews"), json={"event": "APPROVE"}).json()
    comment = dave.post(
        api(fake, f"/pulls/{number}/reviews"), json={"event": "COMMENT", "body": "Hm"}
    ).json()
    refused = s.put(
        api(fake, f"/pulls/{number}/reviews/{comment['id']}/dismissals"), json={"message": "x"}
    )
    assert refused.status_code == 422
    dismissed = s.put(
        api(fake, f"/pulls/{number}/reviews/{approval['id']}/dismissals"), json={"message": "Old"}
    )
    assert (dismissed.status_code, dismissed.json()["state"]) == (200, "DISMISSED")
    fake.assert_clean()


def test_only_a_pending_review_can_be_deleted_and_its_comments_go_with_it(fake):
    """DELETE of a pending review answers it and removes its comments; a submitted
    review stays (422)."""
    _, s = seeded(fake)
    number, _ = _pull(fake, s)
    pending = s.post(
        api(fake, f"/pulls/{number}/reviews"),
        json={"comments": [{"path": "feature_work.txt", "line": 1, "body": "draft"}]},
    ).json()
    deleted = s.delete(api(fake, f"/pulls/{number}/reviews/{pending['id']}"))
    assert (deleted.status_code, deleted.json()["id"]) == (200, pending["id"])
    assert fake.state.review_comments(REPO, number) == []
    done = s.post(api(fake, f"/pulls/{number}/reviews"), json={"event": "COMMENT", "body": "Ok"})
    kept = s.delete(api(fake, f"/pulls/{number}/reviews/{done.json()['id']}"))
    assert kept.status_code == 422
    fake.assert_clean()
