"""A local owner (``providers/local/owners.py``): the bare repositories of a directory.

What only a directory does: wikis beside their repositories are no repositories of the
owner, entries that are no bare repository are not listed, and listing writes nothing (a
repository reposync never opened is listed without an id and keeps having none)."""

from __future__ import annotations

from pathlib import Path

import pygit2

from reposync.providers.base import EndpointSpec, OwnerSpec
from reposync.providers.local.provider import LocalProvider
from tests.gitrepo import generate


def test_wikis_work_trees_and_other_entries_are_not_the_owners_repositories(tmp_path):
    """Only ``<name>.git`` bare repositories are listed: not ``<name>.wiki.git``, not a
    non-bare ``x.git`` work tree, not a plain directory or file named ``*.git``."""
    owner = tmp_path / "forge"
    generate(owner / "app.git", commits=1, branches=0, tags=0)
    generate(owner / "app.wiki.git", commits=1, branches=0, tags=0)
    pygit2.init_repository(str(owner / "work.git"), bare=False)
    (owner / "empty.git").mkdir()
    (owner / "notes.git").write_text("not a repository")
    (owner / "plain").mkdir()
    listed = LocalProvider.list_repositories(OwnerSpec("local", str(owner)))
    assert [(repo.name, repo.locator) for repo in listed] == [("app", str(owner / "app.git"))]


def test_listing_reads_ids_without_writing_one(tmp_path):
    """A repository never written by reposync is listed with the id its path gives it,
    and neither listing nor opening it writes a byte; the first write access stores that
    same id, so listings before and after agree."""
    owner = tmp_path / "forge"
    path = generate(owner / "app.git", commits=1, branches=0, tags=0)
    before = (Path(path) / "config").read_text()
    [listed] = LocalProvider.list_repositories(OwnerSpec("local", str(owner)))
    opened = LocalProvider.open(EndpointSpec("local", str(path)))
    assert listed.repository_id == opened.endpoint().repository_id
    assert (Path(path) / "config").read_text() == before
    opened.check_access(write=True)
    assert "repositoryid = " + str(listed.repository_id) in (Path(path) / "config").read_text()
    [again] = LocalProvider.list_repositories(OwnerSpec("local", str(owner)))
    assert again.repository_id == listed.repository_id
    opened.close()
