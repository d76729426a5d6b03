"""A Forgejo repository's refs as native git lists them (``git ls-remote``), and which of
them reposync syncs.

Branches and tags are synced; ``refs/pull/N/head`` (where Forgejo keeps every pull
request's head, a fork's too) is counted as unsupported, and its commits are what an
open pull request's shadow branch may be derived from; names git would refuse are
rejected by code.
"""

from __future__ import annotations

from reposync.errors import PermissionDenied, ProviderError
from reposync.git.transport import run_git
from reposync.providers.base import GitRemote, InventoryListing
from reposync.sync.canonical import (
    is_supported_ref,
    printable_ref_name,
    ref_name_problem,
    ref_namespace,
)

_PULL_HEAD = "refs/pull/"


def ls_remote(remote: GitRemote, repo: str, *, missing_ok: bool = False) -> list[tuple[str, str]]:
    """``(name, object id)`` of every ref of ``remote`` (peeled tags left out); a
    repository Forgejo says is not found is ``[]`` with ``missing_ok`` (a wiki not made
    yet), else ``PermissionDenied``."""
    result = run_git(["git", "ls-remote", remote.url], env=remote.env, check=False)
    if result.returncode != 0:
        text = result.stderr.lower()
        missing = "not found" in text or "404" in text
        if missing and missing_ok:
            return []
        if missing or "403" in text or "401" in text:
            raise PermissionDenied(f"git cannot read {repo}: {result.stderr.strip()}")
        run_git(["git", "ls-remote", remote.url], env=remote.env)  # raises the error
        raise ProviderError(f"git ls-remote {repo} failed")  # pragma: no cover
    refs = []
    for line in result.stdout.splitlines():
        oid, _, name = line.partition("\t")
        if name.startswith("refs/") and not name.endswith("^{}"):
            refs.append((name, oid))
    return refs


def branches_and_tags(
    listing: InventoryListing, remote: list[tuple[str, str]]
) -> tuple[dict[str, str], set[str]]:
    """The refs reposync syncs, and the commits of ``refs/pull/N/head``."""
    supported: dict[str, str] = {}
    pull_heads: set[str] = set()
    for name, oid in remote:
        problem = ref_name_problem(name)
        if problem is not None:
            listing.reject(problem, printable_ref_name(name))
            continue
        if is_supported_ref(name):
            supported[name] = oid
            continue
        namespace = ref_namespace(name)
        listing.unsupported[namespace] = listing.unsupported.get(namespace, 0) + 1
        if name.startswith(_PULL_HEAD) and name.endswith("/head"):
            pull_heads.add(oid)
    return supported, pull_heads
