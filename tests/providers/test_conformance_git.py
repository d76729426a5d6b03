"""The provider conformance suite, Git part: refs, the default branch and emptiness, over
every provider with Git data (``conformance.GIT_HARNESSES``: the forges and the plain Git
remote), and the suite's provider-neutral tests for the providers that hold Git data only
(``conformance.REFS_ONLY``).

A provider that holds Git data only declares it by the capabilities it lacks
(``ObjectWriter``, ``WikiRemoteSource``, ``DefaultBranchWriter``): the forge-object tests
of ``test_conformance.py`` and the wiki's do not run against it, and this module checks
that declaration both ways (what it lacks it neither lists nor reads; what a forge
declares it holds). Refs are pushed through each provider's own ``git_remote``, the way
the sync's transport pushes them.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from reposync.errors import WriteRefused
from reposync.git.process import run_git
from reposync.providers.base import (
    DefaultBranchWriter,
    EmptyChecker,
    EndpointSpec,
    GitRemoteSource,
    ObjectWriter,
    Provider,
    WikiRemoteSource,
)
from reposync.sync.canonical import DEFAULT_BRANCH_IDENTITY, git_ref_hash
from reposync.sync.vocabulary import ObjectType
from tests.gitrepo import generate, refs, set_ref
from tests.providers import test_conformance as suite
from tests.providers.conformance import GIT_HARNESSES, REFS_ONLY, Harness, make_harness

T = ObjectType
#: Every type that is not Git data: a provider without ObjectWriter holds none of them.
FORGE_TYPES = [t for t in ObjectType if t not in (T.GIT_REF, T.WIKI_REF, T.DEFAULT_BRANCH)]


def _harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    name = request.param
    fake = request.getfixturevalue("github_fake") if name == "github" else None
    forgejo = request.getfixturevalue("forgejo_fake") if name == "forgejo" else None
    server = None
    if name == "git":
        server = request.getfixturevalue("git_server")
        request.getfixturevalue("git_home")
    h = make_harness(name, tmp_path, fake, git_server=server, forgejo_fake=forgejo)
    yield h
    h.close()


@pytest.fixture(params=GIT_HARNESSES)
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    yield from _harness(request, tmp_path)


@pytest.fixture(params=REFS_ONLY)
def refs_only(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    yield from _harness(request, tmp_path)


def push(provider: Provider, source: Path, *refspecs: str) -> None:
    """Push ``refspecs`` of ``source`` through the provider's own Git remote."""
    assert isinstance(provider, GitRemoteSource)
    remote = provider.git_remote(write=True)
    argv = ["git", "--git-dir", str(source), "push", "-q"]
    if remote.receive_pack:
        argv.append(f"--receive-pack={remote.receive_pack}")
    run_git([*argv, remote.url, *refspecs], env=remote.env)


def listed(provider: Provider, object_type: ObjectType) -> dict[str, str]:
    return {e.identity: e.revision for e in provider.inventory_index([object_type]).entries}


# -- refs ----------------------------------------------------------------------------------


def test_pushed_branches_and_tags_are_listed_and_read_as_git_refs(harness, tmp_path):
    """Branches, lightweight and annotated tags pushed to the repository are listed
    sorted, each with the object id pushed (an annotated tag's own), read back alike,
    and a ref that is not there reads None; a ref outside branches and tags is counted
    by namespace, not listed."""
    provider = harness.target(empty=False)
    source = generate(tmp_path / "pushed.git", commits=3, branches=2, tags=2)
    set_ref(source, "refs/notes/commits", refs(source)["refs/heads/main"])
    pushed = {
        name: oid
        for name, oid in refs(source).items()
        if name.startswith(("refs/heads/branch-", "refs/tags/"))
    }
    push(provider, source, *(f"{name}:{name}" for name in pushed), "refs/notes/commits")

    listing = provider.inventory_index([T.GIT_REF])
    entries = list(listing.entries)
    names = [e.identity for e in entries]
    assert names == sorted(names)
    found = {e.identity: e for e in entries}
    for name, oid in pushed.items():
        assert found[name].revision == oid, name
        assert found[name].content_hash == git_ref_hash(oid), name
    assert not [name for name in found if not name.startswith(("refs/heads/", "refs/tags/"))]
    assert listing.unsupported.get("refs/notes") == 1

    missing = "refs/heads/never-pushed"
    read = provider.read_batch(T.GIT_REF, [*pushed, missing])
    assert read[missing] is None
    for name, oid in pushed.items():
        obj = read[name]
        assert obj is not None
        assert (obj.identity, obj.revision) == (name, oid)
        entry = obj.index_entry()
        assert (entry.object_key, entry.unique_key, entry.content_hash) == (
            found[name].object_key,
            found[name].unique_key,
            found[name].content_hash,
        )
    harness.assert_clean()


def test_a_fresh_repository_is_empty_until_a_ref_is_pushed(harness, tmp_path):
    """is_empty() on a new repository, and no longer once one branch was pushed."""
    provider = harness.target(empty=True)
    assert isinstance(provider, EmptyChecker)
    assert provider.is_empty()
    assert listed(provider, T.GIT_REF) == {}
    source = generate(tmp_path / "one.git", commits=1, branches=0, tags=0)
    push(provider, source, "refs/heads/main:refs/heads/main")
    assert not provider.is_empty()
    assert listed(provider, T.GIT_REF) == {"refs/heads/main": refs(source)["refs/heads/main"]}
    harness.assert_clean()


# -- the default branch --------------------------------------------------------------------


def _point_head(harness: Harness, provider: Provider, spec: EndpointSpec, branch: str) -> None:
    """Through ``DefaultBranchWriter`` where the provider has it, else behind its back."""
    if isinstance(provider, DefaultBranchWriter):
        provider.set_default_branch(branch)
    else:
        harness.point_head(spec, branch)


def test_the_default_branch_is_head_while_it_names_a_branch_that_exists(harness, tmp_path):
    """HEAD naming a pushed branch is listed and read as that default branch; another
    identity reads None; a new repository's HEAD, naming no branch yet, is no default
    branch at all."""
    fresh = harness.target(empty=True)
    assert listed(fresh, T.DEFAULT_BRANCH) == {}
    assert fresh.read(T.DEFAULT_BRANCH, DEFAULT_BRANCH_IDENTITY) is None

    spec = harness.make_repository(empty=False)
    provider = harness.open_target(spec)
    source = generate(tmp_path / "trunk.git", commits=2, branches=0, tags=0)
    push(provider, source, "refs/heads/main:refs/heads/trunk")

    _point_head(harness, provider, spec, "trunk")
    assert listed(provider, T.DEFAULT_BRANCH) == {DEFAULT_BRANCH_IDENTITY: "trunk"}
    read = provider.read_batch(T.DEFAULT_BRANCH, [DEFAULT_BRANCH_IDENTITY, "nope"])
    assert read["nope"] is None
    head = read[DEFAULT_BRANCH_IDENTITY]
    assert head is not None
    assert dict(head.payload) == {"branch": "trunk"}
    harness.assert_clean()


def test_a_default_branch_is_written_exactly_where_declared(harness, tmp_path):
    """With DefaultBranchWriter: a missing branch is refused (``not_found``) and changes nothing, an
    existing one is set and reads back. Without: the provider offers no way to set it."""
    provider = harness.target(empty=False)
    if not isinstance(provider, DefaultBranchWriter):
        assert DefaultBranchWriter not in harness.limits.capabilities
        assert not hasattr(provider, "set_default_branch")
        return
    source = generate(tmp_path / "dev.git", commits=1, branches=0, tags=0)
    push(provider, source, "refs/heads/main:refs/heads/dev")
    before = listed(provider, T.DEFAULT_BRANCH)
    with pytest.raises(WriteRefused) as refused:
        provider.set_default_branch("never-pushed")
    assert refused.value.refusal == "not_found"  # the contract's word, on every forge
    assert listed(provider, T.DEFAULT_BRANCH) == before
    provider.set_default_branch("dev")
    assert listed(provider, T.DEFAULT_BRANCH) == {DEFAULT_BRANCH_IDENTITY: "dev"}
    harness.assert_clean()


# -- what a provider declares it holds, both ways ----------------------------------------


def test_a_provider_without_an_object_writer_lists_and_reads_no_forge_object(harness):
    """Without ObjectWriter: every forge type lists nothing and reads None. With it: a
    label written through it is listed (the types are really held)."""
    spec = harness.make_repository(empty=False)
    provider = harness.open_target(spec)
    if isinstance(provider, ObjectWriter):
        assert ObjectWriter in harness.limits.capabilities
        [identity] = harness.seed(provider, [suite.create(T.LABEL, suite.label_payload(), "b")])
        assert list(listed(provider, T.LABEL)) == [identity]
    else:
        assert ObjectWriter not in harness.limits.capabilities
        assert list(provider.inventory_index(FORGE_TYPES).entries) == []
        for object_type in FORGE_TYPES:
            assert provider.read_batch(object_type, ["1", "label-x"]) == {
                "1": None,
                "label-x": None,
            }, object_type
    harness.assert_clean()


def test_a_provider_without_a_wiki_lists_no_wiki_ref(harness, tmp_path):
    """Without WikiRemoteSource no wiki_ref is ever listed, even beside pushed refs;
    with it, the wiki suite (test_conformance_wiki.py) holds it to its word."""
    provider = harness.target(empty=False)
    if isinstance(provider, WikiRemoteSource):
        assert WikiRemoteSource in harness.limits.capabilities
        return
    source = generate(tmp_path / "wiki-like.git", commits=1, branches=0, tags=0)
    push(provider, source, "refs/heads/main:refs/heads/master")
    assert listed(provider, T.WIKI_REF) == {}
    assert provider.read(T.WIKI_REF, "refs/heads/master") is None
    harness.assert_clean()


# -- the suite's provider-neutral tests, for providers of Git data only -------------------


def test_a_refs_only_provider_declares_exactly_the_capabilities_it_implements(refs_only):
    """As test_conformance's: declared capabilities are exactly those implemented."""
    suite.test_a_provider_declares_exactly_the_capabilities_it_implements(refs_only)


def test_a_refs_only_provider_states_every_attribute_the_engine_reads(refs_only):
    """As test_conformance's: the class states each attribute planning reads."""
    suite.test_a_provider_states_every_attribute_the_engine_reads(refs_only)


def test_a_refs_only_repository_with_git_history_is_not_empty(refs_only):
    """As test_conformance's: one commit makes a repository non-empty."""
    suite.test_a_repository_with_git_history_is_not_empty(refs_only)


def test_a_refs_only_lfs_upload_is_present_and_reads_back(refs_only):
    """As test_conformance's: uploaded by OID, then present, served, stored exactly."""
    suite.test_an_lfs_object_uploaded_by_oid_is_present_and_reads_back_byte_for_byte(refs_only)


def test_a_refs_only_missing_lfs_object_is_an_answer(refs_only):
    """As test_conformance's: a missing object is a per-object lfs_object_missing."""
    suite.test_a_missing_lfs_object_is_an_answer_with_its_code_not_an_exception(refs_only)


def test_a_refs_only_store_refuses_bytes_that_are_not_the_object(refs_only):
    """As test_conformance's: wrong bytes raise LfsObjectCorrupt and are never stored."""
    suite.test_bytes_that_are_not_the_object_are_refused_and_never_stored(refs_only)


def test_a_refs_only_lost_lfs_upload_is_proven_by_asking_again(refs_only):
    """As test_conformance's: a lost answer is ResultUnknown, then the object is present."""
    suite.test_a_lost_lfs_upload_response_is_proven_by_asking_again(refs_only)


@pytest.mark.parametrize("false_first", [False, True], ids=["true-first", "false-first"])
def test_a_refs_only_lfs_object_is_its_oid_and_size(refs_only, false_first):
    """As test_conformance's: (OID, size) pairs are answered each for itself."""
    suite.test_an_lfs_object_is_its_oid_and_size_and_each_is_answered_for_itself(
        refs_only, false_first
    )


def test_the_git_server_refuses_what_its_credentials_do_not_allow(git_server, git_home, tmp_path):
    """The test server is a real gate: without credentials git is asked for them and
    refused, with a reader's it cannot push (so the provider's credentials are the ones
    that let it in)."""
    generate(git_server.repository("gate.git"), commits=1, branches=0, tags=0)
    anonymous = subprocess.run(
        ["git", "ls-remote", git_server.url("gate.git")],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_TERMINAL_PROMPT": "0"},
    )
    assert anonymous.returncode != 0
    assert any(r.status == 401 for r in git_server.requests)
    reader = git_server.url("gate.git").replace("://", "://bob:bob-secret@")
    assert run_git(["git", "ls-remote", reader]).stdout
    scratch = generate(tmp_path / "scratch.git", commits=1, branches=0, tags=0)
    denied = run_git(
        ["git", "--git-dir", str(scratch), "push", reader, "refs/heads/main:refs/heads/x"],
        check=False,
    )
    assert denied.returncode != 0
    assert any(r.status == 403 for r in git_server.requests)
