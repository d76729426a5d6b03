"""Webhook payloads as GitHub sends them, shaped to the webhooks' JSON Schema.

The records are the REST API's (``render``), but a webhook's objects are not the REST
API's: the schema (``tests/contracts/github-webhooks-schema.json``, octokit's, with
``additionalProperties: false`` everywhere) lists other fields. So each builder here takes
the REST shape and fits it: a webhook ``user`` has no ``user_view_type``, a webhook
``repository`` always carries ``custom_properties``, a review's ``state`` is lower case,
a release has no ``updated_at``, and so on. Where the schema insists on a string and the
record has none (a release without a name, a previous body that was empty), the payload
says ``""``: a receiver validating against the schema must accept what the fake sends.

A ``push``'s ``repository`` is the legacy shape GitHub still sends there: ``created_at``
and ``pushed_at`` as Unix times, plus ``stargazers`` and ``master_branch``.
"""

from __future__ import annotations

import contextlib
import random
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pygit2

from tests.fakes.forge_server.clock import iso
from tests.fakes.github import render
from tests.fakes.github.models import (
    App,
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
from tests.fakes.github.render import Json, Urls
from tests.fakes.gitserver import bare_repos

#: GitHub's zen sayings: ``ping`` carries one.
ZEN = (
    "Design for failure.",
    "Keep it logically awesome.",
    "Speak like a human.",
    "Half measures are as bad as nothing at all.",
    "Mind your words, they are important.",
    "Non-blocking is better than blocking.",
    "Favor focus over features.",
    "Approachable is better than simple.",
    "Anything added dilutes everything else.",
    "It's not fully shipped until it's fast.",
    "Practicality beats purity.",
    "Responsive is better than fast.",
    "Avoid administrative distraction.",
    "Encourage flow.",
)
#: At most this many commits are listed in one ``push`` payload (GitHub's webhook limit).
MAX_PUSH_COMMITS = 2048
ZERO = "0" * 40


def user(urls: Urls, u: User | None) -> Json | None:
    """A webhook ``user``: the REST user without ``user_view_type``."""
    out = render.user(urls, u)
    if out is not None:
        out.pop("user_view_type", None)
    return out


def _users(urls: Urls, users: list[User]) -> list[Json]:
    return [out for u in users if (out := user(urls, u)) is not None]


def _without_view_type(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_view_type(v) for k, v in value.items() if k != "user_view_type"}
    if isinstance(value, list):
        return [_without_view_type(v) for v in value]
    return value


def _fit_users(value: Json) -> Json:
    """Every nested REST user made a webhook user (``user_view_type`` dropped)."""
    fitted: Json = _without_view_type(value)
    return fitted


def organization(urls: Urls, owner: User) -> Json | None:
    """The ``organization`` of an event in an organization's repository (None for a user's)."""
    if owner.type != "Organization":
        return None
    api = f"{urls.api}/orgs/{owner.login}"
    return {
        "login": owner.login,
        "id": owner.id,
        "node_id": render.node_id(owner.node_prefix, owner.id),
        "url": api,
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events",
        "hooks_url": f"{api}/hooks",
        "issues_url": f"{api}/issues",
        "members_url": f"{api}/members{{/member}}",
        "public_members_url": f"{api}/public_members{{/member}}",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{owner.id}?v=4",
        "description": None,
    }


def repository(urls: Urls, repo: Repo, *, legacy: bool = False) -> Json:
    """A webhook ``repository``; ``legacy`` is the shape of a ``push`` payload's."""
    out = _fit_users(render.repository(urls, repo))
    out["custom_properties"] = {}
    if legacy:
        if repo.owner.type == "Organization":
            out["organization"] = repo.owner.login
        out["created_at"] = int(repo.created_at.timestamp())
        pushed = repo.pushed_at or repo.created_at
        out["pushed_at"] = int(pushed.timestamp())
        out["stargazers"] = out["stargazers_count"]
        out["master_branch"] = repo.default_branch
    return out


def app(urls: Urls, a: App | None) -> Json | None:
    """``performed_via_github_app``: the REST integration minus what the schema lacks."""
    out = render.integration(urls, a)
    if out is None:
        return None
    out = _fit_users(out)
    out.pop("client_id", None)
    out.pop("installations_count", None)
    return out


def label(urls: Urls, repo: Repo, lb: Label) -> Json:
    return render.label(urls, repo, lb)


def milestone(urls: Urls, repo: Repo, ms: Milestone | None) -> Json | None:
    out = render.milestone(urls, repo, ms)
    return _fit_users(out) if out is not None else None


def issue(urls: Urls, repo: Repo, it: Issue, via: App | None) -> Json:
    """A webhook issue: the schema has no ``closed_by``."""
    out = _fit_users(render.issue(urls, repo, it, via))
    out.pop("closed_by", None)
    out["performed_via_github_app"] = app(urls, via)
    return out


def issue_comment(urls: Urls, repo: Repo, c: IssueComment, via: App | None) -> Json:
    out = _fit_users(render.issue_comment(urls, repo, c, via))
    out["performed_via_github_app"] = app(urls, via)
    return out


def _fit_pull(urls: Urls, repo: Repo, out: Json) -> Json:
    out = _fit_users(out)
    for side in ("head", "base"):
        out[side]["repo"] = repository(urls, repo)
    return out


def pull_request(urls: Urls, repo: Repo, it: Issue) -> Json:
    """A webhook ``pull-request`` (the full one, with merge state and diff counts)."""
    pr = it.pull
    assert pr is not None
    stats = bare_repos.compare(repo.git_dir, pr.base_sha, pr.head_sha)
    return _fit_pull(urls, repo, render.pull_request(urls, repo, it, stats))


def simple_pull_request(urls: Urls, repo: Repo, it: Issue) -> Json:
    """What review and review comment events carry."""
    return _fit_pull(urls, repo, render.pull_request_simple(urls, repo, it))


def review(urls: Urls, repo: Repo, rv: Review) -> Json:
    """A webhook review: its ``state`` in lower case, ``submitted_at`` always present."""
    out = _fit_users(render.review(urls, repo, rv))
    out["state"] = rv.state.lower()
    out["submitted_at"] = iso(rv.submitted_at)
    return out


def review_comment(urls: Urls, repo: Repo, c: ReviewComment) -> Json:
    """A webhook review comment: ``position``/``original_position``/``original_line`` are
    always present (a file-level comment has no line: GitHub's legacy ``1`` then)."""
    out = _fit_users(render.review_comment(urls, repo, c))
    out["pull_request_review_id"] = c.review_id if c.review_id is not None else 0
    out["position"] = c.position
    out["original_position"] = c.position if c.position is not None else 1
    out["line"] = c.line
    out["original_line"] = c.line if c.line is not None else 1
    return out


def release(urls: Urls, repo: Repo, r: Release) -> Json:
    """A webhook release: no ``updated_at``/``immutable``, assets without ``digest``, and
    ``name``/``body`` as strings (``""`` when the release has none)."""
    out = _fit_users(render.release(urls, repo, r))
    out.pop("updated_at", None)
    out.pop("immutable", None)
    out["name"] = r.name or ""
    out["body"] = r.body or ""
    for asset in out["assets"]:
        asset.pop("digest", None)
    return out


def installation_lite(inst: Installation) -> Json:
    return {
        "id": inst.id,
        "node_id": render.node_id("MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u", inst.id),
    }


def installation(urls: Urls, inst: Installation) -> Json:
    """An ``installation`` event's installation (the REST one minus what the schema lacks)."""
    out = _fit_users(render.installation(urls, inst))
    out.pop("client_id", None)
    out["events"] = []
    return out


def installation_repository(repo: Repo) -> Json:
    """The short repository entries of ``installation``/``installation_repositories``."""
    return {
        "id": repo.id,
        "node_id": render.node_id("R_kgDO", repo.id),
        "name": repo.name,
        "full_name": repo.full_name,
        "private": repo.private,
    }


def ping(hook_json: Json, hook_id: int, rng: random.Random) -> Json:
    return {"zen": rng.choice(ZEN), "hook_id": hook_id, "hook": hook_json}


# -- pushes -----------------------------------------------------------------------------


def _when(seconds: int, offset_minutes: int) -> str:
    """A commit time as GitHub writes it: ISO 8601 with the commit's own UTC offset."""
    zone = timezone(timedelta(minutes=offset_minutes))
    return datetime.fromtimestamp(seconds, UTC).astimezone(zone).isoformat()


def _person(sig: pygit2.Signature) -> Json:
    return {"name": sig.name, "email": sig.email}


def _files(
    repo: pygit2.Repository, commit: pygit2.Commit
) -> tuple[list[str], list[str], list[str]]:
    """Paths added, removed and modified by ``commit`` (against its first parent)."""
    if commit.parents:
        diff = repo.diff(commit.parents[0], commit)
    else:
        diff = commit.tree.diff_to_tree(swap=True)
    added: list[str] = []
    removed: list[str] = []
    modified: list[str] = []
    for delta in diff.deltas:
        status = delta.status_char()
        if status == "A":
            added.append(delta.new_file.path)
        elif status == "D":
            removed.append(delta.old_file.path)
        else:
            modified.append(delta.new_file.path)
    return added, removed, modified


def commit(
    urls: Urls, repo: Repo, git: pygit2.Repository, c: pygit2.Commit, distinct: bool
) -> Json:
    added, removed, modified = _files(git, c)
    return {
        "id": str(c.id),
        "tree_id": str(c.tree_id),
        "distinct": distinct,
        "message": c.message,
        "timestamp": _when(c.commit_time, c.commit_time_offset),
        "url": f"{urls.repo_web(repo)}/commit/{c.id}",
        "author": _person(c.author),
        "committer": _person(c.committer),
        "added": added,
        "removed": removed,
        "modified": modified,
    }


def pusher(u: User) -> Json:
    return {"name": u.login, "email": f"{u.id}+{u.login}@users.noreply.github.com"}


def push(
    urls: Urls,
    repo: Repo,
    ref: str,
    before: str,
    after: str,
    *,
    others: list[str],
    who: User,
) -> Json:
    """The ``push`` payload of one ref update; ``others`` are the tips of the refs this
    push did not touch (commits reachable from them are not ``distinct``)."""
    git = pygit2.Repository(str(repo.git_dir))
    created, deleted = before == ZERO, after == ZERO
    commits: list[Json] = []
    head: Json | None = None
    forced = False
    if not deleted:
        tip = git[pygit2.Oid(hex=after)].peel(pygit2.Commit)
        known: set[pygit2.Oid] = set()
        if others:
            seen = git.walk(tip.id, pygit2.enums.SortMode.NONE)
            for other in others:
                _hide(git, seen, other)
            known = {c.id for c in seen}
        order = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE
        walker = git.walk(tip.id, order)
        for hidden in [before] if not created else others:
            _hide(git, walker, hidden)
        listed = list(walker)[-MAX_PUSH_COMMITS:]
        commits = [commit(urls, repo, git, c, not others or c.id in known) for c in listed]
        head = commit(urls, repo, git, tip, not others or tip.id in known)
        if not created:
            forced = not bare_repos.is_fast_forward(repo.git_dir, before, str(tip.id))
    short = ref.removeprefix("refs/heads/").removeprefix("refs/tags/")
    if created:
        compare = f"{urls.repo_web(repo)}/compare/{short}"
    else:
        compare = f"{urls.repo_web(repo)}/compare/{before[:12]}...{after[:12]}"
    return {
        "ref": ref,
        "before": before,
        "after": after,
        "created": created,
        "deleted": deleted,
        "forced": forced,
        "base_ref": _base_ref(git, ref, after) if not deleted else None,
        "compare": compare,
        "commits": commits,
        "head_commit": head,
        "repository": repository(urls, repo, legacy=True),
        "pusher": pusher(who),
    }


def _hide(git: pygit2.Repository, walker: pygit2.Walker, sha: str) -> None:
    """Leave the commit ``sha`` names (a tag is peeled) and its history out of ``walker``."""
    # An old tip that is gone (a forced push after gc) hides nothing: list everything.
    with contextlib.suppress(KeyError, ValueError, pygit2.GitError):
        walker.hide(git[pygit2.Oid(hex=sha)].peel(pygit2.Commit).id)


def _base_ref(git: pygit2.Repository, ref: str, after: str) -> str | None:
    """A tag's ``base_ref``: the branch whose tip is the tagged commit (default first)."""
    if not ref.startswith("refs/tags/"):
        return None
    target = git[pygit2.Oid(hex=after)].peel(pygit2.Commit).id
    head = git.references["HEAD"].target
    names = sorted(
        (n for n in git.references if n.startswith("refs/heads/")), key=lambda n: n != head
    )
    for name in names:
        if git.references[name].peel(pygit2.Commit).id == target:
            return name
    return None


def ref_event(repo: Repo, ref: str, *, created: bool) -> Json:
    """``create``/``delete``: the ref's short name and its type."""
    kind = "tag" if ref.startswith("refs/tags/") else "branch"
    out: Json = {
        "ref": ref.removeprefix("refs/heads/").removeprefix("refs/tags/"),
        "ref_type": kind,
        "pusher_type": "user",
    }
    if created:
        out["master_branch"] = repo.default_branch
        out["description"] = repo.description
    return out
