"""GitHub's JSON for accounts: a user's profile (public, or the account's own private
view) and an organization's."""

from __future__ import annotations

from urllib.parse import quote

from tests.fakes.github.models import User
from tests.fakes.github.render import Json, Urls, node_id, user

#: When every account was made: before anything in a test.
ACCOUNTS_CREATED = "2020-01-01T00:00:00Z"


def profile(urls: Urls, u: User, *, public_repos: int, private: Json | None = None) -> Json:
    """A user's profile: ``public-user``, or with ``private`` (the account's own view, the
    private fields GitHub shows only to its owner) ``private-user``."""
    out = user(urls, u)
    assert out is not None
    stamp = ACCOUNTS_CREATED
    out.update(
        {
            "name": u.name,
            "company": None,
            "blog": "",
            "location": None,
            "email": None,
            "hireable": None,
            "bio": None,
            "twitter_username": None,
            "public_repos": public_repos,
            "public_gists": 0,
            "followers": 0,
            "following": 0,
            "created_at": stamp,
            "updated_at": stamp,
        }
    )
    if private is not None:
        out.update(private)
        out.update(
            {
                "notification_email": None,
                "private_gists": 0,
                "disk_usage": 0,
                "collaborators": 0,
                "two_factor_authentication": True,
                "user_view_type": "private",
            }
        )
    return out


def organization(urls: Urls, org: User, *, public_repos: int) -> Json:
    """An organization (``organization-full``) as anyone may see it."""
    login = quote(org.login, safe="")
    api = f"{urls.api}/orgs/{login}"
    stamp = ACCOUNTS_CREATED
    return {
        "login": org.login,
        "id": org.id,
        "node_id": node_id(org.node_prefix, org.id),
        "url": api,
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events",
        "hooks_url": f"{api}/hooks",
        "issues_url": f"{api}/issues",
        "members_url": f"{api}/members{{/member}}",
        "public_members_url": f"{api}/public_members{{/member}}",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{org.id}?v=4",
        "description": None,
        "name": org.name or org.login,
        "blog": "",
        "twitter_username": None,
        "is_verified": False,
        "has_organization_projects": True,
        "has_repository_projects": True,
        "public_repos": public_repos,
        "public_gists": 0,
        "followers": 0,
        "following": 0,
        "html_url": f"{urls.web}/{login}",
        "created_at": stamp,
        "updated_at": stamp,
        "archived_at": None,
        "type": "Organization",
    }
