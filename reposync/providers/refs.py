"""Which of a repository's refs reposync syncs, for every provider, and a hosted forge's
refs as native git lists them (``git ls-remote``).

Branches and tags are synced; every other namespace is counted in the listing's
``unsupported`` (a wiki's under ``wiki:<namespace>``) and names git would refuse are
rejected by code, the same way whatever holds the refs (a local repository, a plain Git
remote, GitHub, Forgejo). On a hosted forge ``refs/pull/N/head`` is where it keeps every
pull request's head, a fork's too: its commits are what an open pull request's shadow
branch may be derived from (``sync.canonical.shadow_refs``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from reposync.errors import GitTransportError, ObjectNotFound, PermissionDenied
from reposync.git.process import credentials_refused, git_failure, last_line, run_git
from reposync.providers.base import GitRemote, InventoryListing
from reposync.sync.canonical import (
    PullHead,
    is_supported_ref,
    printable_ref_name,
    ref_name_problem,
    ref_namespace,
    shadow_refs,
)

#: Where a hosted forge keeps a pull request's head.
PULL_HEAD = re.compile(r"refs/pull/[0-9]+/head")


def split_refs(
    refs: Iterable[tuple[str, str]], listing: InventoryListing, *, wiki: bool = False
) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """The branches and tags of ``refs`` (name -> object id), and the refs of other
    namespaces (counted in ``listing.unsupported``); bad names go to
    ``listing.rejected``. A ``wiki``'s are said as the wiki's."""
    supported: dict[str, str] = {}
    others: list[tuple[str, str]] = []
    for name, oid in refs:
        problem = ref_name_problem(name)
        if problem is not None:
            listing.reject(problem, ("wiki " if wiki else "") + printable_ref_name(name))
        elif is_supported_ref(name):
            supported[name] = oid
        else:
            namespace = ("wiki:" if wiki else "") + ref_namespace(name)
            listing.unsupported[namespace] = listing.unsupported.get(namespace, 0) + 1
            others.append((name, oid))
    return supported, others


def branches_and_tags(
    listing: InventoryListing, remote: Iterable[tuple[str, str]]
) -> tuple[dict[str, str], set[str]]:
    """The refs reposync syncs, and the commits of ``refs/pull/N/head``."""
    supported, others = split_refs(remote, listing)
    return supported, {oid for name, oid in others if PULL_HEAD.fullmatch(name)}


def pull_shadows(
    open_pull_heads: Callable[[], Iterable[PullHead]], refs: dict[str, str], pull_heads: set[str]
) -> dict[str, str]:
    """Shadow branches of open pull requests whose head is on no branch, at commits the
    repository holds (``pull_heads``); no pull request ever: nothing is listed."""
    if not pull_heads:
        return {}
    return shadow_refs(open_pull_heads(), refs, pull_heads.__contains__)


def ls_remote(
    remote: GitRemote,
    repo: str,
    *,
    missing_ok: bool = False,
    missing: tuple[str, ...] = ("not found",),
    shown: Callable[[], bool] | None = None,
) -> list[tuple[str, str]]:
    """``(name, object id)`` of every ref of ``remote`` (peeled tags left out). A
    repository git says is not there (``missing`` in its error: what each forge's git
    says is the forge's word) is ``[]`` with ``missing_ok`` (a wiki not made yet), else
    ``PermissionDenied`` (a forge hides what the credentials may not see), unless the
    forge's API still ``shown`` it: then its Git host lags behind its API (GitHub serves
    a repository it has just created to git only moments later), a transport failure a
    stage's retry outlives. Refused credentials are asked once more where they renew,
    then ``GitCredentialsRefused``."""

    def listed(remote: GitRemote) -> str | None:
        result = run_git(["git", "ls-remote", remote.url], env=remote.env, check=False)
        if result.returncode == 0:
            return result.stdout
        if says_missing(result.stderr, missing) and credentials_refused(result.stderr) is None:
            if missing_ok:
                return None
            if shown is not None and shown():
                raise GitTransportError(
                    f"git ls-remote {repo}: the forge's Git host does not find the "
                    "repository its API shows (one created moments ago reaches git a "
                    f"little later): {last_line(result.stderr)}"
                )
            raise PermissionDenied(f"git cannot read {repo}: {result.stderr.strip()}")
        raise git_failure(f"git ls-remote {repo}", result.stderr)

    stdout = remote.with_credentials(listed)
    if stdout is None:
        return []
    refs = []
    for line in stdout.splitlines():
        oid, _, name = line.partition("\t")
        if name.startswith("refs/") and not name.endswith("^{}"):
            refs.append((name, oid))
    return refs


def says_missing(stderr: str, missing: tuple[str, ...]) -> bool:
    """Whether git's ``stderr`` says the repository is not there, in one of a forge's
    ``missing`` words. Words, not numbers: git names the URL it failed on, and a port
    (40443) or an owner (team404) must not read as a 404."""
    lowered = stderr.lower()
    return any(word in lowered for word in missing)


def shown_by(get: Callable[[str], object], path: str) -> Callable[[], bool]:
    """Whether a forge's API answers ``path`` (its repository's), for ``ls_remote``."""

    def shown() -> bool:
        try:
            get(path)
        except ObjectNotFound:
            return False
        return True

    return shown
