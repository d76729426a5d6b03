"""The GitHub test server at the protocol level (issue 10, "The GitHub test server").

Each test drives the server over HTTP with plain requests and the contract harness:
conditional requests by date, anonymous reads, error documentation links, the git refs
endpoints, the default branch, and GitHub Enterprise Server's single-host layout.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from tests.fakes.github import GitHubFake, ManualClock, github_fake
from tests.gitrepo import commit_on

REPO = "acme/widgets"
T0 = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)

fake = pytest.fixture(name="fake")(github_fake)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def clocked(clock: ManualClock) -> Iterator[GitHubFake]:
    with GitHubFake(clock=clock) as server:
        yield server
        server.assert_clean()


def api(server: GitHubFake, path: str = "") -> str:
    return f"{server.api_url}/repos/{REPO}{path}"


def seeded(server: GitHubFake, *, private: bool = False) -> requests.Session:
    """acme/widgets with main and feature (one commit ahead); the owner's session."""
    repo = server.state.create_repo(REPO, auto_init=True, private=private)
    commit_on(repo.git_dir, "refs/heads/feature", "feature work")
    return server.session(server.add_token("acme"))


def used(response: requests.Response) -> int:
    return int(response.headers["x-ratelimit-used"])


# -- conditional requests by date ---------------------------------------------------------------


def test_last_modified_and_if_modified_since_answer_a_free_304(clocked, clock):
    s = seeded(clocked)
    first = s.get(api(clocked))
    assert first.status_code == 200
    stamp = first.headers["last-modified"]
    assert stamp.endswith(" GMT")  # an HTTP date, as GitHub sends it
    clock.advance(5)

    same = s.get(api(clocked), headers={"If-Modified-Since": stamp})
    assert same.status_code == 304
    assert same.content == b""
    assert used(same) == used(first)  # conditional answers cost no quota
    assert clocked.requests_log.snapshot()[-1].not_modified

    clock.advance(60)
    assert s.patch(api(clocked), json={"description": "now described"}).status_code == 200
    changed = s.get(api(clocked), headers={"If-Modified-Since": stamp})
    assert changed.status_code == 200
    assert changed.json()["description"] == "now described"
    assert changed.headers["last-modified"] != stamp

    # If-None-Match decides when both are sent (RFC 9110): a stale ETag is a 200.
    both = s.get(api(clocked), headers={"If-Modified-Since": stamp, "If-None-Match": '"x"'})
    assert both.status_code == 200
    # Single resources carry Last-Modified; lists do not, as on GitHub.
    assert "last-modified" not in s.get(api(clocked, "/labels")).headers


# -- anonymous reads ---------------------------------------------------------------------------


def test_anonymous_reads_of_a_public_repository_are_served(fake):
    seeded(fake)
    fake.state.create_repo("acme/secret", private=True)
    anonymous = fake.session()

    repo = anonymous.get(api(fake))
    assert repo.status_code == 200
    assert "permissions" not in repo.json()  # nobody's permissions to show
    assert repo.headers["x-ratelimit-limit"] == "60"
    assert repo.headers["cache-control"].startswith("public")
    assert anonymous.get(api(fake, "/issues")).status_code == 200
    assert anonymous.get(api(fake, "/git/ref/heads/main")).status_code == 200
    again = anonymous.get(api(fake), headers={"If-None-Match": repo.headers["etag"]})
    assert again.status_code == 304

    hidden = anonymous.get(f"{fake.api_url}/repos/acme/secret")
    assert hidden.status_code == 404  # a private repository does not exist for anonymity
    write = anonymous.post(api(fake, "/issues"), json={"title": "drive-by"})
    assert write.status_code == 401
    assert write.json()["message"] == "Requires authentication"
    assert fake.state.issues(REPO) == []
    fake.assert_clean()


def test_anonymous_quota_is_sixty_an_hour(fake):
    seeded(fake)
    anonymous = fake.session()
    fake.limiter.set_limit("ip:127.0.0.1", 2)
    assert anonymous.get(api(fake, "/labels")).status_code == 200
    assert anonymous.get(api(fake, "/labels")).status_code == 200
    limited = anonymous.get(api(fake, "/labels"))
    assert limited.status_code == 403
    assert limited.json()["message"].startswith("API rate limit exceeded for 127.0.0.1.")
    assert limited.headers["x-ratelimit-remaining"] == "0"
    fake.assert_clean()


# -- error documentation links -------------------------------------------------------------------


def test_documentation_url_names_the_failed_operation(fake):
    s = seeded(fake)
    missing = s.get(f"{fake.api_url}/repos/acme/nothing").json()
    assert missing["documentation_url"] == (
        "https://docs.github.com/rest/repos/repos#get-a-repository"
    )
    invalid = s.post(api(fake, "/labels"), json={"name": "x", "color": "red"}).json()
    assert invalid["documentation_url"] == (
        "https://docs.github.com/rest/issues/labels#create-a-label"
    )
    gone_ref = s.delete(api(fake, "/git/refs/heads/nope")).json()
    assert gone_ref["documentation_url"] == (
        "https://docs.github.com/rest/git/refs#delete-a-reference"
    )
    bad = fake.session("not-a-token").get(api(fake))
    assert bad.status_code == 401
    assert bad.json()["documentation_url"] == "https://docs.github.com/rest"
    fake.assert_clean()
    # Errors of no operation link the REST overview, as GitHub's do (the request itself
    # is outside the contract: only the responses are checked).
    assert s.get(api(fake, "/wiki")).json()["documentation_url"] == "https://docs.github.com/rest"
    assert fake.problems(requests_too=False) == []


# -- git refs ------------------------------------------------------------------------------------


def test_git_refs_endpoints_answer_like_github(fake):
    s = seeded(fake)
    main = s.get(api(fake, "/git/ref/heads/main"))
    assert main.status_code == 200
    ref = main.json()
    assert ref["ref"] == "refs/heads/main"
    assert ref["object"]["type"] == "commit"
    main_sha = ref["object"]["sha"]
    feature_sha = s.get(api(fake, "/git/ref/heads%2Ffeature")).json()["object"]["sha"]
    # GET is exact (no prefix match) and 404 for a missing ref.
    assert s.get(api(fake, "/git/ref/heads/mai")).status_code == 404
    assert s.get(api(fake, "/git/ref/heads")).status_code == 404

    created = s.post(api(fake, "/git/refs"), json={"ref": "refs/heads/topic", "sha": main_sha})
    assert created.status_code == 201
    assert created.headers["location"] == created.json()["url"]
    again = s.post(api(fake, "/git/refs"), json={"ref": "refs/heads/topic", "sha": main_sha})
    assert (again.status_code, again.json()["message"]) == (422, "Reference already exists")
    unqualified = s.post(api(fake, "/git/refs"), json={"ref": "topic2", "sha": main_sha})
    assert unqualified.status_code == 422
    no_object = s.post(api(fake, "/git/refs"), json={"ref": "refs/heads/x", "sha": "0" * 40})
    assert (no_object.status_code, no_object.json()["message"]) == (422, "Object does not exist")

    moved = s.patch(api(fake, "/git/refs/heads/topic"), json={"sha": feature_sha})
    assert moved.status_code == 200  # a fast-forward
    assert moved.json()["object"]["sha"] == feature_sha
    back = s.patch(api(fake, "/git/refs/heads/topic"), json={"sha": main_sha})
    assert (back.status_code, back.json()["message"]) == (422, "Update is not a fast forward")
    forced = s.patch(api(fake, "/git/refs/heads/topic"), json={"sha": main_sha, "force": True})
    assert forced.status_code == 200
    missing = s.patch(api(fake, "/git/refs/heads/nope"), json={"sha": main_sha})
    assert (missing.status_code, missing.json()["message"]) == (422, "Reference does not exist")

    assert s.delete(api(fake, "/git/refs/heads/topic")).status_code == 204
    gone = s.delete(api(fake, "/git/refs/heads/topic"))
    assert (gone.status_code, gone.json()["message"]) == (422, "Reference does not exist")
    assert s.get(api(fake, "/git/ref/heads/topic")).status_code == 404

    fake.state.create_repo("acme/empty")
    empty = s.get(f"{fake.api_url}/repos/acme/empty/git/ref/heads/main")
    assert (empty.status_code, empty.json()["message"]) == (409, "Git Repository is empty.")
    fake.assert_clean()


def test_a_ref_created_through_the_api_moves_an_open_pull_request(fake):
    s = seeded(fake)
    pull = s.post(api(fake, "/pulls"), json={"title": "F", "head": "feature", "base": "main"})
    number = pull.json()["number"]
    repo = fake.state.repo(REPO)
    newer = commit_on(repo.git_dir, "refs/heads/scratch", "more work")
    fake.state.repo(REPO)  # the commit exists; the branch moves only through the API
    old = s.get(api(fake, "/git/ref/heads/feature")).json()["object"]["sha"]
    assert s.get(api(fake, f"/pulls/{number}")).json()["head"]["sha"] == old
    forced = s.patch(api(fake, "/git/refs/heads/feature"), json={"sha": newer, "force": True})
    assert forced.status_code == 200
    assert s.get(api(fake, f"/pulls/{number}")).json()["head"]["sha"] == newer
    fake.assert_clean()


# -- the default branch ------------------------------------------------------------------------


def head_of(git_dir: Path) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", "symbolic-ref", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_default_branch_is_the_bare_repositorys_head_and_patch_moves_it(fake):
    s = seeded(fake)
    git_dir = fake.state.git_dir(REPO)
    assert s.get(api(fake)).json()["default_branch"] == "main"

    changed = s.patch(api(fake), json={"default_branch": "feature"})
    assert changed.status_code == 200
    assert changed.json()["default_branch"] == "feature"
    assert head_of(git_dir) == "refs/heads/feature"  # what a clone checks out

    missing = s.patch(api(fake), json={"default_branch": "nope"})
    assert missing.status_code == 422
    assert missing.json()["errors"] == [
        {"resource": "Repository", "field": "default_branch", "code": "invalid"}
    ]
    assert head_of(git_dir) == "refs/heads/feature"

    fake.state.create_repo("acme/empty")
    empty = s.patch(f"{fake.api_url}/repos/acme/empty", json={"default_branch": "main"})
    assert empty.status_code == 422
    assert empty.json()["errors"][0]["code"] == "custom"

    fake.state.add_collaborator(REPO, "dave")
    collaborator = fake.session(fake.add_token("dave"))
    refused = collaborator.patch(api(fake), json={"default_branch": "main"})
    assert refused.status_code == 403
    assert refused.json()["message"] == "Must have admin rights to Repository."
    fake.assert_clean()


# -- GitHub Enterprise Server's single host --------------------------------------------------------


def test_enterprise_server_layout_serves_api_uploads_and_git_on_one_host(tmp_path):
    with GitHubFake(layout="ghes") as ghes:
        host = ghes.git_url
        assert ghes.api_url == host + "/api/v3"
        assert ghes.uploads_url == host + "/api/uploads"
        assert len({urlsplit(u).netloc for u in (ghes.api_url, ghes.uploads_url, host)}) == 1

        token = ghes.add_token("acme")
        s = seeded(ghes)
        repo = s.get(api(ghes)).json()
        assert repo["url"] == f"{ghes.api_url}/repos/{REPO}"
        assert repo["clone_url"] == f"{host}/{REPO}.git"
        release = s.post(api(ghes, "/releases"), json={"tag_name": "v1", "name": "One"}).json()
        assert release["upload_url"].startswith(f"{ghes.uploads_url}/repos/{REPO}/releases/")
        upload = s.post(
            release["upload_url"].split("{")[0],
            params={"name": "a.bin"},
            data=b"payload",
            headers={"Content-Type": "application/octet-stream"},
        )
        assert upload.status_code == 201
        assert s.get(f"{ghes.api_url}/repos/acme/nothing").status_code == 404
        # The API's paths are not served at the host root there (that is the web host).
        assert requests.get(f"{host}/repos/{REPO}", timeout=10).status_code == 404

        clone = tmp_path / "clone"
        subprocess.run(
            ["git", "clone", "-q", ghes.git_remote(REPO, token), str(clone)],
            check=True,
            capture_output=True,
        )
        assert (clone / "README.md").exists()
        records = [r for r in ghes.requests_log if r.host == "api"]
        assert {r.path for r in records} >= {f"/repos/{REPO}"}  # logged relative to the base
        ghes.assert_clean()
