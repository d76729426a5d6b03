"""The GitHub test server's accounts: who a token is, profiles, organizations and their
repositories, as GitHub shows them to each caller. Every exchange is checked against the
contract (``assert_clean``)."""

from __future__ import annotations

import pytest

from tests.fakes.github import github_fake

fake = pytest.fixture(name="fake")(github_fake)


def names(answer: list[dict[str, object]]) -> list[object]:
    return [r["full_name"] for r in answer]


def test_the_authenticated_user_sees_their_own_private_view(fake):
    """GET /user is the account's private view; an installation acts for no one (403)."""
    fake.state.create_repo("acme/a")
    fake.state.create_repo("acme/b", private=True)
    me = fake.session(fake.add_token("acme")).get(f"{fake.api_url}/user").json()
    assert (me["login"], me["user_view_type"]) == ("acme", "private")
    assert (me["public_repos"], me["total_private_repos"]) == (1, 1)
    bot = fake.session(fake.installation_token(fake.install_app("acme")))
    assert bot.get(f"{fake.api_url}/user").status_code == 403
    fake.assert_clean()


def test_profiles_are_public_and_unknown_accounts_are_404(fake):
    """Anyone reads a profile or an organization, even without a token; a user is no
    organization and a login nobody has is 404."""
    fake.state.create_repo("acme/a")
    fake.state.user("acme-org", type="Organization")
    anonymous = fake.session()
    profile = anonymous.get(f"{fake.api_url}/users/acme").json()
    assert (profile["login"], profile["user_view_type"], profile["public_repos"]) == (
        "acme",
        "public",
        1,
    )
    assert anonymous.get(f"{fake.api_url}/orgs/acme-org").json()["type"] == "Organization"
    assert anonymous.get(f"{fake.api_url}/orgs/acme").status_code == 404
    assert anonymous.get(f"{fake.api_url}/users/nobody").status_code == 404
    fake.assert_clean()


def test_repository_listings_show_each_caller_what_it_may_see(fake):
    """/user/repos lists what the token reaches (owned and collaborated, filtered by
    visibility, affiliation or type); /users/{u}/repos only public ones; an
    organization's private repositories only to those who reach them."""
    fake.state.create_repo("acme/public")
    fake.state.create_repo("acme/secret", private=True)
    fake.state.create_repo("zed/shared", private=True, collaborators=["acme"])
    fake.state.user("acme-org", type="Organization")
    fake.state.create_repo("acme-org/open")
    fake.state.create_repo("acme-org/closed", private=True, collaborators=["acme"])
    acme = fake.session(fake.add_token("acme"))
    eve = fake.session(fake.add_token("eve"))
    mine = f"{fake.api_url}/user/repos"
    assert names(acme.get(mine).json()) == [
        "acme-org/closed",
        "acme/public",
        "acme/secret",
        "zed/shared",
    ]
    assert names(acme.get(mine, params={"affiliation": "owner"}).json()) == [
        "acme/public",
        "acme/secret",
    ]
    assert names(acme.get(mine, params={"visibility": "public"}).json()) == ["acme/public"]
    assert names(acme.get(mine, params={"type": "member"}).json()) == [
        "acme-org/closed",
        "zed/shared",
    ]
    both = acme.get(mine, params={"type": "owner", "visibility": "all"})
    assert both.status_code == 422
    narrow = fake.session(fake.add_token("acme", repositories=["acme/secret"]))
    assert names(narrow.get(mine).json()) == ["acme/secret"]
    assert names(eve.get(f"{fake.api_url}/users/acme/repos").json()) == ["acme/public"]
    org = f"{fake.api_url}/orgs/acme-org/repos"
    assert names(eve.get(org).json()) == ["acme-org/open"]
    assert sorted(names(acme.get(org).json())) == ["acme-org/closed", "acme-org/open"]
    assert names(acme.get(org, params={"type": "private"}).json()) == ["acme-org/closed"]
    fake.assert_clean()
