"""The bare Git repositories behind the test servers' repositories (through pygit2).

Forge-neutral: the GitHub and the Forgejo test servers keep their repositories in these;
``bot`` names whose commit a repository's first commit is (the forge's own bot).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pygit2

BOT_SIGNATURE = ("GitHub", "noreply@github.com")


def init(
    path: Path,
    default_branch: str,
    *,
    auto_init: bool,
    when: datetime,
    bot: tuple[str, str] = BOT_SIGNATURE,
) -> None:
    """A bare repository configured as forges keep theirs: ``refs/pull/*`` cannot be
    pushed; with ``auto_init`` a first commit (a README) by ``bot``."""
    repo = pygit2.init_repository(str(path), bare=True, initial_head=default_branch)
    config = repo.config
    config["receive.hideRefs"] = "refs/pull"
    config["receive.denyNonFastForwards"] = False
    config["receive.denyDeletes"] = False
    config["http.receivepack"] = True
    config["uploadpack.allowReachableSHA1InWant"] = True
    if auto_init:
        _first_commit(
            repo, default_branch, "README.md", f"# {path.stem}\n", "Initial commit", when, bot
        )


def init_wiki(path: Path) -> None:
    """An empty wiki repository, as GitHub makes one for a wiki's first push: bare, its
    HEAD on ``master`` (a wiki's branch), pushes of any kind allowed."""
    repo = pygit2.init_repository(str(path), bare=True, initial_head="master")
    config = repo.config
    config["receive.denyNonFastForwards"] = False
    config["receive.denyDeletes"] = False
    config["http.receivepack"] = True


def first_wiki_page(path: Path, title: str, body: str, when: datetime) -> str:
    """A wiki created the way github.com creates one: its first page saved in the
    browser (``<title>.md`` committed on ``master``). The commit's id."""
    init_wiki(path)
    return _first_commit(
        _open(path), "master", f"{title}.md", body, f"Created {title} (markdown)", when
    )


def _first_commit(
    repo: pygit2.Repository,
    branch: str,
    name: str,
    content: str,
    message: str,
    when: datetime,
    bot: tuple[str, str] = BOT_SIGNATURE,
) -> str:
    """A root commit of one file on ``branch``, by the forge's bot; its id."""
    sig = _signature(bot, when)
    builder = repo.TreeBuilder()
    builder.insert(name, repo.create_blob(content.encode()), pygit2.enums.FileMode.BLOB)
    return str(repo.create_commit(f"refs/heads/{branch}", sig, sig, message, builder.write(), []))


def _signature(who: tuple[str, str], when: datetime) -> pygit2.Signature:
    return pygit2.Signature(who[0], who[1], int(when.timestamp()), 0)


def _open(path: Path) -> pygit2.Repository:
    return pygit2.Repository(str(path))


def is_empty(path: Path) -> bool:
    repo = _open(path)
    return not any(True for _ in repo.references)


def head_branch(path: Path) -> str:
    """The branch HEAD names (it may not exist yet: a new repository's)."""
    target = _open(path).references["HEAD"].target
    return str(target).removeprefix("refs/heads/")


def set_head(path: Path, branch: str) -> None:
    _open(path).references.create("HEAD", f"refs/heads/{branch}", force=True)


def branch_sha(path: Path, branch: str) -> str | None:
    ref = _open(path).references.get(f"refs/heads/{branch}")
    return str(ref.peel(pygit2.Commit).id) if ref is not None else None


def resolve_commit(path: Path, commitish: str) -> str | None:
    """A branch, tag or commit id, as a commit id (None if it names nothing)."""
    repo = _open(path)
    for name in (f"refs/heads/{commitish}", f"refs/tags/{commitish}", commitish):
        ref = repo.references.get(name) if name.startswith("refs/") else None
        if ref is not None:
            return str(ref.peel(pygit2.Commit).id)
    try:
        obj = repo.revparse_single(commitish)
        return str(obj.peel(pygit2.Commit).id)
    except (KeyError, ValueError, pygit2.GitError):
        return None


def set_ref(path: Path, name: str, sha: str) -> None:
    _open(path).references.create(name, pygit2.Oid(hex=sha), force=True)


def ref_target(path: Path, name: str) -> str | None:
    """What the ref ``name`` points at (a tag object for an annotated tag); None if absent."""
    ref = _open(path).references.get(name)
    return str(ref.resolve().target) if ref is not None else None


def delete_ref(path: Path, name: str) -> None:
    _open(path).references.delete(name)


def object_exists(path: Path, sha: str) -> bool:
    try:
        return _open(path).get(sha) is not None
    except (ValueError, pygit2.GitError):
        return False


def is_fast_forward(path: Path, old: str, new: str) -> bool:
    """Whether moving a ref from ``old`` to ``new`` keeps ``old``'s history."""
    try:
        return is_ancestor(path, old, new)
    except (ValueError, pygit2.GitError):
        return False


def tag_exists(path: Path, tag: str) -> bool:
    return _open(path).references.get(f"refs/tags/{tag}") is not None


def is_ancestor(path: Path, ancestor: str, descendant: str) -> bool:
    """Whether ``ancestor`` is reachable from ``descendant`` (or is it)."""
    if ancestor == descendant:
        return True
    repo = _open(path)
    return bool(repo.descendant_of(pygit2.Oid(hex=descendant), pygit2.Oid(hex=ancestor)))


def merge_base(path: Path, a: str, b: str) -> str | None:
    oid = _open(path).merge_base(pygit2.Oid(hex=a), pygit2.Oid(hex=b))
    return str(oid) if oid is not None else None


def compare(path: Path, base: str, head: str) -> tuple[int, int, int, int]:
    """``(commits, additions, deletions, changed_files)`` of ``base...head``."""
    repo = _open(path)
    start = merge_base(path, base, head) or base
    walker = repo.walk(pygit2.Oid(hex=head), pygit2.enums.SortMode.TOPOLOGICAL)
    walker.hide(pygit2.Oid(hex=start))
    commits = sum(1 for _ in walker)
    stats = repo.diff(repo[pygit2.Oid(hex=start)], repo[pygit2.Oid(hex=head)]).stats
    return commits, stats.insertions, stats.deletions, stats.files_changed


@dataclass(frozen=True)
class DiffLine:
    position: int  # GitHub's "position": lines below the file's first @@ header
    old: int | None
    new: int | None
    text: str  # with its +/-/space marker, or the @@ header itself
    hunk_start: int  # index of this hunk's header in the file's lines


def file_diff(path: Path, base: str, head: str, filename: str) -> list[DiffLine] | None:
    """The lines of ``filename`` in the diff ``base...head``; None if it is unchanged."""
    repo = _open(path)
    start = merge_base(path, base, head) or base
    diff = repo.diff(repo[pygit2.Oid(hex=start)], repo[pygit2.Oid(hex=head)])
    for patch in diff:
        delta = patch.delta
        if filename not in (delta.new_file.path, delta.old_file.path):
            continue
        lines: list[DiffLine] = []
        for hunk in patch.hunks:
            header_index = len(lines)
            lines.append(DiffLine(len(lines), None, None, hunk.header.rstrip("\n"), header_index))
            for line in hunk.lines:
                if line.origin not in "+- ":
                    continue
                old = line.old_lineno if line.old_lineno > 0 else None
                new = line.new_lineno if line.new_lineno > 0 else None
                text = line.origin + line.content.rstrip("\n")
                lines.append(DiffLine(len(lines), old, new, text, header_index))
        return lines
    return None


def merge(
    path: Path, base_ref: str, head_sha: str, message: str, who: tuple[str, str], when: datetime
) -> str:
    """A merge commit of ``head_sha`` into branch ``base_ref`` (as a forge's merge button)."""
    repo = _open(path)
    base = repo.references[f"refs/heads/{base_ref}"].peel(pygit2.Commit)
    head = repo[pygit2.Oid(hex=head_sha)].peel(pygit2.Commit)
    index = repo.merge_commits(base, head)
    if index.conflicts is not None:
        raise ValueError(f"merging {head_sha} into {base_ref} conflicts")
    tree = index.write_tree(repo)
    sig = _signature(who, when)
    oid = repo.create_commit(f"refs/heads/{base_ref}", sig, sig, message, tree, [base.id, head.id])
    return str(oid)


def matching_refs(path: Path, prefix: str) -> list[tuple[str, str, str]]:
    """``(name, object id, object type)`` of refs whose name starts with ``prefix``."""
    repo = _open(path)
    found = []
    for name in sorted(repo.references):
        if not name.startswith(prefix):
            continue
        ref = repo.references[name].resolve()
        obj = repo[ref.target]
        kind = "tag" if obj.type == pygit2.enums.ObjectType.TAG else "commit"
        found.append((name, str(ref.target), kind))
    return found
