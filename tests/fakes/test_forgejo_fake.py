"""The Forgejo test server's own behaviours: what Forgejo does that a client depends on."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import pytest
import requests

from tests.fakes.contract_forgejo import ForgejoContract
from tests.fakes.forge_server.clock import ManualClock
from tests.fakes.forgejo import ForgejoFake, forgejo_fake
from tests.gitrepo import commit_on

REPO = "acme/widgets"

fake = pytest.fixture(name="fake")(forgejo_fake)


def api(fake: ForgejoFake, path: str) -> str:
    return f"{fake.api_url}/repos/{REPO}{path}"


def seeded(fake: ForgejoFake, **token_args: object):
    repo = fake.state.create_repo(REPO, auto_init=True)
    commit_on(repo.git_dir, "refs/heads/feature", "feature work")
    token = fake.add_token("acme", **token_args)  # type: ignore[arg-type]
    return token, fake.session(token)


def test_issues_and_pull_requests_share_one_index(fake):
    """An issue, a pull request and another issue are numbered 1, 2, 3, and each list
    holds what its type says."""
    _, s = seeded(fake)
    first = s.post(api(fake, "/issues"), json={"title": "one"}).json()["number"]
    pull = s.post(api(fake, "/pulls"), json={"head": "feature", "base": "main", "title": "p"})
    third = s.post(api(fake, "/issues"), json={"title": "three"}).json()["number"]
    assert (first, pull.json()["number"], third) == (1, 2, 3)
    both = [i["number"] for i in s.get(api(fake, "/issues")).json()]
    only_issues = [i["number"] for i in s.get(api(fake, "/issues?type=issues")).json()]
    assert (both, only_issues) == ([3, 2, 1], [3, 1])
    assert s.get(api(fake, "/issues/2")).json()["pull_request"]["merged"] is False
    assert s.get(api(fake, "/pulls/1")).status_code == 404  # an issue is no pull request
    fake.assert_clean()


def test_paging_caps_at_max_response_items_with_forgejo_link_and_total(fake):
    """``limit`` is capped at /settings/api's max_response_items; X-Total-Count counts
    everything; Link lists next, last, first, prev in that order, comma-joined, with
    the query's keys sorted."""
    _, s = seeded(fake)
    for n in range(60):
        fake.state.create_label(REPO, f"label-{n:02}")
    assert s.get(f"{fake.api_url}/settings/api").json()["max_response_items"] == 50
    capped = s.get(api(fake, "/labels?limit=100"))
    assert (len(capped.json()), capped.headers["X-Total-Count"]) == (50, "60")
    middle = s.get(api(fake, "/labels?page=2&limit=20"))
    base = api(fake, "/labels")
    assert middle.headers["Link"] == ",".join(
        [
            f'<{base}?limit=20&page=3>; rel="next"',
            f'<{base}?limit=20&page=3>; rel="last"',
            f'<{base}?limit=20&page=1>; rel="first"',
            f'<{base}?limit=20&page=1>; rel="prev"',
        ]
    )
    default = s.get(api(fake, "/labels"))
    assert len(default.json()) == 30
    single = s.get(api(fake, "/labels?limit=50&page=2"))
    assert 'rel="next"' not in single.headers["Link"]
    fake.assert_clean()


def test_sudo_acts_as_the_named_user_only_for_an_admin_token(fake):
    """An admin's Sudo (header or query) writes as the named user; anyone else's is 403
    with Forgejo's words and no url; an unknown user is 404."""
    seeded(fake)
    fake.state.add_collaborator(REPO, "bob")
    admin = fake.session(fake.add_token("root", admin=True))
    made = admin.post(api(fake, "/issues"), json={"title": "as bob"}, headers={"Sudo": "bob"})
    assert (made.status_code, made.json()["user"]["login"]) == (201, "bob")
    via_query = admin.get(f"{fake.api_url}/user?sudo=bob").json()
    assert via_query["login"] == "bob"
    plain = fake.session(fake.add_token("mallory"))
    refused = plain.get(f"{fake.api_url}/user", headers={"Sudo": "bob"})
    assert (refused.status_code, refused.json()) == (
        403,
        {"message": "Only administrators allowed to sudo."},
    )
    assert admin.get(f"{fake.api_url}/user", headers={"Sudo": "nobody"}).status_code == 404
    fake.assert_clean()


def test_token_scopes_refuse_with_forgejo_words_before_the_repository_is_looked_up(fake):
    """read:issue reads issues but cannot write them or read the repository; the refusal
    names the scope needed, even for a repository that does not exist."""
    _, s = seeded(fake, scopes=("read:issue",))
    assert s.get(api(fake, "/issues")).status_code == 200
    write = s.post(api(fake, "/issues"), json={"title": "x"})
    assert (write.status_code, write.json()["message"]) == (
        403,
        "token does not have at least one of required scope(s): [write:issue]",
    )
    repo = s.get(f"{fake.api_url}/repos/acme/missing")
    assert repo.json()["message"].endswith("[read:repository]")
    write_scoped = fake.session(fake.add_token("acme", scopes=("write:issue",)))
    assert write_scoped.get(api(fake, "/labels")).status_code == 200  # write implies read
    fake.assert_clean()


@pytest.mark.parametrize(
    "header",
    ["token {t}", "Bearer {t}", "Basic {basic}"],
    ids=["token", "bearer", "basic"],
)
def test_every_credential_form_forgejo_takes_authenticates(fake, header):
    """``token``, ``Bearer`` and Basic with the token as password all reach /user."""
    token, _ = seeded(fake)
    basic = base64.b64encode(f"anyone:{token}".encode()).decode()
    s = fake.session()
    answer = s.get(
        f"{fake.api_url}/user", headers={"Authorization": header.format(t=token, basic=basic)}
    )
    assert (answer.status_code, answer.json()["login"]) == (200, "acme")
    fake.assert_clean()


def test_error_shapes_are_forgejo_s(fake):
    """404 is APINotFound with Forgejo's words, a missing token 401 "token is required",
    an unknown one 401 naming it, a bad body 422 naming the Go field."""
    _token, s = seeded(fake)
    missing = s.get(api(fake, "/issues/99"))
    assert missing.json() == {
        "message": "The target couldn't be found.",
        "url": fake.swagger_url,
        "errors": [],
    }
    anonymous = fake.session().post(api(fake, "/issues"), json={"title": "x"})
    assert (anonymous.status_code, anonymous.json()["message"]) == (401, "token is required")
    wrong = fake.session("f" * 40).get(f"{fake.api_url}/user")
    assert wrong.status_code == 401
    assert wrong.json()["message"] == f"access token does not exist [sha: {'f' * 40}]"
    bad = s.post(api(fake, "/milestones"), json={"title": "m", "state": "sideways"})
    assert bad.status_code == 422
    fake.assert_clean(requests_too=False)


def test_an_unmodelled_operation_is_501_naming_it_and_fails_assert_clean(fake):
    """An operation Forgejo has and the server does not model is 501 with its method and
    path template, never a 404 that reads as a missing resource; a path Forgejo does not
    have is its 404. The server records the first and ``assert_clean`` fails."""
    _token, s = seeded(fake)
    topics = s.get(api(fake, "/topics"))
    assert topics.status_code == 501
    assert topics.json()["message"] == (
        "GET /repos/{owner}/{repo}/topics is not modelled by the Forgejo test server"
    )
    assert s.get(api(fake, "/no-such-thing")).status_code == 404
    assert len(fake.unmodelled) == 1
    with pytest.raises(AssertionError, match="topics"):
        fake.assert_clean(requests_too=False)


def test_the_api_stamps_authors_and_times_the_python_state_may_set(fake):
    """A client cannot set an issue's author or time (the caller and the clock are
    taken), while the state API sets both, as a migration or the web UI would."""
    from datetime import UTC, datetime

    _, s = seeded(fake)
    made = s.post(api(fake, "/issues"), json={"title": "x", "user": {"login": "eve"}}).json()
    assert made["user"]["login"] == "acme"
    old = datetime(2020, 5, 1, 8, tzinfo=UTC)
    fake.state.create_issue(REPO, "imported", author="eve", created=old)
    imported = s.get(api(fake, "/issues/2")).json()
    assert (imported["user"]["login"], imported["created_at"]) == ("eve", "2020-05-01T08:00:00Z")
    fake.assert_clean()


def test_the_json_api_sends_no_etag_and_ignores_if_none_match(fake):
    """Forgejo's API answers every GET in full, whatever If-None-Match says, with its
    no-cache Cache-Control and no rate-limit headers."""
    _, s = seeded(fake)
    first = s.get(api(fake, ""))
    again = s.get(
        api(fake, ""),
        headers={
            "If-None-Match": '"anything"',
            "If-Modified-Since": "Wed, 21 Oct 2099 07:28:00 GMT",
        },
    )
    assert "ETag" not in first.headers
    assert again.status_code == 200
    assert first.headers["Cache-Control"] == "max-age=0, private, must-revalidate, no-transform"
    assert not [h for h in first.headers if h.lower().startswith("x-ratelimit")]
    fake.assert_clean()


def test_the_contract_catches_what_forgejo_would_not_send():
    """A response missing a listed field, a wrong type or an undescribed status breaks
    the contract, and so does a request with an unknown enum value."""
    contract = ForgejoContract(base_url="http://h")
    url = "http://h/api/v1/repos/a/b/labels/1"
    label = {
        "id": 1,
        "name": "bug",
        "exclusive": False,
        "is_archived": False,
        "color": "ededed",
        "description": "",
        "url": url,
    }
    json_type = {"content-type": "application/json"}
    ok = contract.response_problems("GET", url, 200, json_type, _body(label))
    assert ok == []
    missing = contract.response_problems(
        "GET", url, 200, json_type, _body({**label, "color": None} | {"name": 5})
    )
    assert any("name" in m for _, m in missing)
    partial = {k: v for k, v in label.items() if k != "exclusive"}
    assert any(
        "exclusive is missing" in m
        for _, m in contract.response_problems("GET", url, 200, json_type, _body(partial))
    )
    assert contract.response_problems("GET", url, 418, json_type, _body(label))[0][0] == "status"
    bad_state = contract.request_problems("GET", "http://h/api/v1/repos/a/b/issues?state=sideways")
    assert bad_state
    assert bad_state[0][0] == "parameter"


def _body(data: object) -> bytes:
    import json

    return json.dumps(data).encode()


def test_the_conftest_fixture_serves_forgejo_11_with_its_paging_limits(forgejo_fake):
    """The ``forgejo_fake`` fixture is a started instance that says it is Forgejo 11 and
    names its paging limits (the fixture checks the contract when the test ends)."""
    s = forgejo_fake.session()
    assert s.get(f"{forgejo_fake.api_url}/version").json()["version"].startswith("11.")
    limits = s.get(f"{forgejo_fake.api_url}/settings/api").json()
    assert (limits["default_paging_num"], limits["max_response_items"]) == (30, 50)


def test_date_is_the_server_s_own_clock():
    """``Date`` says the fake's clock (what its records are stamped with), not the wall's."""
    clock = ManualClock(datetime(2031, 3, 4, 5, 6, 7, tzinfo=UTC))
    with ForgejoFake(clock=clock) as fake:
        answer = requests.get(f"{fake.api_url}/version", timeout=10)
        assert parsedate_to_datetime(answer.headers["Date"]) == clock()
        clock.advance(90)
        answer = requests.get(f"{fake.api_url}/version", timeout=10)
        assert parsedate_to_datetime(answer.headers["Date"]) == clock()
        fake.assert_clean()


def test_a_pull_request_s_timeline_moves_its_update_time_as_forgejo_s_comments_do():
    """A review, a line comment of a submitted review, a dismissal and a review request
    each move the pull request's ``updated_at``; a pending review's comment does not."""
    clock = ManualClock(datetime(2030, 1, 1, tzinfo=UTC))
    with ForgejoFake(clock=clock) as fake:
        _, s = seeded(fake)
        fake.add_token("bob")
        fake.state.add_collaborator(REPO, "bob")
        number = s.post(
            api(fake, "/pulls"), json={"head": "feature", "base": "main", "title": "p"}
        ).json()["number"]

        def updated() -> str:
            return s.get(api(fake, f"/issues/{number}")).json()["updated_at"]

        moves = []
        clock.advance(60)
        s.post(api(fake, f"/pulls/{number}/requested_reviewers"), json={"reviewers": ["bob"]})
        moves.append(updated())
        clock.advance(60)
        pending = s.post(api(fake, f"/pulls/{number}/reviews"), json={"body": "draft"}).json()
        s.post(
            api(fake, f"/pulls/{number}/reviews/{pending['id']}/comments"),
            json={"path": "README.md", "body": "later", "new_position": 1},
        )
        moves.append(updated())
        clock.advance(60)
        review = s.post(
            api(fake, f"/pulls/{number}/reviews"), json={"body": "ok", "event": "COMMENT"}
        ).json()
        moves.append(updated())
        clock.advance(60)
        s.post(
            api(fake, f"/pulls/{number}/reviews/{review['id']}/comments"),
            json={"path": "README.md", "body": "nit", "new_position": 1},
        )
        moves.append(updated())
        assert moves == [
            "2030-01-01T00:01:00Z",
            "2030-01-01T00:01:00Z",  # the pending review's comment moved nothing
            "2030-01-01T00:03:00Z",
            "2030-01-01T00:04:00Z",
        ]
        fake.assert_clean()


def test_a_write_whose_answer_is_dropped_happened(fake):
    """``faults.commit_then_drop``: the create lands, the client gets no answer."""
    _, s = seeded(fake)
    fake.faults.commit_then_drop("POST", r"/labels$", drop="close")
    with pytest.raises(requests.ConnectionError):
        s.post(api(fake, "/labels"), json={"name": "lost", "color": "#ff0000"})
    names = [lb["name"] for lb in s.get(api(fake, "/labels")).json()]
    assert names == ["lost"]
    fake.assert_clean()


def test_a_branch_is_created_at_a_commit_once(fake):
    """POST /branches starts a branch at a commit id (or a branch); a second time is 409,
    an unknown start 404."""
    _, s = seeded(fake)
    head = s.get(api(fake, "/git/refs/heads/feature")).json()[0]["object"]["sha"]
    made = s.post(api(fake, "/branches"), json={"new_branch_name": "keep", "old_ref_name": head})
    assert (made.status_code, made.json()["name"], made.json()["commit"]["id"]) == (
        201,
        "keep",
        head,
    )
    again = s.post(api(fake, "/branches"), json={"new_branch_name": "keep", "old_ref_name": head})
    missing = s.post(
        api(fake, "/branches"), json={"new_branch_name": "x", "old_ref_name": "0" * 40}
    )
    assert (again.status_code, missing.status_code) == (409, 404)
    assert s.get(api(fake, "/git/refs/heads/keep")).json()[0]["object"]["sha"] == head
    fake.assert_clean()
