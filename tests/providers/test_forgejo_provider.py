"""The Forgejo provider's own rules: where a missing standby is created, how git gets the
token (never in a URL, only for the instance), and when a side is not writable."""

from __future__ import annotations

import base64

import pytest

from reposync.errors import (
    GitCredentialsRefused,
    GitRateLimited,
    GitTransportError,
    PermissionDenied,
)
from reposync.providers.base import EndpointSpec
from reposync.providers.forgejo import ForgejoProvider
from reposync.sync.vocabulary import ObjectType
from tests.forgejo_env import forgejo_environment, forgejo_settings, locator


@pytest.fixture
def env(forgejo_fake, tmp_path):
    token = forgejo_fake.add_token("acme")
    return forgejo_environment(forgejo_settings(forgejo_fake, tmp_path, token), forgejo_fake), token


def test_a_missing_standby_is_created_private_and_empty_under_the_token_s_account(
    forgejo_fake, env
):
    """``create`` makes the token's own repository, private; another user's is refused."""
    environment, _ = env
    spec = EndpointSpec("forgejo", locator(forgejo_fake, "acme/standby"))
    assert not ForgejoProvider.exists(spec, environment)
    ForgejoProvider.create(spec, environment)
    repo = forgejo_fake.state.repo("acme/standby")
    assert (repo.private, repo.empty) == (True, True)
    forgejo_fake.state.user("someone")
    with pytest.raises(PermissionDenied, match="someone"):
        ForgejoProvider.create(
            EndpointSpec("forgejo", locator(forgejo_fake, "someone/app")), environment
        )
    assert forgejo_fake.state.find_repo("someone", "app") is None


def test_git_gets_the_token_in_its_environment_for_the_instance_only(forgejo_fake, env):
    """The clone URL holds no credential; the header is configured for the instance's URL
    alone, so git sends it nowhere else."""
    environment, token = env
    forgejo_fake.state.create_repo("acme/app")
    provider = ForgejoProvider.open(
        EndpointSpec("forgejo", locator(forgejo_fake, "acme/app")), environment
    )
    try:
        for remote in (provider.git_remote(write=True), provider.wiki_remote(write=True)):
            assert token not in remote.url
            assert "@" not in remote.url.split("://", 1)[1]
            assert remote.env["GIT_CONFIG_KEY_0"] == f"http.{forgejo_fake.root_url}/.extraHeader"
            encoded = remote.env["GIT_CONFIG_VALUE_0"].removeprefix("Authorization: Basic ")
            assert base64.b64decode(encoded).decode().endswith(f":{token}")
    finally:
        provider.close()


@pytest.mark.parametrize("how", ["read-only", "archived"])
def test_a_side_the_token_cannot_write_is_refused_as_a_target(forgejo_fake, env, how):
    """A repository the token may only read, or one Forgejo keeps archived, is no target."""
    environment, _ = env
    if how == "read-only":
        forgejo_fake.state.create_repo("other/app")  # public: readable, not writable
        spec = EndpointSpec("forgejo", locator(forgejo_fake, "other/app"))
    else:
        forgejo_fake.state.create_repo("acme/old").archived = True
        spec = EndpointSpec("forgejo", locator(forgejo_fake, "acme/old"))
    provider = ForgejoProvider.open(spec, environment)
    try:
        provider.check_access(write=False)
        with pytest.raises(PermissionDenied):
            provider.check_access(write=True)
    finally:
        provider.close()


def test_a_token_git_stops_taking_fails_at_once_and_is_not_asked_again(forgejo_fake, env):
    """A token deleted while a Run holds it: Forgejo's git answers 401, which is
    ``git_credentials_refused`` (an instance token cannot be renewed), asked once. It
    used to be ``git_transport_failed``: git's words ("could not read Username") named
    no 401, so the provider's own check for one never fired."""
    environment, token = env
    forgejo_fake.state.create_repo("acme/app", auto_init=True)
    provider = ForgejoProvider.open(
        EndpointSpec("forgejo", locator(forgejo_fake, "acme/app")), environment
    )
    try:
        del forgejo_fake.state.tokens[token]
        with pytest.raises(GitCredentialsRefused) as raised:
            list(provider.inventory_index([ObjectType.GIT_REF]).entries)
    finally:
        provider.close()
    assert raised.value.code == "git_credentials_refused"
    assert "acme/app" in raised.value.message
    assert [status for _, _, status in forgejo_fake.git_requests] == [401]


@pytest.mark.parametrize(
    ("status", "error"),
    [(429, GitRateLimited), (503, GitTransportError)],
    ids=["429", "503"],
)
def test_a_git_failure_is_not_taken_for_a_missing_repository_by_a_404_in_its_url(
    forgejo_fake, env, status, error
):
    """git's words name the URL it failed on, and a URL may hold "404" (a port such as
    40443, an owner "team404"). Forgejo's "missing" words are curl's "returned error:
    404", not the bare number: before, any failure of a listing on such a URL was taken
    for a missing repository, the Git host lagging behind its API, so a rate limit was
    retried as a transport failure (the Git host matrix failed so when the test
    server's random port held 404)."""
    environment, _ = env
    # public: the token (acme's) reads it, and the API shows it
    forgejo_fake.state.create_repo("team404/app", auto_init=True).private = False
    forgejo_fake.faults.error("GET", r"/team404/app\.git/info/refs$", status=status, host="git")
    provider = ForgejoProvider.open(
        EndpointSpec("forgejo", locator(forgejo_fake, "team404/app")), environment
    )
    try:
        with pytest.raises(GitTransportError) as raised:
            list(provider.inventory_index([ObjectType.GIT_REF]).entries)
    finally:
        provider.close()
    assert type(raised.value) is error
    assert "does not find the repository" not in raised.value.message
    assert f"returned error: {status}" in raised.value.message
