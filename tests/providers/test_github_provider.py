"""GitHubProvider against the GitHub test server: what only GitHub does.

The shared behaviour is in ``test_conformance.py``; here: App authentication and token
refresh, conditional re-listing, error mapping, renamed repositories, attributed headers,
pull request carriers, number placeholders and Git credentials. Every session is
contract-checked (``tests.github_env.checked_sessions``) and every test ends with no
violation on either side.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from reposync.errors import (
    ConfigurationError,
    GitCredentialsRefused,
    GitTransportError,
    InvalidConnection,
    InvalidLocator,
    PermissionDenied,
    ProblemType,
    RepositoryMismatch,
    RepositoryNotFound,
)
from reposync.providers.base import (
    EndpointSpec,
    ProviderEnvironment,
    SystemClock,
    TargetRef,
    WriteStatus,
)
from reposync.providers.github.provider import GitHubProvider
from reposync.sync.canonical import REF_TYPES, content_hash
from reposync.sync.vocabulary import ObjectType, Representation
from tests.fakes.contract import RecordingValidator
from tests.fakes.github import AppInstall, GitHubFake, ManualClock
from tests.github_env import checked_sessions, github_settings
from tests.providers.test_conformance import (
    comment_payload,
    create,
    issue_payload,
    label_payload,
    marker,
    merged_pull_payload,
    milestone_payload,
    release_payload,
    review_payload,
)

T = ObjectType
REPO = "acme/widgets"
T0 = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)
BOT = "reposync-test[bot]"
#: Every type an inventory reads through the REST API (Git refs, the wiki's too, go
#: through Git).
API_TYPES = [t for t in ObjectType if t not in REF_TYPES]


class FakeClock:
    """The provider's ``Clock`` over the test server's ManualClock: sleeping moves it."""

    def __init__(self, manual: ManualClock) -> None:
        self.manual = manual

    def now(self) -> datetime:
        return self.manual()

    def sleep(self, seconds: float) -> None:
        self.manual.advance(seconds)


class Connection:
    """One way to reach the test server: settings, a contract recorder, opened providers."""

    def __init__(self, fake: GitHubFake, env: ProviderEnvironment, recorder: RecordingValidator):
        self.fake = fake
        self.env = env
        self.recorder = recorder
        self.opened: list[GitHubProvider] = []

    def open(self, locator: str = REPO, repository_id: str | None = None) -> GitHubProvider:
        provider = GitHubProvider.open(EndpointSpec("github", locator, repository_id), self.env)
        self.opened.append(provider)
        return provider

    def assert_clean(self) -> None:
        self.recorder.assert_clean()
        self.fake.assert_clean()

    def close(self) -> None:
        for provider in self.opened:
            provider.close()


def pat_connection(fake: GitHubFake, data_dir: Path, token: str) -> Connection:
    recorder = RecordingValidator(fake.contract)
    settings = github_settings(fake, data_dir, token)
    env = ProviderEnvironment(settings=settings, http_session=checked_sessions(recorder))
    return Connection(fake, env, recorder)


def app_connection(
    fake: GitHubFake, data_dir: Path, install: AppInstall, clock: FakeClock | None = None
) -> Connection:
    key = data_dir / "app-key.pem"
    key.parent.mkdir(parents=True, exist_ok=True)
    key.write_bytes(install.keys.private_pem)
    recorder = RecordingValidator(fake.contract)
    settings = github_settings(
        fake,
        data_dir,
        "",
        github_app_id=str(install.app.id),
        github_app_private_key_path=str(key),
        github_installation_id=str(install.installation.id),
    )
    env = ProviderEnvironment(
        settings=settings,
        http_session=checked_sessions(recorder),
        clock=clock or SystemClock(),
    )
    return Connection(fake, env, recorder)


@pytest.fixture
def fake(github_fake: GitHubFake) -> GitHubFake:
    github_fake.state.create_repo(REPO, auto_init=True)
    return github_fake


@pytest.fixture
def conn(fake: GitHubFake, tmp_path: Path) -> Iterator[Connection]:
    """The owner's personal access token."""
    connection = pat_connection(fake, tmp_path / "data", fake.add_token("acme"))
    yield connection
    connection.close()


@pytest.fixture
def manual_clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def clocked(manual_clock: ManualClock) -> Iterator[GitHubFake]:
    """A test server on a hand-driven clock, with acme/widgets."""
    with GitHubFake(clock=manual_clock) as server:
        server.state.create_repo(REPO, auto_init=True)
        yield server
        server.assert_clean()


def exchanges(fake: GitHubFake) -> list:
    return fake.requests_log.matching("POST", r"/app/installations/\d+/access_tokens$")


# -- App authentication -------------------------------------------------------------------


def test_app_auth_exchanges_a_jwt_caches_the_token_and_refreshes_it_before_expiry(
    clocked, manual_clock, tmp_path
):
    """One JWT exchange serves reads for ~55 min; the token is renewed before it expires."""
    install = clocked.install_app("acme")
    connection = app_connection(clocked, tmp_path / "data", install, FakeClock(manual_clock))
    provider = connection.open()
    assert len(exchanges(clocked)) == 1
    assert [r.status for r in exchanges(clocked)] == [201]
    provider.read(T.LABEL, "1")
    manual_clock.advance(50 * 60)
    list(provider.inventory_index([T.LABEL, T.ISSUE]).entries)
    assert len(exchanges(clocked)) == 1, "the installation token was not cached"

    manual_clock.advance(6 * 60)  # 56 min: the token still works, but expires within 5 min
    list(provider.inventory_index([T.LABEL]).entries)
    assert len(exchanges(clocked)) == 2, "the token was not refreshed before it expired"
    manual_clock.advance(10 * 60)  # 66 min: the first token is dead by now
    list(provider.inventory_index([T.LABEL]).entries)
    assert len(exchanges(clocked)) == 2
    assert clocked.requests_log.matching(status=401) == []
    api = [r for r in clocked.requests_log.matching(host="api") if r.path.startswith("/repos/")]
    assert api
    assert {r.token_owner for r in api} == {BOT}
    connection.close()
    connection.assert_clean()


def test_app_auth_with_a_key_github_does_not_know_is_permission_denied(fake, tmp_path):
    """A JWT signed with the wrong private key fails the exchange: PermissionDenied."""
    install = fake.install_app("acme")
    other = fake.install_app("acme", slug="other-app")
    impostor = AppInstall(install.app, install.installation, other.keys, fake)
    connection = app_connection(fake, tmp_path / "data", impostor)
    with pytest.raises(PermissionDenied):
        connection.open()
    assert [r.status for r in exchanges(fake)] == [401]
    connection.assert_clean()


def test_a_connection_opens_the_side_with_its_installation_cached_per_installation(fake, tmp_path):
    """A side's connection_id selects the App installation whose token opens it (not the
    configured one); the token is exchanged once per installation for the process, however
    many times sides are opened, and each installation keeps its own."""
    configured = fake.install_app("acme")
    fake.state.create_repo("bob/tool", auto_init=True, private=True)
    other = fake.add_installation(configured, "bob")
    connection = app_connection(fake, tmp_path / "data", configured)
    spec = EndpointSpec("github", "bob/tool", None, f"github:installation:{other.id}")

    first = GitHubProvider.open(spec, connection.env)
    again = GitHubProvider.open(spec, connection.env)
    default = connection.open()
    first.read(T.LABEL, "1")
    again.read(T.LABEL, "1")

    assert first.endpoint().locator == "bob/tool"
    assert first.client.tokens.account == f"github:installation:{other.id}"
    tool = fake.requests_log.matching("GET", r"^/repos/bob/tool")
    assert tool
    assert {r.quota for r in tool} == {f"installation:{other.id}"}
    assert len(exchanges(fake)) == 2  # one per installation, not one per opened side
    # The configured installation does not reach the private bob/tool: the connection does.
    with pytest.raises(RepositoryNotFound):
        connection.open("bob/tool")
    for provider in (first, again, default):
        provider.close()
    connection.close()
    connection.assert_clean()


@pytest.mark.parametrize("connection_id", ["github:installation:", "github:token:1", "x"])
def test_a_connection_github_cannot_read_is_invalid(connection_id):
    with pytest.raises(InvalidConnection):
        GitHubProvider.normalize_connection(connection_id)
    assert GitHubProvider.normalize_connection(" github:installation:42 ") == (
        "github:installation:42"
    )


def test_a_connection_needs_the_app_and_the_app_alone_opens_only_connections(fake, tmp_path):
    install = fake.install_app("acme")
    pat = pat_connection(fake, tmp_path / "data", fake.add_token("acme"))
    spec = EndpointSpec("github", REPO, None, f"github:installation:{install.installation.id}")
    with pytest.raises(ConfigurationError, match="REPOSYNC_GITHUB_APP_ID"):
        GitHubProvider.open(spec, pat.env)
    app_only = app_connection(fake, tmp_path / "data", install)
    settings = replace(app_only.env.settings, github_installation_id="")
    env = replace(app_only.env, settings=settings)
    with pytest.raises(ConfigurationError, match="connection_id"):
        GitHubProvider.open(EndpointSpec("github", REPO), env)
    GitHubProvider.open(spec, env).close()


# -- conditional reads --------------------------------------------------------------------


def test_a_second_inventory_of_an_unchanged_repository_is_answered_by_304s(conn, fake):
    """Re-listing (same provider, or the next Run's) spends no primary quota: all 304."""
    seeder = conn.open()
    [issue] = seed(seeder, [create(T.ISSUE, issue_payload(1), 1, number=1)])
    parent = TargetRef(T.ISSUE, issue, marker(T.ISSUE, 1))
    seed(seeder, [create(T.LABEL, label_payload(), "bug")])
    seed(seeder, [create(T.MILESTONE, milestone_payload(), "v1.0")])
    seed(seeder, [create(T.ISSUE_COMMENT, comment_payload(), "c1", parent=parent)])
    seed(seeder, [create(T.RELEASE, release_payload(), "v1.0")])
    provider = conn.open()  # a Run that starts after the last change
    first = list(provider.inventory_index(API_TYPES).entries)
    assert len(first) == 5 + 1  # and the default branch

    mark = len(fake.requests_log)
    again = list(provider.inventory_index(API_TYPES).entries)
    relisted = fake.requests_log.snapshot()[mark:]
    assert again == first
    assert relisted
    assert [r for r in relisted if r.counted_primary] == []
    assert {r.status for r in relisted} == {304}

    mark = len(fake.requests_log)
    next_run = conn.open()  # a new provider: the ETags come from the on-disk cache
    assert list(next_run.inventory_index(API_TYPES).entries) == first
    relisted = fake.requests_log.snapshot()[mark:]
    assert [r for r in relisted if r.counted_primary] == []
    assert {r.status for r in relisted} == {304}
    conn.assert_clean()


# -- error mapping ------------------------------------------------------------------------


def test_a_bad_token_is_permission_denied(fake, tmp_path):
    """401 Bad credentials: exists() and open() raise PermissionDenied, never 'not found'."""
    connection = pat_connection(fake, tmp_path / "data", "ghp_" + "x" * 36)
    with pytest.raises(PermissionDenied) as raised:
        GitHubProvider.exists(EndpointSpec("github", REPO), connection.env)
    assert raised.value.code == "permission_denied"
    with pytest.raises(PermissionDenied):
        connection.open()
    assert {r.status for r in fake.requests_log.matching(host="api")} == {401}
    connection.assert_clean()


def _git_requests(fake: GitHubFake) -> list[int]:
    """The statuses of git's ref advertisements (each ``ls-remote`` asks for one first)."""
    return [r.status for r in fake.requests_log.matching("GET", r"/info/refs$", host="git")]


def test_a_personal_token_git_stops_taking_fails_at_once_and_is_not_asked_again(conn, fake):
    """A token revoked while a Run holds it: git's refusal (HTTP 401) is
    ``git_credentials_refused``, an authorization problem no retry clears, asked once.
    It used to be ``git_transport_failed``, retried with backoff as a forge briefly away,
    in git's own words about a username prompt."""
    provider = conn.open()
    fake.state.revoke_token(provider.client.tokens.token())

    with pytest.raises(GitCredentialsRefused) as raised:
        list(provider.inventory_index([T.GIT_REF]).entries)

    error = raised.value
    assert (error.code, error.retryable, error.problem_type) == (
        "git_credentials_refused",
        False,
        ProblemType.AUTHORIZATION_REQUIRED,
    )
    assert REPO in error.message
    assert "refused git's credentials (HTTP 401)" in error.message
    assert _git_requests(fake) == [401]
    conn.close()


def test_an_installation_token_git_stops_taking_is_renewed_once(clocked, manual_clock, tmp_path):
    """An App's installation token GitHub no longer takes (expired early, or revoked):
    git's 401 drops it, a new one is exchanged and git asks again, once."""
    install = clocked.install_app("acme")
    connection = app_connection(clocked, tmp_path / "data", install, FakeClock(manual_clock))
    provider = connection.open()
    stale = provider.client.tokens.token()
    clocked.state.revoke_token(stale)

    listed = list(provider.inventory_index([T.GIT_REF]).entries)

    assert [e.identity for e in listed] == ["refs/heads/main"]
    assert len(exchanges(clocked)) == 2
    assert provider.client.tokens.token() != stale
    assert _git_requests(clocked) == [401, 200]
    connection.close()


def test_git_not_finding_a_repository_the_api_shows_is_a_transport_failure(conn, fake):
    """The Git host lagging behind the API (a repository created moments ago): git's
    "not found" is a transport failure a retry outlives, saying why; once the API no
    longer shows it either (deleted), it is ``PermissionDenied``, which no retry clears."""
    fake.state.git_lag = 60.0
    fake.state.create_repo("acme/fresh")
    provider = conn.open("acme/fresh")
    with pytest.raises(GitTransportError) as raised:
        list(provider.inventory_index([T.GIT_REF]).entries)
    assert "does not find the repository its API shows" in raised.value.message
    assert raised.value.retryable

    repo, _ = fake.state.find_repo("acme", "fresh")
    del fake.state.repos[repo.id]
    with pytest.raises(PermissionDenied) as gone:
        list(provider.inventory_index([T.GIT_REF]).entries)
    assert not gone.value.retryable
    conn.close()


def test_a_read_only_token_fails_the_write_access_check(fake, tmp_path):
    """check_access(write=True) with a read-only token raises PermissionDenied; reads work."""
    connection = pat_connection(fake, tmp_path / "data", fake.add_token("acme", write=False))
    provider = connection.open()
    provider.check_access(write=False)
    with pytest.raises(PermissionDenied):
        provider.check_access(write=True)
    connection.close()
    connection.assert_clean()


def test_a_missing_repository_does_not_exist_and_cannot_be_opened(conn, fake):
    """404: exists() is False and open() raises RepositoryNotFound (also for hidden repos)."""
    fake.state.create_repo("zed/secret", private=True)
    for locator in ("acme/nothing-here", "zed/secret"):
        spec = EndpointSpec("github", locator)
        assert GitHubProvider.exists(spec, conn.env) is False
        with pytest.raises(RepositoryNotFound) as raised:
            conn.open(locator)
        assert raised.value.code == "repository_not_found"
        with pytest.raises(RepositoryNotFound):
            conn.open(locator, repository_id="700000999")
    conn.assert_clean()


def test_a_renamed_repository_opened_by_id_keeps_the_id_and_refreshes_the_locator(conn, fake):
    """The old name redirects; the endpoint keeps its id, reports the new name, writes there."""
    repository_id = conn.open().endpoint().repository_id
    fake.state.rename_repo(REPO, "gadgets")
    provider = conn.open(REPO, repository_id=repository_id)
    endpoint = provider.endpoint()
    assert (endpoint.provider, endpoint.locator, endpoint.repository_id) == (
        "github",
        "acme/gadgets",
        repository_id,
    )
    mark = len(fake.requests_log)
    seed(provider, [create(T.LABEL, label_payload(), "bug")])
    writes = [r for r in fake.requests_log.snapshot()[mark:] if r.method == "POST"]
    assert [(r.path, r.status) for r in writes] == [("/repos/acme/gadgets/labels", 201)]
    assert [lb.name for lb in fake.state.labels("acme/gadgets")] == ["bug"]

    fake.state.create_repo(REPO)  # someone else now owns the old name
    with pytest.raises(RepositoryMismatch):
        conn.open(REPO, repository_id=repository_id)
    conn.assert_clean()


# -- what GitHub cannot hold natively ------------------------------------------------------


def seed(provider: GitHubProvider, writes: list) -> list[str]:
    results = provider.apply_batch(writes)
    assert [r.status for r in results] == [WriteStatus.OK] * len(writes), results
    return [r.target_identity or "" for r in results]


def test_the_attributed_header_keeps_the_original_author_and_time(fake, tmp_path):
    """GitHub records the App's bot and now; the read-back has the original author and time."""
    connection = app_connection(fake, tmp_path / "data", fake.install_app("acme"))
    provider = connection.open()
    issue = issue_payload(1, author="alice", created_at="2019-02-03T04:05:06Z")
    [result] = provider.apply_batch([create(T.ISSUE, issue, 1, number=1)])
    assert (result.status, result.representation) == (WriteStatus.OK, Representation.ATTRIBUTED)
    comment = comment_payload("Me too.", author="bob", created_at="2019-02-04T00:00:00Z")
    parent = TargetRef(T.ISSUE, result.target_identity, marker(T.ISSUE, 1))
    [comment_id] = seed(provider, [create(T.ISSUE_COMMENT, comment, "c", parent=parent)])

    stored = fake.state.issue(REPO, 1)
    assert stored.user.login == BOT
    assert abs(stored.created_at - fake.state.now()) < timedelta(minutes=5)  # written now
    assert "Originally by **alice** on 2019-02-03T04:05:06Z" in (stored.body or "")
    [stored_comment] = fake.state.comments(REPO, 1)
    assert stored_comment.user.login == BOT
    read = provider.read(T.ISSUE, "1")
    assert read is not None
    assert dict(read.payload) == issue
    assert (read.payload["author"], read.payload["created_at"]) == ("alice", "2019-02-03T04:05:06Z")
    read_comment = provider.read(T.ISSUE_COMMENT, comment_id)
    assert read_comment is not None
    assert dict(read_comment.payload) == comment
    connection.close()
    connection.assert_clean()


def test_a_merged_pull_request_becomes_an_issue_carrier_read_back_as_a_pull_request(conn, fake):
    """GitHub cannot create a merged PR: an issue carries it; it reads back as the PR written."""
    provider = conn.open()
    pull = merged_pull_payload(1)
    [result] = provider.apply_batch([create(T.PULL_REQUEST, pull, 1, number=1)])
    assert (result.status, result.representation) == (WriteStatus.OK, Representation.PROJECTED)
    assert result.target_identity == "1"
    carrier = fake.state.issue(REPO, 1)
    assert not carrier.is_pull
    assert carrier.state == "closed"
    assert fake.state.pulls(REPO) == []

    read = provider.read(T.PULL_REQUEST, "1")
    assert read is not None
    assert dict(read.payload) == pull
    assert read.content_hash == content_hash(pull)
    assert provider.read(T.ISSUE, "1") is None
    listed = list(provider.inventory_index([T.ISSUE, T.PULL_REQUEST]).entries)
    assert [(e.object_type, e.identity) for e in listed] == [(T.PULL_REQUEST, "1")]

    parent = TargetRef(T.PULL_REQUEST, "1", marker(T.PULL_REQUEST, 1))
    review = review_payload("Approved in the source.")
    [review_id] = seed(provider, [create(T.REVIEW, review, "r1", parent=parent)])
    assert review_id.startswith("comment-")
    read_review = provider.read(T.REVIEW, review_id)
    assert read_review is not None
    assert dict(read_review.payload) == review
    conn.assert_clean()


def seed_with_gaps(provider: GitHubProvider) -> dict[int, dict]:
    """Issues #1, #4 and #6 of a source whose #2, #3 and #5 are not synced yet."""
    issues = {n: issue_payload(n, f"Issue {n}") for n in (1, 4, 6)}
    identities = seed(provider, [create(T.ISSUE, p, n, number=n) for n, p in issues.items()])
    assert identities == ["1", "4", "6"]
    return issues


def test_issue_numbers_are_kept_with_placeholders_across_gaps(conn, fake):
    """Source numbers 1, 4, 6 stay 1, 4, 6; the gaps hold closed placeholders nobody lists."""
    provider = conn.open()
    issues = seed_with_gaps(provider)
    stored = {i.number: i for i in fake.state.issues(REPO)}
    assert sorted(stored) == [1, 2, 3, 4, 5, 6]
    assert [stored[n].state for n in (2, 3, 5)] == ["closed"] * 3
    listed = [e.identity for e in provider.inventory_index([T.ISSUE, T.PULL_REQUEST]).entries]
    assert sorted(listed, key=int) == ["1", "4", "6"]
    for number in (2, 3, 5):
        assert provider.read(T.ISSUE, str(number)) is None
        assert provider.read(T.PULL_REQUEST, str(number)) is None
    for number, payload in issues.items():
        read = provider.read(T.ISSUE, str(number))
        assert read is not None
        assert dict(read.payload) == payload
    conn.assert_clean()


def test_an_issue_synced_later_takes_over_its_placeholder_and_reads_back_as_written(conn, fake):
    """An open issue created into a placeholder's number gets that number and its payload."""
    provider = conn.open()
    seed_with_gaps(provider)
    late = issue_payload(3, "Issue 3, synced late")
    [taken] = seed(provider, [create(T.ISSUE, late, 3, number=3)])
    assert taken == "3"
    assert fake.state.issue(REPO, 3).title == "Issue 3, synced late"
    assert len(fake.state.issues(REPO)) == 6  # taken over, not created anew
    read = provider.read(T.ISSUE, "3")
    assert read is not None
    assert dict(read.payload) == late
    conn.assert_clean()


def test_a_pull_request_synced_later_takes_over_its_placeholder_as_a_carrier(conn, fake):
    """A merged pull request created into a placeholder's number is carried by that issue."""
    provider = conn.open()
    seed_with_gaps(provider)
    pull = merged_pull_payload(5)
    [result] = provider.apply_batch([create(T.PULL_REQUEST, pull, 5, number=5)])
    assert (result.status, result.target_identity) == (WriteStatus.OK, "5"), result
    assert len(fake.state.issues(REPO)) == 6
    read = provider.read(T.PULL_REQUEST, "5")
    assert read is not None
    assert dict(read.payload) == pull
    listed = [e.identity for e in provider.inventory_index([T.PULL_REQUEST]).entries]
    assert listed == ["5"]
    conn.assert_clean()


@pytest.mark.parametrize("drop", ["502", "close"])
def test_a_lost_issue_create_is_recovered_by_its_marker(conn, fake, drop):
    """A 502 or a closed connection after the create: OK with the issue found, never twice."""
    provider = conn.open()
    fake.faults.commit_then_drop("POST", r"/issues$", drop=drop)
    payload = issue_payload(1)
    write = create(T.ISSUE, payload, 1, number=1)
    [result] = provider.apply_batch([write])
    assert result.status in (WriteStatus.OK, WriteStatus.UNKNOWN), result
    assert len(fake.state.issues(REPO)) == 1
    assert provider.find_by_markers(T.ISSUE, [write.marker]) == {write.marker: "1"}
    if result.status is WriteStatus.OK:
        assert result.target_identity == "1"
    assert [r.fault for r in fake.requests_log.faults_fired()] == ["commit_then_drop"]
    conn.assert_clean()


# -- Git credentials ----------------------------------------------------------------------


def _git_env(extra: dict[str, str]) -> dict[str, str]:
    return {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        **extra,
    }


@pytest.mark.parametrize("auth", ["token", "app"])
def test_git_remote_never_puts_the_token_in_the_url(fake, tmp_path, auth):
    """The URL has no credentials; git authenticates through the environment alone."""
    if auth == "token":
        token = fake.add_token("acme")
        connection = pat_connection(fake, tmp_path / "data", token)
    else:
        connection = app_connection(fake, tmp_path / "data", fake.install_app("acme"))
    provider = connection.open()
    token = provider.client.tokens.token()
    for write in (False, True):
        remote = provider.git_remote(write=write)
        parts = urlsplit(remote.url)
        assert token not in remote.url
        assert (parts.username, parts.password) == (None, None)
        assert "@" not in parts.netloc
        assert remote.url == f"{fake.git_url}/{REPO}.git"
        assert not remote.is_local
        assert all(token not in value for value in remote.env.values())
    listed = subprocess.run(
        ["git", "ls-remote", remote.url],
        env=_git_env(dict(remote.env)),
        capture_output=True,
        text=True,
        check=True,
    )
    assert "refs/heads/main" in listed.stdout
    assert token not in listed.stdout + listed.stderr
    connection.close()
    connection.assert_clean()


def test_open_without_any_credential_is_refused_before_any_request(fake, tmp_path):
    """Settings without any credential: open() raises PermissionDenied before any request."""
    recorder = RecordingValidator(fake.contract)
    settings = github_settings(fake, tmp_path / "data", "")
    env = ProviderEnvironment(settings=settings, http_session=checked_sessions(recorder))
    with pytest.raises(PermissionDenied):
        GitHubProvider.open(EndpointSpec("github", REPO), env)
    assert len(fake.requests_log) == 0
    recorder.assert_clean()


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("octo-org/app", "octo-org/app"),
        ("octo-org/app.git", "octo-org/app"),
        ("/octo-org/app.v2_x/", "octo-org/app.v2_x"),
        ("o/...", "o/..."),
        ("octo-org/..", None),
        ("octo-org/.", None),
        ("octo-org/app/../../x", None),
        ("evil/<script>", None),
        ("-octo/app", None),
        ("a" * 40 + "/app", None),
        ("octo/" + "a" * 101, None),
    ],
)
def test_a_locator_is_held_to_githubs_grammar_of_owner_and_name(location, expected):
    """Owner: 1-39 letters, digits, hyphens; name: 1-100 of [A-Za-z0-9._-], not . or .."""
    if expected is None:
        with pytest.raises(InvalidLocator, match="is not OWNER/NAME"):
            GitHubProvider.normalize_locator(location)
    else:
        assert GitHubProvider.normalize_locator(location) == expected
