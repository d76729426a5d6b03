"""Where real clients told the GitHub test server from GitHub (issue 22), and no longer can.

Each test here failed before: a bare JSON array of labels was refused, REST labels lacked
what GitHub's next description requires, classic tokens behaved as fine-grained ones,
PyGithub could not upload an asset on the github.com layout (nor download one from a
private repository), and an operation the server does not model was a 404 that read as
a missing resource.
"""

from __future__ import annotations

import io
import json

import pytest
import requests
from github import Auth, Github

from tests.fakes.contract import ContractViolation, GitHubContract
from tests.fakes.github import GitHubFake, github_fake
from tests.fakes.github.hosts import NAMED
from tests.gitrepo import commit_on

REPO = "acme/widgets"
JSON = {"content-type": "application/json"}

fake = pytest.fixture(name="fake")(github_fake)


def seeded(server: GitHubFake, *, private: bool = False) -> requests.Session:
    """acme/widgets with an issue; the owner's session (contract attached)."""
    server.state.create_repo(REPO, auto_init=True, private=private)
    server.state.add_issue(REPO, "Broken")
    return server.session(server.add_token("acme"))


def api(server: GitHubFake, path: str) -> str:
    return f"{server.api_url}/repos/{REPO}{path}"


# -- request bodies GitHub documents ------------------------------------------------------


def test_a_bare_array_of_label_names_adds_and_sets_an_issues_labels(fake):
    """POST and PUT …/labels take a bare JSON array of names (GitHub's text says so), PUT a
    single name, and PUT an empty array removes them all; no contract violation."""
    s = seeded(fake)
    added = s.post(api(fake, "/issues/1/labels"), json=["bug", "docs"])
    assert added.status_code == 200
    assert [lb["name"] for lb in added.json()] == ["bug", "docs"]
    replaced = s.put(api(fake, "/issues/1/labels"), json=["triage"])
    assert [lb["name"] for lb in replaced.json()] == ["triage"]
    single = s.put(api(fake, "/issues/1/labels"), json="wontfix")
    assert [lb["name"] for lb in single.json()] == ["wontfix"]
    cleared = s.put(api(fake, "/issues/1/labels"), json={"labels": []})
    assert (cleared.status_code, cleared.json()) == (200, [])
    assert s.put(api(fake, "/issues/1/labels"), json=["a"]).status_code == 200
    assert s.put(api(fake, "/issues/1/labels"), json=[]).json() == []
    assert fake.state.issue(REPO, 1).labels == []
    fake.assert_clean()


def test_the_contract_takes_the_label_bodies_github_documents_and_no_others():
    """The checker allows what GitHub's text documents for an issue's labels and still
    refuses what it does not: an empty list to add, numbers instead of names."""
    contract = GitHubContract()
    url = f"{contract.api_url}/repos/o/r/issues/1/labels"
    for method, body in (
        ("POST", ["bug"]),
        ("POST", [{"name": "bug"}]),
        ("POST", {"labels": ["bug"]}),
        ("PUT", ["bug"]),
        ("PUT", "bug"),
        ("PUT", []),
        ("PUT", {"labels": []}),
    ):
        contract.validate_request(method, url, JSON, json.dumps(body).encode())
    for method, body in (("POST", []), ("POST", [3]), ("PUT", [3]), ("PUT", 3)):
        with pytest.raises(ContractViolation):
            contract.validate_request(method, url, JSON, json.dumps(body).encode())


# -- response fields of GitHub's next description -----------------------------------------


def test_rest_labels_carry_archived_at_and_archived_by(fake):
    """Every label the REST API answers (alone, on an issue, on a pull request) has
    ``archived_at`` and ``archived_by`` (null: never archived), as githubkit requires."""
    s = seeded(fake)
    commit_on(fake.state.git_dir(REPO), "refs/heads/feature", "feature work")
    s.post(api(fake, "/labels"), json={"name": "bug"})
    s.post(api(fake, "/issues/1/labels"), json={"labels": ["bug"]})
    pull = s.post(api(fake, "/pulls"), json={"title": "F", "head": "feature", "base": "main"})
    s.post(api(fake, f"/issues/{pull.json()['number']}/labels"), json={"labels": ["bug"]})
    answers = [
        s.get(api(fake, "/labels/bug")).json(),
        *s.get(api(fake, "/labels")).json(),
        *s.get(api(fake, "/issues/1")).json()["labels"],
        *s.get(api(fake, "/issues/1/labels")).json(),
        *s.get(api(fake, f"/pulls/{pull.json()['number']}")).json()["labels"],
        *s.get(api(fake, "/pulls")).json()[0]["labels"],
    ]
    assert len(answers) == 6
    assert all((lb["archived_at"], lb["archived_by"]) == (None, None) for lb in answers)
    fake.assert_clean()


# -- classic and fine-grained tokens -------------------------------------------------------


def test_a_classic_token_is_answered_with_its_scopes(fake):
    """A ``ghp_`` token's answers carry X-OAuth-Scopes and X-Accepted-OAuth-Scopes; a
    ``github_pat_`` token's carry X-Accepted-GitHub-Permissions and no scopes."""
    seeded(fake)
    classic = fake.add_token("acme", scopes=("repo", "workflow"))
    fine = fake.add_token("acme", repositories=[REPO])
    assert classic.startswith("ghp_")
    assert fine.startswith("github_pat_")
    got = fake.session(classic).get(api(fake, ""))
    assert got.headers["X-OAuth-Scopes"] == "repo, workflow"
    assert got.headers["X-Accepted-OAuth-Scopes"] == "repo"
    assert "X-Accepted-GitHub-Permissions" not in got.headers
    user = fake.session(classic).get(f"{fake.api_url}/user")
    assert user.headers["X-Accepted-OAuth-Scopes"] == ""
    created = fake.session(fine).post(api(fake, "/labels"), json={"name": "bug"})
    assert created.status_code == 201
    assert created.headers["X-Accepted-GitHub-Permissions"] == "issues=write; pull_requests=write"
    assert "X-OAuth-Scopes" not in created.headers
    read = fake.session(fine).get(api(fake, ""))
    assert read.headers["X-Accepted-GitHub-Permissions"] == "metadata=read"
    fake.assert_clean()


def test_a_classic_tokens_scopes_decide_what_it_reaches(fake):
    """Without ``repo`` a classic token sees no private repository (404, as GitHub hides
    it) and writes to public ones only with ``public_repo``; with no scope at all it only
    reads public repositories (a write is 404 too, naming the scope it needs)."""
    fake.state.create_repo("acme/secret", private=True, auto_init=True)
    fake.state.create_repo(REPO, auto_init=True)
    bare = fake.session(fake.add_token("acme", scopes=()))
    public = fake.session(fake.add_token("acme", scopes=("public_repo",)))
    full = fake.session(fake.add_token("acme"))
    secret = f"{fake.api_url}/repos/acme/secret"
    assert full.get(secret).status_code == 200
    for session in (bare, public):
        assert session.get(secret).status_code == 404
        assert session.post(f"{secret}/issues", json={"title": "x"}).status_code == 404
    assert bare.get(api(fake, "")).status_code == 200
    refused = bare.post(api(fake, "/issues"), json={"title": "x"})
    assert (refused.status_code, refused.json()["message"]) == (404, "Not Found")
    assert refused.headers["X-OAuth-Scopes"] == ""
    assert refused.headers["X-Accepted-OAuth-Scopes"] == "repo"
    assert public.post(api(fake, "/issues"), json={"title": "x"}).status_code == 201
    mine = [r["full_name"] for r in bare.get(f"{fake.api_url}/user/repos").json()]
    assert mine == [REPO]
    fake.assert_clean()


# -- PyGithub's uploads and downloads on the github.com layout -------------------------------


def test_pygithub_uploads_and_downloads_a_private_asset_on_the_github_com_layout(fake, monkeypatch):
    """Through the named hosts PyGithub follows ``upload_url`` to uploads.github.test and
    the API's redirect to the download, which needs no credentials (PyGithub drops them
    for another host) because it is signed, as GitHub's storage URLs are."""
    for name, value in fake.client_proxy_env().items():
        monkeypatch.setenv(name, value)
    fake.state.create_repo(REPO, auto_init=True, private=True)
    g = Github(base_url=fake.client_api_url, auth=Auth.Token(fake.add_token("acme")))
    release = g.get_repo(REPO).create_git_release("v1", "One", "First")
    assert release.upload_url.startswith(NAMED.uploads)
    data = bytes(range(256)) * 40
    asset = release.upload_asset_from_memory(io.BytesIO(data), len(data), "one.bin")
    _, _, chunks = asset.download_asset(chunk_size=1024)
    assert b"".join(chunks) == data
    web = requests.Session()
    web.trust_env = False
    assert web.get(asset.browser_download_url, proxies={"http": fake.proxy_url}).status_code == 404
    fake.assert_clean()


def test_answers_name_the_host_the_request_was_addressed_to(fake):
    """By name (through the proxy port) every link is by name, pagination's too; at
    127.0.0.1 they stay there, for git, git-lfs and reposync's provider."""
    s = seeded(fake)
    fake.state.add_release(REPO, "v1")
    for n in range(3):
        fake.state.add_issue(REPO, f"More {n}")
    named = fake.session(fake.add_token("acme"))
    named.trust_env = False
    named.proxies = {"http": fake.proxy_url}
    repo = named.get(f"{NAMED.api}/repos/{REPO}").json()
    assert repo["url"] == f"{NAMED.api}/repos/{REPO}"
    assert repo["html_url"] == f"{NAMED.web}/{REPO}"
    release = named.get(f"{NAMED.api}/repos/{REPO}/releases/tags/v1").json()
    assert release["upload_url"].startswith(f"{NAMED.uploads}/repos/{REPO}/releases/")
    paged = named.get(f"{NAMED.api}/repos/{REPO}/issues", params={"per_page": 2})
    assert paged.links["next"]["url"].startswith(f"{NAMED.api}/repos/{REPO}/issues?")
    direct = s.get(api(fake, "")).json()
    assert direct["url"] == api(fake, "")
    unknown = named.get("http://elsewhere.test/")
    assert unknown.status_code == 502
    fake.assert_clean()


def test_ghes_streams_an_asset_from_the_api():
    """On GitHub Enterprise Server's one host the API answers ``application/octet-stream``
    with the asset's bytes (200), which GitHub's documentation allows."""
    with GitHubFake(layout="ghes") as server:
        s = seeded(server)
        release = server.state.add_release(REPO, "v1")
        asset = server.state.add_asset(REPO, release.id, "one.txt", b"one\n")
        got = s.get(
            api(server, f"/releases/assets/{asset.id}"),
            headers={"Accept": "application/octet-stream"},
            allow_redirects=False,
        )
        assert (got.status_code, got.content) == (200, b"one\n")
        assert asset.download_count == 1
        server.assert_clean()


# -- what the server does not model ---------------------------------------------------------


def test_an_unmodelled_operation_is_501_naming_it_and_fails_assert_clean(fake):
    """An operation GitHub has and the server does not model is 501 with its method and
    path template, never a 404; the server records it and ``assert_clean`` fails."""
    s = seeded(fake)
    runs = s.get(api(fake, "/actions/runs"))
    assert runs.status_code == 501
    assert runs.json()["message"] == (
        "GET /repos/{owner}/{repo}/actions/runs is not modelled by the GitHub test server"
    )
    assert len(fake.unmodelled) == 1
    with pytest.raises(AssertionError, match="actions/runs is not modelled"):
        fake.assert_clean()


def test_an_unmodelled_way_of_a_modelled_operation_is_501_too(fake):
    """Merging by squash (the merge button's other ways) is 501 as well, not a merge."""
    s = seeded(fake)
    commit_on(fake.state.git_dir(REPO), "refs/heads/feature", "feature work")
    s.post(api(fake, "/pulls"), json={"title": "F", "head": "feature", "base": "main"})
    squash = s.put(api(fake, "/pulls/2/merge"), json={"merge_method": "squash"})
    assert squash.status_code == 501
    assert "merge_method squash is not modelled" in squash.json()["message"]
    assert not fake.state.issue(REPO, 2).pull.merged
    assert fake.unmodelled != []


def test_a_path_github_does_not_have_is_its_404(fake):
    """A path in none of GitHub's descriptions is GitHub's 404 (and a request the
    contract does not describe), not the 501 of an unmodelled operation."""
    s = seeded(fake)
    assert s.get(api(fake, "/no-such-thing")).status_code == 404
    assert fake.unmodelled == []
    assert fake.request_violations != []
