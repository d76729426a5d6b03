"""GitHub owners (``providers/github/owners.py``) against the test server: what only
GitHub does. Which listing a user owner gets depends on who the credentials are; a
user's repositories are created only with that user's token; creating is paced through
the write budget like every content write. The shared behaviour is in
``test_conformance_owners.py``; every exchange is contract-checked."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from reposync.errors import PermissionDenied
from reposync.providers.base import OwnerSpec, ProviderEnvironment
from reposync.providers.github.provider import GitHubProvider
from tests.fakes.github import GitHubFake
from tests.providers.test_github_provider import Connection, app_connection, pat_connection


@pytest.fixture
def people(github_fake: GitHubFake) -> GitHubFake:
    """ada's public and private repositories, and a repository of bob's ada works on."""
    github_fake.state.create_repo("ada/open")
    github_fake.state.create_repo("ada/secret", private=True)
    github_fake.state.create_repo("bob/shared", private=True, collaborators=["ada"])
    return github_fake


@pytest.fixture
def ada(people: GitHubFake, tmp_path: Path) -> Iterator[Connection]:
    connection = pat_connection(people, tmp_path / "data", people.add_token("ada"))
    yield connection
    connection.close()
    connection.assert_clean()


def names(connection: Connection, login: str) -> list[str]:
    listed = GitHubProvider.list_repositories(OwnerSpec("github", login), connection.env)
    return [repo.locator for repo in listed]


def test_a_user_owner_lists_their_own_private_repositories_only_for_themselves(people, ada):
    """ada's own token lists her private repository too, not the one of bob's she works
    on; bob's token sees only her public one, as does an installation (nobody's user)."""
    assert names(ada, "ada") == ["ada/open", "ada/secret"]
    bob = pat_connection(people, ada.env.settings.data_dir / "bob", people.add_token("bob"))
    assert names(bob, "ada") == ["ada/open"]
    assert names(bob, "bob") == ["bob/shared"]
    bot = app_connection(people, ada.env.settings.data_dir / "app", people.install_app("ada"))
    assert names(bot, "ada") == ["ada/open"]
    for other in (bob, bot):
        other.assert_clean()


def test_another_users_repository_is_never_created(people, ada):
    """Creating for a user the credentials do not act for is refused before any POST."""
    with pytest.raises(PermissionDenied):
        GitHubProvider.create_repository(OwnerSpec("github", "bob"), "x", "private", None, ada.env)
    assert people.requests_log.matching("POST") == []
    made = GitHubProvider.create_repository(OwnerSpec("github", "ada"), "y", "public", "Y", ada.env)
    assert (made.locator, made.visibility, made.description) == ("ada/y", "public", "Y")


def test_an_organization_the_credentials_may_not_create_in_is_permission_denied(people, ada):
    """GitHub's 403 for a non-member is PermissionDenied, and nothing is created."""
    people.state.user("acme", type="Organization")
    with pytest.raises(PermissionDenied):
        GitHubProvider.create_repository(OwnerSpec("github", "acme"), "x", "private", None, ada.env)
    assert [r for r in people.state.repos.values() if r.owner.login == "acme"] == []


class CountingBudget:
    """A write budget that grants everything and remembers whom it counted."""

    def __init__(self) -> None:
        self.accounts: list[str] = []

    def reserve(self, key: str, now: datetime) -> datetime | None:
        self.accounts.append(key)
        return None


def test_creating_a_repository_spends_the_accounts_write_budget(people, ada):
    """A creation is a content write: it reserves one write of the token's account."""
    budget = CountingBudget()
    env = ProviderEnvironment(
        settings=ada.env.settings, budget=budget, http_session=ada.env.http_session
    )
    people.state.add_member("acme", "ada")
    GitHubProvider.create_repository(OwnerSpec("github", "acme"), "tools", "private", None, env)
    assert len(budget.accounts) == 1
    assert budget.accounts[0].startswith("github:token:")
