"""Where a ``local:`` (or ``git:``) locator that arrives over the API may lead.

An API caller is not the service's user: a path is resolved (``realpath``: symlinks,
``..`` and ``/proc/self/cwd`` followed) and must land inside a configured repository root
(``REPOSYNC_LOCAL_ROOTS``), never inside the service's own data directory or its own
code. Nothing is looked at before that decision, and the refusal reads the same whether
anything exists there or not. The CLI is not confined: its user acts with their own rights.

A ``git:`` remote is opened with the service's own credentials (git's credential helpers,
its SSH keys), so one named over the API must fall under a prefix the operator listed
(``REPOSYNC_GIT_REMOTE_PREFIXES``); a ``git:file://`` path is a path like any other.
"""

from __future__ import annotations

import os
from pathlib import Path

import reposync
from reposync.config import Settings
from reposync.errors import LocatorRefused
from reposync.providers.registry import parse_locator, parse_owner

#: reposync's own code (a checkout or site-packages): never a repository to sync.
OWN_CODE = Path(reposync.__file__).resolve().parent


def confine(locator: str, settings: Settings) -> str:
    """``locator`` with a ``local:`` (or ``git:file://``) path replaced by its real path
    inside a root, and a ``git:`` remote checked against the listed prefixes.

    Other providers pass unchanged. Raises ``LocatorRefused``.
    """
    spec = parse_locator(locator)
    if spec.provider == "git":
        return _confine_remote(locator, spec.locator, settings)
    if spec.provider != "local":
        return locator
    return f"local:{_confine_path(locator, spec.locator, settings, 'local:')}"


def _confine_remote(locator: str, url: str, settings: Settings) -> str:
    """A ``git:`` remote: a ``file://`` path inside a root, any other URL under a listed
    prefix (a prefix ends where a path segment does, so ``.../acme`` is not ``.../acme-x``)."""
    if url.startswith("file://"):
        return f"git:file://{_confine_path(locator, url.removeprefix('file://'), settings, 'git:file://')}"
    for prefix in settings.git_remote_prefixes:
        if url == prefix.rstrip("/:") or url.startswith(
            prefix if prefix.endswith(("/", ":")) else prefix + "/"
        ):
            return f"git:{url}"
    raise LocatorRefused(
        f"{locator.strip()!r} is not under a Git remote prefix this server may use"
        if settings.git_remote_prefixes
        else "this server takes no git: remotes over the API (no REPOSYNC_GIT_REMOTE_PREFIXES)"
    )


def _confine_path(locator: str, path: str, settings: Settings, kind: str) -> Path:
    """``path``'s real path, inside a root and outside the service's own places."""
    refused = LocatorRefused(
        f"{locator.strip()!r} is not under a repository root this server may use"
        if settings.local_roots
        else f"this server takes no {kind} locators over the API (no REPOSYNC_LOCAL_ROOTS)"
    )
    real = Path(os.path.realpath(path))
    roots = [Path(os.path.realpath(root)) for root in settings.local_roots]
    if not any(_inside(real, root) and real != root for root in roots):
        raise refused
    forbidden = (Path(os.path.realpath(settings.data_dir)), OWN_CODE)
    if any(_inside(real, place) or _inside(place, real) for place in forbidden):
        raise refused
    return real


def confine_owner(locator: str, settings: Settings) -> str:
    """An owner's locator (``local:/srv/forge``, a directory of repositories) with a
    ``local:`` path replaced by its real path: a configured root itself, or a directory
    inside one. Each repository of it is confined again (``confine``) when it is bound,
    since a repository's entry may be a symbolic link out. Raises ``LocatorRefused``."""
    spec = parse_owner(locator)
    if spec.provider != "local":
        return locator
    refused = LocatorRefused(
        f"{locator.strip()!r} is not a repository root this server may use, nor inside one"
        if settings.local_roots
        else "this server takes no local: owners over the API (no REPOSYNC_LOCAL_ROOTS)"
    )
    real = Path(os.path.realpath(spec.locator))
    roots = [Path(os.path.realpath(root)) for root in settings.local_roots]
    if not any(_inside(real, root) for root in roots):
        raise refused
    forbidden = (Path(os.path.realpath(settings.data_dir)), OWN_CODE)
    if any(_inside(real, place) or _inside(place, real) for place in forbidden):
        raise refused
    return f"local:{real}"


def _inside(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents
