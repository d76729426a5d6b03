"""GitHub's JSON for each record: complete objects, valid against the description's schemas.

URLs point at the fake (its API, uploads and web/Git hosts) so a client can follow them.
"""

from __future__ import annotations

import base64
import zlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from tests.fakes.forge_server.clock import iso
from tests.fakes.github.models import (
    App,
    Asset,
    Installation,
    Issue,
    IssueComment,
    Label,
    Milestone,
    Release,
    Repo,
    Review,
    ReviewComment,
    User,
)

Json = dict[str, Any]


@dataclass(frozen=True)
class Urls:
    api: str
    uploads: str
    web: str

    def repo_api(self, repo: Repo) -> str:
        return f"{self.api}/repos/{repo.owner.login}/{repo.name}"

    def repo_web(self, repo: Repo) -> str:
        return f"{self.web}/{repo.owner.login}/{repo.name}"


def node_id(prefix: str, number: int) -> str:
    return prefix + base64.b64encode(number.to_bytes(8, "big")).decode().rstrip("=")


def user(urls: Urls, u: User | None) -> Json | None:
    if u is None:
        return None
    login = quote(u.login, safe="")
    api = f"{urls.api}/users/{login}"
    html = f"{urls.web}/apps/{u.app_slug}" if u.app_slug else f"{urls.web}/{login}"
    out: Json = {
        "login": u.login,
        "id": u.id,
        "node_id": node_id(u.node_prefix, u.id),
        "avatar_url": f"https://avatars.githubusercontent.com/u/{u.id}?v=4",
        "gravatar_id": "",
        "url": api,
        "html_url": html,
        "followers_url": f"{api}/followers",
        "following_url": f"{api}/following{{/other_user}}",
        "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api}/subscriptions",
        "organizations_url": f"{api}/orgs",
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events{{/privacy}}",
        "received_events_url": f"{api}/received_events",
        "type": u.type,
        "user_view_type": "public",
        "site_admin": False,
    }
    if u.name is not None:
        out["name"] = u.name
    return out


def permissions_for(can_read: bool, can_write: bool, is_admin: bool) -> Json:
    return {
        "admin": is_admin,
        "maintain": is_admin,
        "push": can_write,
        "triage": can_write,
        "pull": can_read,
    }


def repository(urls: Urls, repo: Repo, *, permissions: Json | None = None) -> Json:
    """The ``repository`` schema (head/base of a pull request, installation listings)."""
    api = urls.repo_api(repo)
    web = urls.repo_web(repo)
    open_issues = sum(1 for i in repo.issues.values() if i.state == "open")
    out: Json = {
        "id": repo.id,
        "node_id": node_id("R_kgDO", repo.id),
        "name": repo.name,
        "full_name": repo.full_name,
        "owner": user(urls, repo.owner),
        "private": repo.private,
        "html_url": web,
        "description": repo.description,
        "fork": False,
        "url": api,
        "archive_url": f"{api}/{{archive_format}}{{/ref}}",
        "assignees_url": f"{api}/assignees{{/user}}",
        "blobs_url": f"{api}/git/blobs{{/sha}}",
        "branches_url": f"{api}/branches{{/branch}}",
        "collaborators_url": f"{api}/collaborators{{/collaborator}}",
        "comments_url": f"{api}/comments{{/number}}",
        "commits_url": f"{api}/commits{{/sha}}",
        "compare_url": f"{api}/compare/{{base}}...{{head}}",
        "contents_url": f"{api}/contents/{{+path}}",
        "contributors_url": f"{api}/contributors",
        "deployments_url": f"{api}/deployments",
        "downloads_url": f"{api}/downloads",
        "events_url": f"{api}/events",
        "forks_url": f"{api}/forks",
        "git_commits_url": f"{api}/git/commits{{/sha}}",
        "git_refs_url": f"{api}/git/refs{{/sha}}",
        "git_tags_url": f"{api}/git/tags{{/sha}}",
        "git_url": f"git:{web.split(':', 1)[1]}.git",
        "issue_comment_url": f"{api}/issues/comments{{/number}}",
        "issue_events_url": f"{api}/issues/events{{/number}}",
        "issues_url": f"{api}/issues{{/number}}",
        "keys_url": f"{api}/keys{{/key_id}}",
        "labels_url": f"{api}/labels{{/name}}",
        "languages_url": f"{api}/languages",
        "merges_url": f"{api}/merges",
        "milestones_url": f"{api}/milestones{{/number}}",
        "notifications_url": f"{api}/notifications{{?since,all,participating}}",
        "pulls_url": f"{api}/pulls{{/number}}",
        "releases_url": f"{api}/releases{{/id}}",
        "ssh_url": f"git@github.com:{repo.full_name}.git",
        "stargazers_url": f"{api}/stargazers",
        "statuses_url": f"{api}/statuses/{{sha}}",
        "subscribers_url": f"{api}/subscribers",
        "subscription_url": f"{api}/subscription",
        "tags_url": f"{api}/tags",
        "teams_url": f"{api}/teams",
        "trees_url": f"{api}/git/trees{{/sha}}",
        "clone_url": f"{web}.git",
        "mirror_url": None,
        "hooks_url": f"{api}/hooks",
        "svn_url": web,
        "homepage": None,
        "language": None,
        "forks_count": 0,
        "forks": 0,
        "stargazers_count": 0,
        "watchers_count": 0,
        "watchers": 0,
        "size": 0,
        "default_branch": repo.default_branch,
        "open_issues_count": open_issues,
        "open_issues": open_issues,
        "is_template": False,
        "topics": [],
        "has_issues": True,
        "has_projects": True,
        "has_wiki": repo.has_wiki,
        "has_pages": False,
        "has_downloads": True,
        "has_discussions": False,
        "archived": False,
        "disabled": False,
        "visibility": "internal" if repo.internal else "private" if repo.private else "public",
        "pushed_at": iso(repo.pushed_at or repo.created_at),
        "created_at": iso(repo.created_at),
        "updated_at": iso(repo.updated_at),
        "license": None,
        "allow_forking": True,
        "web_commit_signoff_required": False,
    }
    if permissions is not None:
        out["permissions"] = permissions
    return out


def full_repository(urls: Urls, repo: Repo, *, permissions: Json | None = None) -> Json:
    out = repository(urls, repo, permissions=permissions)
    out.update(
        {
            "network_count": 0,
            "subscribers_count": 0,
            "allow_rebase_merge": True,
            "allow_squash_merge": True,
            "allow_merge_commit": True,
            "allow_auto_merge": False,
            "delete_branch_on_merge": False,
        }
    )
    return out


def label(urls: Urls, repo: Repo, lb: Label) -> Json:
    """A label as GitHub's stable description and its webhooks have it."""
    return {
        "id": lb.id,
        "node_id": node_id("LA_kwDO", lb.id),
        "url": f"{urls.repo_api(repo)}/labels/{quote(lb.name, safe='')}",
        "name": lb.name,
        "color": lb.color,
        "default": lb.default,
        "description": lb.description,
    }


#: What the REST API's labels carry beyond ``label``: GitHub's next description has them
#: (required; githubkit's models are generated from it), the stable one the contract
#: holds does not yet, nor do webhook payloads (tests/contracts/README.md). The fake
#: never archives a label.
LABEL_ARCHIVE = {"archived_at": None, "archived_by": None}


def rest_label(urls: Urls, repo: Repo, lb: Label) -> Json:
    """A label as the REST API answers it (``LABEL_ARCHIVE`` included)."""
    return label(urls, repo, lb) | LABEL_ARCHIVE


def with_rest_labels(out: Json) -> Json:
    """An issue or pull request whose ``labels`` are the REST API's (``rest_label``)."""
    out["labels"] = [lb | LABEL_ARCHIVE for lb in out["labels"]]
    return out


def milestone(urls: Urls, repo: Repo, ms: Milestone | None) -> Json | None:
    if ms is None:
        return None
    members = [i for i in repo.issues.values() if i.milestone == ms.number]
    api = f"{urls.repo_api(repo)}/milestones/{ms.number}"
    return {
        "url": api,
        "html_url": f"{urls.repo_web(repo)}/milestone/{ms.number}",
        "labels_url": f"{api}/labels",
        "id": ms.id,
        "node_id": node_id("MI_kwDO", ms.id),
        "number": ms.number,
        "state": ms.state,
        "title": ms.title,
        "description": ms.description,
        "creator": user(urls, ms.creator),
        "open_issues": sum(1 for i in members if i.state == "open"),
        "closed_issues": sum(1 for i in members if i.state == "closed"),
        "created_at": iso(ms.created_at),
        "updated_at": iso(ms.updated_at),
        "closed_at": iso(ms.closed_at),
        "due_on": iso(ms.due_on),
    }


def reactions(url: str) -> Json:
    counts = dict.fromkeys(
        ("+1", "-1", "laugh", "hooray", "confused", "heart", "rocket", "eyes"), 0
    )
    return {"url": f"{url}/reactions", "total_count": 0, **counts}


def association(repo: Repo, u: User | None) -> str:
    if u is None:
        return "NONE"
    if u.login == repo.owner.login:
        return "OWNER"
    if u.login in repo.collaborators:
        return "COLLABORATOR"
    return "NONE"


def integration(urls: Urls, app: App | None, installations: int = 0) -> Json | None:
    if app is None:
        return None
    return {
        "id": app.id,
        "slug": app.slug,
        "node_id": node_id("A_kwHO", app.id),
        "client_id": app.client_id,
        "owner": user(urls, app.owner),
        "name": app.name,
        "description": "reposync test app",
        "external_url": f"{urls.web}/apps/{app.slug}",
        "html_url": f"{urls.web}/apps/{app.slug}",
        "created_at": iso(app.created_at),
        "updated_at": iso(app.created_at),
        "permissions": dict(app.permissions),
        "events": [],
        "installations_count": installations,
    }


def issue(urls: Urls, repo: Repo, it: Issue, app: App | None = None) -> Json:
    api = f"{urls.repo_api(repo)}/issues/{it.number}"
    kind = "pull" if it.is_pull else "issues"
    html = f"{urls.repo_web(repo)}/{kind}/{it.number}"
    comments = sum(1 for c in repo.comments.values() if c.issue_number == it.number)
    out: Json = {
        "id": it.id,
        "node_id": node_id("PR_kwDO" if it.is_pull else "I_kwDO", it.id),
        "url": api,
        "repository_url": urls.repo_api(repo),
        "labels_url": f"{api}/labels{{/name}}",
        "comments_url": f"{api}/comments",
        "events_url": f"{api}/events",
        "html_url": html,
        "number": it.number,
        "state": it.state,
        "state_reason": it.state_reason,
        "title": it.title,
        "body": it.body,
        "user": user(urls, it.user),
        "labels": [label(urls, repo, repo.labels[i]) for i in it.labels if i in repo.labels],
        "assignee": user(urls, it.assignees[0]) if it.assignees else None,
        "assignees": [user(urls, a) for a in it.assignees],
        "milestone": milestone(urls, repo, repo.milestones.get(it.milestone or 0)),
        "locked": it.locked,
        "active_lock_reason": it.active_lock_reason,
        "comments": comments,
        "created_at": iso(it.created_at),
        "updated_at": iso(it.updated_at),
        "closed_at": iso(it.closed_at),
        "closed_by": user(urls, it.closed_by),
        "author_association": association(repo, it.user),
        "reactions": reactions(api),
        "timeline_url": f"{api}/timeline",
        "performed_via_github_app": integration(urls, app),
    }
    if it.pull is not None:
        pulls = f"{urls.repo_api(repo)}/pulls/{it.number}"
        out["draft"] = it.pull.draft
        out["pull_request"] = {
            "url": pulls,
            "html_url": html,
            "diff_url": f"{html}.diff",
            "patch_url": f"{html}.patch",
            "merged_at": iso(it.pull.merged_at),
        }
    return out


def issue_comment(urls: Urls, repo: Repo, c: IssueComment, app: App | None = None) -> Json:
    api = f"{urls.repo_api(repo)}/issues/comments/{c.id}"
    parent = repo.issues.get(c.issue_number)
    kind = "pull" if parent is not None and parent.is_pull else "issues"
    return {
        "id": c.id,
        "node_id": node_id("IC_kwDO", c.id),
        "url": api,
        "html_url": f"{urls.repo_web(repo)}/{kind}/{c.issue_number}#issuecomment-{c.id}",
        "body": c.body,
        "user": user(urls, c.user),
        "created_at": iso(c.created_at),
        "updated_at": iso(c.updated_at),
        "issue_url": f"{urls.repo_api(repo)}/issues/{c.issue_number}",
        "author_association": association(repo, c.user),
        "performed_via_github_app": integration(urls, app),
        "reactions": reactions(api),
    }


def _branch(urls: Urls, repo: Repo, ref: str, sha: str) -> Json:
    return {
        "label": f"{repo.owner.login}:{ref}",
        "ref": ref,
        "sha": sha,
        "user": user(urls, repo.owner),
        "repo": repository(urls, repo),
    }


def _href(url: str) -> Json:
    return {"href": url}


def pull_request_simple(urls: Urls, repo: Repo, it: Issue) -> Json:
    pr = it.pull
    assert pr is not None
    api = f"{urls.repo_api(repo)}/pulls/{it.number}"
    html = f"{urls.repo_web(repo)}/pull/{it.number}"
    issue_api = f"{urls.repo_api(repo)}/issues/{it.number}"
    statuses = f"{urls.repo_api(repo)}/statuses/{pr.head_sha}"
    return {
        "url": api,
        "id": pr.id,
        "node_id": node_id("PR_kwDO", pr.id),
        "html_url": html,
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "issue_url": issue_api,
        "commits_url": f"{api}/commits",
        "review_comments_url": f"{api}/comments",
        "review_comment_url": f"{urls.repo_api(repo)}/pulls/comments{{/number}}",
        "comments_url": f"{issue_api}/comments",
        "statuses_url": statuses,
        "number": it.number,
        "state": it.state,
        "locked": it.locked,
        "title": it.title,
        "user": user(urls, it.user),
        "body": it.body,
        "labels": [label(urls, repo, repo.labels[i]) for i in it.labels if i in repo.labels],
        "milestone": milestone(urls, repo, repo.milestones.get(it.milestone or 0)),
        "active_lock_reason": it.active_lock_reason,
        "created_at": iso(it.created_at),
        "updated_at": iso(it.updated_at),
        "closed_at": iso(it.closed_at),
        "merged_at": iso(pr.merged_at),
        "merge_commit_sha": pr.merge_commit_sha,
        "assignee": user(urls, it.assignees[0]) if it.assignees else None,
        "assignees": [user(urls, a) for a in it.assignees],
        "requested_reviewers": [user(urls, u) for u in pr.requested_reviewers],
        "requested_teams": [],
        "head": _branch(urls, repo, pr.head_ref, pr.head_sha),
        "base": _branch(urls, repo, pr.base_ref, pr.base_sha),
        "_links": {
            "self": _href(api),
            "html": _href(html),
            "issue": _href(issue_api),
            "comments": _href(f"{issue_api}/comments"),
            "review_comments": _href(f"{api}/comments"),
            "review_comment": _href(f"{urls.repo_api(repo)}/pulls/comments{{/number}}"),
            "commits": _href(f"{api}/commits"),
            "statuses": _href(statuses),
        },
        "author_association": association(repo, it.user),
        "auto_merge": None,
        "draft": pr.draft,
    }


def pull_request(urls: Urls, repo: Repo, it: Issue, stats: tuple[int, int, int, int]) -> Json:
    pr = it.pull
    assert pr is not None
    commits, additions, deletions, changed = stats
    out = pull_request_simple(urls, repo, it)
    out.update(
        {
            "merged": pr.merged,
            "mergeable": None if pr.merged or it.state == "closed" else True,
            "rebaseable": None if pr.merged or it.state == "closed" else True,
            "mergeable_state": "unknown" if it.state == "closed" else "clean",
            "merged_by": user(urls, pr.merged_by),
            "comments": sum(1 for c in repo.comments.values() if c.issue_number == it.number),
            "review_comments": sum(
                1 for c in repo.review_comments.values() if c.pull_number == it.number
            ),
            "maintainer_can_modify": pr.maintainer_can_modify,
            "commits": commits,
            "additions": additions,
            "deletions": deletions,
            "changed_files": changed,
        }
    )
    return out


def review(urls: Urls, repo: Repo, rv: Review) -> Json:
    pull = f"{urls.repo_api(repo)}/pulls/{rv.pull_number}"
    html = f"{urls.repo_web(repo)}/pull/{rv.pull_number}#pullrequestreview-{rv.id}"
    out: Json = {
        "id": rv.id,
        "node_id": node_id("PRR_kwDO", rv.id),
        "user": user(urls, rv.user),
        "body": rv.body,
        "state": rv.state,
        "html_url": html,
        "pull_request_url": pull,
        "author_association": association(repo, rv.user),
        "_links": {"html": _href(html), "pull_request": _href(pull)},
        "commit_id": rv.commit_id,
    }
    if rv.submitted_at is not None:
        out["submitted_at"] = iso(rv.submitted_at)
    return out


def review_comment(urls: Urls, repo: Repo, c: ReviewComment) -> Json:
    api = f"{urls.repo_api(repo)}/pulls/comments/{c.id}"
    pull = f"{urls.repo_api(repo)}/pulls/{c.pull_number}"
    html = f"{urls.repo_web(repo)}/pull/{c.pull_number}#discussion_r{c.id}"
    out: Json = {
        "url": api,
        "pull_request_review_id": c.review_id,
        "id": c.id,
        "node_id": node_id("PRRC_kwDO", c.id),
        "diff_hunk": c.diff_hunk,
        "path": c.path,
        "commit_id": c.commit_id,
        "original_commit_id": c.original_commit_id,
        "user": user(urls, c.user),
        "body": c.body,
        "created_at": iso(c.created_at),
        "updated_at": iso(c.updated_at),
        "html_url": html,
        "pull_request_url": pull,
        "author_association": association(repo, c.user),
        "_links": {"self": _href(api), "html": _href(html), "pull_request": _href(pull)},
        "start_line": c.start_line,
        "original_start_line": c.start_line,
        "start_side": c.start_side,
        "side": c.side,
        "subject_type": c.subject_type,
        "reactions": reactions(api),
    }
    if c.line is not None:
        out["line"] = c.line
        out["original_line"] = c.line
    if c.position is not None:
        out["position"] = c.position
        out["original_position"] = c.position
    if c.in_reply_to_id is not None:
        out["in_reply_to_id"] = c.in_reply_to_id
    return out


def asset(urls: Urls, repo: Repo, a: Asset, release: Release) -> Json:
    return {
        "url": f"{urls.repo_api(repo)}/releases/assets/{a.id}",
        "browser_download_url": (
            f"{urls.repo_web(repo)}/releases/download/"
            f"{quote(release.tag_name, safe='')}/{quote(a.name, safe='')}"
        ),
        "id": a.id,
        "node_id": node_id("RA_kwDO", a.id),
        "name": a.name,
        "label": a.label,
        "state": a.state,
        "content_type": a.content_type,
        "size": a.size,
        "digest": a.digest,
        "download_count": a.download_count,
        "created_at": iso(a.created_at),
        "updated_at": iso(a.updated_at),
        "uploader": user(urls, a.uploader),
    }


def release(urls: Urls, repo: Repo, r: Release) -> Json:
    api = f"{urls.repo_api(repo)}/releases/{r.id}"
    tag = quote(r.tag_name, safe="")
    html_tag = f"untagged-{r.id:x}" if r.draft else tag
    return {
        "url": api,
        "html_url": f"{urls.repo_web(repo)}/releases/tag/{html_tag}",
        "assets_url": f"{api}/assets",
        "upload_url": (
            f"{urls.uploads}/repos/{repo.owner.login}/{repo.name}/releases/{r.id}"
            "/assets{?name,label}"
        ),
        "tarball_url": f"{urls.repo_api(repo)}/tarball/{tag}",
        "zipball_url": f"{urls.repo_api(repo)}/zipball/{tag}",
        "id": r.id,
        "node_id": node_id("RE_kwDO", r.id),
        "tag_name": r.tag_name,
        "target_commitish": r.target_commitish,
        "name": r.name,
        "body": r.body,
        "draft": r.draft,
        "prerelease": r.prerelease,
        "immutable": False,
        "created_at": iso(r.created_at),
        "published_at": iso(r.published_at),
        "updated_at": iso(r.updated_at),
        "author": user(urls, r.author),
        "assets": [asset(urls, repo, repo.assets[i], r) for i in r.assets if i in repo.assets],
    }


def git_ref(urls: Urls, repo: Repo, name: str, sha: str, kind: str) -> Json:
    api = urls.repo_api(repo)
    plural = "tags" if kind == "tag" else "commits"
    return {
        "ref": name,
        "node_id": node_id("REF_kwDO", zlib.crc32(f"{repo.id}:{name}".encode())),
        "url": f"{api}/git/{quote(name, safe='/')}",
        "object": {"type": kind, "sha": sha, "url": f"{api}/git/{plural}/{sha}"},
    }


def installation(urls: Urls, inst: Installation) -> Json:
    return {
        "id": inst.id,
        "client_id": inst.app.client_id,
        "account": user(urls, inst.account),
        "repository_selection": inst.repository_selection,
        "access_tokens_url": f"{urls.api}/app/installations/{inst.id}/access_tokens",
        "repositories_url": f"{urls.api}/installation/repositories",
        # GitHub's page to manage it: an organization's settings, or the user's own.
        "html_url": (
            f"{urls.web}/organizations/{inst.account.login}/settings/installations/{inst.id}"
            if inst.account.type == "Organization"
            else f"{urls.web}/settings/installations/{inst.id}"
        ),
        "app_id": inst.app.id,
        "app_slug": inst.app.slug,
        "target_id": inst.account.id,
        "target_type": inst.account.type,
        "permissions": dict(inst.permissions),
        "events": [],
        "created_at": iso(inst.created_at),
        "updated_at": iso(inst.created_at),
        "single_file_name": None,
        "has_multiple_single_files": False,
        "single_file_paths": [],
        "suspended_by": None,
        "suspended_at": None,
    }
