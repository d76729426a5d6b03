"""Forgejo's JSON for each record, as its converters (services/convert in Forgejo's source)
write the structs of modules/structs: every field the description lists, nil pointers and
slices as ``null`` where Forgejo leaves them nil (no assignees, no milestone, an open
issue's ``closed_at``), times as RFC 3339 in UTC.

What depends on who asks is passed in: a user's e-mail and ``is_admin`` are shown to the
user and to site administrators only (others see ``<login>@noreply.<host>``), and a
repository's ``permissions`` are the viewer's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from tests.fakes.forge_server.clock import iso
from tests.fakes.forgejo.models import (
    Attachment,
    Comment,
    Issue,
    Label,
    Milestone,
    Reaction,
    Release,
    Repo,
    Review,
    User,
)
from tests.fakes.forgejo.state import State
from tests.fakes.gitserver import bare_repos

Json = dict[str, Any]
ZERO_TIME = "0001-01-01T00:00:00Z"


@dataclass(frozen=True)
class Urls:
    """The instance's root URL (``ROOT_URL``): the web, Git and the API under ``/api/v1``."""

    root: str

    @property
    def api(self) -> str:
        return f"{self.root}/api/v1"

    def repo_html(self, repo: Repo) -> str:
        return f"{self.root}/{repo.full_name}"

    def repo_api(self, repo: Repo) -> str:
        return f"{self.api}/repos/{repo.full_name}"


def _t(when: datetime | None) -> str | None:
    return iso(when)


def user(urls: Urls, who: User, viewer: User | None = None) -> Json:
    """A user or an organization as ``User`` (what authors, owners and senders are)."""
    authed = viewer is not None and (viewer.id == who.id or viewer.is_admin)
    host = urls.root.split("://", 1)[-1]
    return {
        "id": who.id,
        "login": who.login,
        "login_name": "",
        "source_id": 0,
        "full_name": who.full_name,
        "email": who.email if authed and who.email else f"{who.login}@noreply.{host}",
        "avatar_url": f"{urls.root}/avatars/{who.id}",
        "html_url": f"{urls.root}/{quote(who.login)}",
        "language": "",
        "is_admin": who.is_admin if authed else False,
        "last_login": ZERO_TIME,
        "created": _t(who.created),
        "restricted": False,
        "active": True,
        "prohibit_login": False,
        "location": "",
        "pronouns": "",
        "website": "",
        "description": who.description,
        "visibility": "public",
        "followers_count": 0,
        "following_count": 0,
        "starred_repos_count": 0,
        "username": who.login,
    }


def organization(urls: Urls, org: User) -> Json:
    return {
        "id": org.id,
        "name": org.login,
        "username": org.login,
        "full_name": org.full_name,
        "email": org.email,
        "avatar_url": f"{urls.root}/avatars/{org.id}",
        "description": org.description,
        "website": "",
        "location": "",
        "visibility": "public",
        "repo_admin_change_team_access": False,
    }


def repository(urls: Urls, state: State, repo: Repo, viewer: User | None) -> Json:
    html = urls.repo_html(repo)
    can_write = viewer is not None and state.can_write(viewer, repo)
    admin = viewer is not None and (viewer.is_admin or viewer.id == repo.owner.id)
    issues = [i for i in repo.issues.values() if i.state == "open"]
    return {
        "id": repo.id,
        "owner": user(urls, repo.owner, viewer),
        "name": repo.name,
        "full_name": repo.full_name,
        "description": repo.description,
        "empty": repo.empty,
        "private": repo.private,
        "fork": False,
        "template": False,
        "parent": None,
        "mirror": False,
        "size": 0,
        "language": "",
        "languages_url": f"{urls.repo_api(repo)}/languages",
        "html_url": html,
        "url": urls.repo_api(repo),
        "link": "",
        "ssh_url": f"ssh://git@{urls.root.split('://', 1)[-1]}/{repo.full_name}.git",
        "clone_url": f"{html}.git",
        "original_url": "",
        "website": repo.website,
        "stars_count": 0,
        "forks_count": 0,
        "watchers_count": 1,
        "open_issues_count": sum(1 for i in issues if i.pull is None),
        "open_pr_counter": sum(1 for i in issues if i.pull is not None),
        "release_counter": sum(1 for r in repo.releases.values() if not r.draft),
        "default_branch": repo.default_branch,
        "archived": repo.archived,
        "created_at": _t(repo.created),
        "updated_at": _t(repo.updated),
        "archived_at": "1970-01-01T00:00:00Z",
        "permissions": {"admin": admin, "push": can_write, "pull": True},
        "has_issues": True,
        "internal_tracker": {
            "enable_time_tracker": True,
            "allow_only_contributors_to_track_time": True,
            "enable_issue_dependencies": True,
        },
        "external_tracker": None,
        "has_wiki": repo.has_wiki,
        "wiki_branch": "main",
        "globally_editable_wiki": False,
        "external_wiki": None,
        "has_pull_requests": True,
        "has_projects": True,
        "has_releases": True,
        "has_packages": True,
        "has_actions": True,
        "ignore_whitespace_conflicts": False,
        "allow_merge_commits": True,
        "allow_rebase": True,
        "allow_rebase_explicit": True,
        "allow_squash_merge": True,
        "allow_fast_forward_only_merge": True,
        "allow_rebase_update": True,
        "default_delete_branch_after_merge": False,
        "default_merge_style": "merge",
        "default_allow_maintainer_edit": False,
        "default_update_style": "merge",
        "avatar_url": "",
        "internal": False,
        "mirror_interval": "",
        "object_format_name": "sha1",
        "mirror_updated": ZERO_TIME,
        "repo_transfer": None,
        "topics": None,
    }


def label(urls: Urls, repo: Repo, lb: Label) -> Json:
    return {
        "id": lb.id,
        "name": lb.name,
        "exclusive": lb.exclusive,
        "is_archived": lb.is_archived,
        "color": lb.color,
        "description": lb.description,
        "url": f"{urls.repo_api(repo)}/labels/{lb.id}",
    }


def milestone(repo: Repo, ms: Milestone) -> Json:
    issues = [i for i in repo.issues.values() if i.milestone == ms.id]
    return {
        "id": ms.id,
        "title": ms.title,
        "description": ms.description,
        "state": ms.state,
        "open_issues": sum(1 for i in issues if i.state == "open"),
        "closed_issues": sum(1 for i in issues if i.state == "closed"),
        "created_at": _t(ms.created),
        "updated_at": _t(ms.updated),
        "closed_at": _t(ms.closed_at),
        "due_on": _t(ms.due_on),
    }


def _issue_html(urls: Urls, repo: Repo, issue: Issue) -> str:
    kind = "pulls" if issue.pull is not None else "issues"
    return f"{urls.repo_html(repo)}/{kind}/{issue.index}"


def _assignees(urls: Urls, issue: Issue, viewer: User | None) -> tuple[Any, Any]:
    if not issue.assignees:
        return None, None
    people = [user(urls, a, viewer) for a in issue.assignees]
    return people[0], people


def issue(urls: Urls, repo: Repo, issue: Issue, viewer: User | None) -> Json:
    """An issue, or a pull request as the issues API lists it (``pull_request`` set)."""
    ms = repo.milestones.get(issue.milestone) if issue.milestone is not None else None
    assignee, assignees = _assignees(urls, issue, viewer)
    pull = issue.pull
    return {
        "id": issue.id,
        "url": f"{urls.repo_api(repo)}/issues/{issue.index}",
        "html_url": _issue_html(urls, repo, issue),
        "number": issue.index,
        "user": user(urls, issue.poster, viewer),
        "original_author": "",
        "original_author_id": 0,
        "title": issue.title,
        "body": issue.body,
        "ref": issue.ref,
        "assets": [],
        "labels": [label(urls, repo, repo.labels[i]) for i in issue.labels if i in repo.labels],
        "milestone": milestone(repo, ms) if ms is not None else None,
        "assignee": assignee,
        "assignees": assignees,
        "state": issue.state,
        "is_locked": issue.is_locked,
        "comments": sum(
            1 for c in repo.comments.values() if c.index == issue.index and c.review_id is None
        ),
        "created_at": _t(issue.created),
        "updated_at": _t(issue.updated),
        "closed_at": _t(issue.closed_at),
        "due_date": _t(issue.due_date),
        "pull_request": (
            {
                "merged": pull.merged,
                "merged_at": _t(pull.merged_at),
                "draft": pull.draft,
                "html_url": _issue_html(urls, repo, issue),
            }
            if pull is not None
            else None
        ),
        "repository": {
            "id": repo.id,
            "name": repo.name,
            "owner": repo.owner.login,
            "full_name": repo.full_name,
        },
        "pin_order": 0,
    }


def comment(urls: Urls, repo: Repo, c: Comment, viewer: User | None) -> Json:
    parent = repo.issues.get(c.index)
    html = _issue_html(urls, repo, parent) if parent is not None else ""
    is_pull = parent is not None and parent.pull is not None
    return {
        "id": c.id,
        "html_url": f"{html}#issuecomment-{c.id}",
        "pull_request_url": html if is_pull else "",
        "issue_url": html if not is_pull else "",
        "user": user(urls, c.poster, viewer),
        "original_author": "",
        "original_author_id": 0,
        "body": c.body,
        "assets": [],
        "created_at": _t(c.created),
        "updated_at": _t(c.updated),
    }


def reaction(urls: Urls, r: Reaction, viewer: User | None) -> Json:
    return {"user": user(urls, r.user, viewer), "content": r.content, "created_at": _t(r.created)}


def _branch(urls: Urls, state: State, repo: Repo, ref: str, sha: str, viewer: User | None) -> Json:
    return {
        "label": ref,
        "ref": ref,
        "sha": sha,
        "repo_id": repo.id,
        "repo": repository(urls, state, repo, viewer),
    }


def pull(urls: Urls, state: State, repo: Repo, issue: Issue, viewer: User | None) -> Json:
    pr = issue.pull
    assert pr is not None
    ms = repo.milestones.get(issue.milestone) if issue.milestone is not None else None
    assignee, assignees = _assignees(urls, issue, viewer)
    html = _issue_html(urls, repo, issue)
    base_sha = bare_repos.branch_sha(repo.git_dir, pr.base_ref) or pr.merge_base
    try:
        _, additions, deletions, changed = bare_repos.compare(
            repo.git_dir, pr.merge_base, pr.head_sha
        )
    except (KeyError, ValueError):
        additions = deletions = changed = 0
    mergeable = not pr.merged and issue.state == "open"
    return {
        "id": issue.id,
        "url": html,
        "number": issue.index,
        "user": user(urls, issue.poster, viewer),
        "title": issue.title,
        "body": issue.body,
        "labels": [label(urls, repo, repo.labels[i]) for i in issue.labels if i in repo.labels],
        "milestone": milestone(repo, ms) if ms is not None else None,
        "assignee": assignee,
        "assignees": assignees,
        "requested_reviewers": [user(urls, u, viewer) for u in pr.requested_reviewers],
        "requested_reviewers_teams": [],
        "state": issue.state,
        "draft": pr.draft,
        "is_locked": issue.is_locked,
        "comments": sum(
            1 for c in repo.comments.values() if c.index == issue.index and c.review_id is None
        ),
        "review_comments": sum(
            1 for c in repo.comments.values() if c.index == issue.index and c.review_id
        ),
        "additions": additions,
        "deletions": deletions,
        "changed_files": changed,
        "html_url": html,
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "mergeable": mergeable,
        "merged": pr.merged,
        "merged_at": _t(pr.merged_at),
        "merge_commit_sha": pr.merge_commit_sha,
        "merged_by": user(urls, pr.merged_by, viewer) if pr.merged_by is not None else None,
        "allow_maintainer_edit": pr.allow_maintainer_edit,
        "base": _branch(urls, state, repo, pr.base_ref, base_sha, viewer),
        "head": _branch(urls, state, repo, pr.head_ref, pr.head_sha, viewer),
        "merge_base": pr.merge_base,
        "due_date": _t(issue.due_date),
        "created_at": _t(issue.created),
        "updated_at": _t(issue.updated),
        "closed_at": _t(issue.closed_at),
        "pin_order": 0,
        "flow": 0,
    }


def review(urls: Urls, repo: Repo, rv: Review, viewer: User | None) -> Json:
    html = f"{urls.repo_html(repo)}/pulls/{rv.index}"
    return {
        "id": rv.id,
        "user": user(urls, rv.reviewer, viewer),
        "team": None,
        "state": rv.state,
        "body": rv.body,
        "commit_id": rv.commit_id,
        "stale": rv.stale,
        "official": rv.official,
        "dismissed": rv.dismissed,
        "comments_count": sum(1 for c in repo.comments.values() if c.review_id == rv.id),
        "submitted_at": _t(rv.submitted or rv.created),
        "updated_at": _t(rv.updated),
        "html_url": f"{html}#issuecomment-{rv.id}",
        "pull_request_url": html,
    }


def review_comment(urls: Urls, repo: Repo, c: Comment, viewer: User | None) -> Json:
    html = f"{urls.repo_html(repo)}/pulls/{c.index}"
    return {
        "id": c.id,
        "body": c.body,
        "user": user(urls, c.poster, viewer),
        "resolver": None,
        "pull_request_review_id": c.review_id,
        "created_at": _t(c.created),
        "updated_at": _t(c.updated),
        "path": c.path,
        "commit_id": c.commit_id,
        "original_commit_id": c.commit_id,
        "diff_hunk": c.diff_hunk,
        "position": c.line if c.line > 0 else 0,
        "original_position": -c.line if c.line < 0 else 0,
        "html_url": f"{html}#issuecomment-{c.id}",
        "pull_request_url": html,
    }


def attachment(urls: Urls, a: Attachment) -> Json:
    return {
        "id": a.id,
        "name": a.name,
        "size": a.size,
        "download_count": a.download_count,
        "created_at": _t(a.created),
        "uuid": a.uuid,
        "browser_download_url": f"{urls.root}/attachments/{a.uuid}",
        "type": "attachment",
    }


def release(urls: Urls, repo: Repo, rel: Release, viewer: User | None) -> Json:
    html = urls.repo_html(repo)
    return {
        "id": rel.id,
        "tag_name": rel.tag_name,
        "target_commitish": rel.target,
        "name": rel.title,
        "body": rel.note,
        "url": f"{urls.repo_api(repo)}/releases/{rel.id}",
        "html_url": f"{html}/releases/tag/{quote(rel.tag_name)}",
        "tarball_url": f"{html}/archive/{quote(rel.tag_name)}.tar.gz",
        "zipball_url": f"{html}/archive/{quote(rel.tag_name)}.zip",
        "hide_archive_links": rel.hide_archive_links,
        "upload_url": f"{urls.repo_api(repo)}/releases/{rel.id}/assets",
        "draft": rel.draft,
        "prerelease": rel.prerelease,
        "created_at": _t(rel.created),
        "published_at": _t(rel.created),
        "author": user(urls, rel.author, viewer),
        "assets": [attachment(urls, repo.attachments[i]) for i in rel.attachments],
        "archive_download_count": {"zip": 0, "tar_gz": 0},
    }
