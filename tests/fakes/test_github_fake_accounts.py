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


def test_a_member_creates_an_organization_repository_once(fake):
    """POST /orgs/{org}/repos by a member: 201 with the repository (private as asked, no
    commit yet) and its Location; listed by the organization at once; the same name again,
    whatever its case, is 422 and creates nothing."""
    fake.state.add_member("acme-org", "acme")
    acme = fake.session(fake.add_token("acme"))
    made = acme.post(
        f"{fake.api_url}/orgs/acme-org/repos",
        json={"name": "tool box", "private": True, "description": "tools"},
    )
    assert made.status_code == 201
    body = made.json()
    assert (body["full_name"], body["private"], body["visibility"]) == (
        "acme-org/tool-box",
        True,
        "private",
    )
    assert made.headers["location"].endswith("/repos/acme-org/tool-box")
    assert fake.state.repo("acme-org/tool-box").description == "tools"
    listed = acme.get(f"{fake.api_url}/orgs/acme-org/repos").json()
    assert names(listed) == ["acme-org/tool-box"]
    again = acme.post(f"{fake.api_url}/orgs/acme-org/repos", json={"name": "Tool-Box"})
    assert again.status_code == 422
    assert again.json()["errors"][0]["message"] == "name already exists on this account"
    assert len([r for r in fake.state.repos.values() if r.owner.login == "acme-org"]) == 1
    fake.assert_clean()


def test_who_may_create_a_repository_and_where(fake):
    """A non-member may not create in an organization (403); an installation may when it
    is on that organization with administration write (its repositories grow by the new
    one), not without it; an installation has no user to create for (403); a classic
    token with public_repo creates public repositories of its user, not private ones."""
    fake.state.user("acme-org", type="Organization")
    eve = fake.session(fake.add_token("eve"))
    org = f"{fake.api_url}/orgs/acme-org/repos"
    assert eve.post(org, json={"name": "x"}).status_code == 403
    admin = fake.install_app(
        "acme-org", repositories=[], permissions={"metadata": "read", "administration": "write"}
    )
    bot = fake.session(fake.installation_token(admin))
    created = bot.post(org, json={"name": "by-app", "visibility": "public"})
    assert (created.status_code, created.json()["private"]) == (201, False)
    assert fake.state.repo("acme-org/by-app").id in admin.installation.repository_ids
    reader = fake.session(fake.installation_token(fake.install_app("acme-org", slug="reader")))
    assert reader.post(org, json={"name": "nope"}).status_code == 403
    assert bot.post(f"{fake.api_url}/user/repos", json={"name": "mine"}).status_code == 403
    public_only = fake.session(fake.add_token("eve", scopes=("public_repo",)))
    mine = f"{fake.api_url}/user/repos"
    assert public_only.post(mine, json={"name": "hidden", "private": True}).status_code == 403
    assert public_only.post(mine, json={"name": "shown"}).status_code == 201
    assert names(eve.get(mine).json()) == ["eve/shown"]
    fake.assert_clean()
