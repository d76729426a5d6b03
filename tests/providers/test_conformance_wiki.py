"""The provider conformance suite, wiki part: ``WikiRemoteSource`` and ``wiki_ref``.

Same harnesses as ``test_conformance.py`` (every provider of ``conformance.HARNESSES``),
kept in a module of its own so the suite's main module stays about the forge objects. A
wiki is a Git repository of its own: refs pushed through ``wiki_remote`` are listed and
read as ``wiki_ref`` objects, never as the repository's ``git_ref``; a wiki that was never
written has none; a wiki the forge has turned off refuses writes with ``wiki_disabled``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reposync.errors import WikiDisabled
from reposync.git.process import run_git
from reposync.providers.base import EmptyChecker, Provider, WikiRemoteSource, read_index
from reposync.sync.vocabulary import ObjectType
from tests.gitrepo import generate, refs
from tests.providers.conformance import HARNESSES, Harness, make_harness

T = ObjectType


@pytest.fixture(params=HARNESSES)
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    fake = request.getfixturevalue("github_fake") if request.param == "github" else None
    forgejo = request.getfixturevalue("forgejo_fake") if request.param == "forgejo" else None
    h = make_harness(request.param, tmp_path, fake, forgejo_fake=forgejo)
    yield h
    h.close()


def push_wiki(provider: Provider, pages: Path, *refspecs: str) -> None:
    """Push ``refspecs`` of ``pages`` to the provider's wiki, as the sync's transport does."""
    assert isinstance(provider, WikiRemoteSource)
    remote = provider.wiki_remote(write=True)
    run_git(["git", "--git-dir", str(pages), "push", "-q", remote.url, *refspecs], env=remote.env)


def test_a_repository_whose_wiki_was_never_written_has_no_wiki_refs(harness):
    """No wiki yet: no wiki_ref listed or read, and only a write makes one."""
    provider = harness.target(empty=False)
    assert isinstance(provider, WikiRemoteSource)
    assert list(provider.inventory_index([T.WIKI_REF]).entries) == []
    assert provider.read_batch(T.WIKI_REF, ["refs/heads/master"]) == {"refs/heads/master": None}
    provider.wiki_remote(write=False)
    assert list(provider.inventory_index([T.WIKI_REF]).entries) == []
    harness.assert_clean()


def test_wiki_refs_are_listed_and_read_apart_from_the_repositorys_refs(harness, tmp_path):
    """Branches and tags pushed to the wiki are wiki_refs (keys say "wiki"), listing and
    reads agree, the repository's git_refs do not include them."""
    provider = harness.target(empty=False)
    main_refs = {e.identity for e in provider.inventory_index([T.GIT_REF]).entries}
    pages = generate(tmp_path / "pages.git", commits=3, branches=1, tags=1, annotated_every=1)
    push_wiki(provider, pages, "main:refs/heads/master", "refs/tags/*:refs/tags/*")
    wanted = {"refs/heads/master": refs(pages)["refs/heads/main"], **_tags(pages)}

    listing = list(provider.inventory_index([T.GIT_REF, T.WIKI_REF]).entries)

    wiki = {e.identity: e for e in listing if e.object_type is T.WIKI_REF}
    assert {name: e.revision for name, e in wiki.items()} == wanted
    assert wiki["refs/heads/master"].object_key == "wiki branch master"
    assert {e.identity for e in listing if e.object_type is T.GIT_REF} == main_refs
    read = provider.read_batch(T.WIKI_REF, [*wanted, "refs/heads/nothing"])
    assert read.pop("refs/heads/nothing") is None
    assert {name: obj.index_entry() for name, obj in read.items() if obj} == wiki
    assert read_index(provider, T.WIKI_REF, list(wanted)) == wiki
    harness.assert_clean()


def _tags(path: Path) -> dict[str, str]:
    return {name: oid for name, oid in refs(path).items() if name.startswith("refs/tags/")}


def test_a_repository_whose_only_data_is_its_wiki_is_not_empty(harness, tmp_path):
    """A standby whose wiki holds pages is no empty standby (its wiki would be overwritten
    by a bootstrap that reads nothing)."""
    provider = harness.target(empty=True)
    assert isinstance(provider, EmptyChecker)
    assert provider.is_empty()
    pages = generate(tmp_path / "pages.git", commits=1, branches=0, tags=0)
    push_wiki(provider, pages, "main:refs/heads/master")
    assert not provider.is_empty()
    harness.assert_clean()


def test_a_disabled_wiki_refuses_writes_as_declared(harness, tmp_path):
    """Where the forge can turn its wiki off, wiki_remote(write=True) then raises
    WikiDisabled (code wiki_disabled) and nothing is listed; where it cannot, the wiki
    always takes a write."""
    spec = harness.make_repository(empty=False)
    disabled = harness.disable_wiki(spec)
    provider = harness.open_target(spec)
    assert isinstance(provider, WikiRemoteSource)
    pages = generate(tmp_path / "pages.git", commits=1, branches=0, tags=0)
    if disabled:
        with pytest.raises(WikiDisabled) as refused:
            provider.wiki_remote(write=True)
        assert refused.value.code == "wiki_disabled"
        assert list(provider.inventory_index([T.WIKI_REF]).entries) == []
    else:
        push_wiki(provider, pages, "main:refs/heads/master")
        assert [e.identity for e in provider.inventory_index([T.WIKI_REF]).entries] == [
            "refs/heads/master"
        ]
    harness.assert_clean()
