"""Canonical JSON, content hashes, git ref objects and inventory digests."""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from reposync.sync.canonical import (
    MAPPER_VERSION,
    CanonicalObject,
    DigestBuilder,
    IndexEntry,
    PullHead,
    canonical_json,
    content_hash,
    git_ref,
    git_ref_hash,
    inventory_digest,
    is_shadow_ref,
    is_supported_ref,
    ref_namespace,
    ref_object_key,
    shadow_ref,
    shadow_refs,
)
from reposync.sync.vocabulary import ObjectType
from tests.unit.sync.factories import branch, oid, ref, tag

# -- canonical_json / content_hash -------------------------------------------------------


def test_canonical_json_sorts_keys_and_drops_whitespace():
    """Keys come out sorted at every depth, with no spaces after separators."""
    value = {"b": 1, "a": {"d": [1, 2], "c": None}}
    assert canonical_json(value) == b'{"a":{"c":null,"d":[1,2]},"b":1}'


def test_canonical_json_is_independent_of_key_insertion_order():
    """Two dicts with the same items in a different order serialize identically."""
    first = {"target": "x", "name": "main", "meta": {"z": 1, "y": 2}}
    second = {"meta": {"y": 2, "z": 1}, "name": "main", "target": "x"}
    assert canonical_json(first) == canonical_json(second)


def test_canonical_json_keeps_unicode_as_utf8():
    """Non-ASCII text is written as UTF-8 bytes, not as \\u escapes."""
    encoded = canonical_json({"title": "Grüße 🚀"})
    assert encoded == '{"title":"Grüße 🚀"}'.encode()
    assert b"\\u" not in encoded


def test_canonical_json_returns_bytes_that_parse_back():
    """The output is bytes and round-trips through json.loads to the same value."""
    value = {"list": [1, "two", None, True], "n": -3.5}
    encoded = canonical_json(value)
    assert isinstance(encoded, bytes)
    assert json.loads(encoded) == value


def test_canonical_json_refuses_nan():
    """NaN has no JSON form, so canonical JSON rejects it instead of writing NaN."""
    with pytest.raises(ValueError, match="Out of range float"):
        canonical_json({"x": float("nan")})


def test_content_hash_is_sha256_of_canonical_json_with_prefix():
    """content_hash is 'sha256:' plus the hex SHA-256 of the canonical bytes."""
    payload = {"target": "abc"}
    expected = "sha256:" + hashlib.sha256(b'{"target":"abc"}').hexdigest()
    assert content_hash(payload) == expected


def test_content_hash_equal_for_equal_payloads():
    """Equal payloads built in different key orders hash the same."""
    assert content_hash({"a": 1, "b": [1, 2]}) == content_hash({"b": [1, 2], "a": 1})


def test_content_hash_differs_for_different_payloads():
    """Any change of a value or of list order changes the hash."""
    base = content_hash({"a": 1, "b": [1, 2]})
    assert content_hash({"a": 2, "b": [1, 2]}) != base
    assert content_hash({"a": 1, "b": [2, 1]}) != base
    assert content_hash({"a": 1, "b": [1, 2], "c": None}) != base


# -- CanonicalObject / git refs ----------------------------------------------------------


def test_git_ref_branch_identity_keys_and_payload():
    """A branch's identity and unique key are the full ref name; the object key is readable."""
    obj = git_ref("refs/heads/feature/x", oid("c1"))
    assert obj.object_type is ObjectType.GIT_REF
    assert obj.identity == "refs/heads/feature/x"
    assert obj.unique_key == "refs/heads/feature/x"
    assert obj.object_key == "branch feature/x"
    assert obj.revision == oid("c1")
    assert obj.payload == {"target": oid("c1")}


def test_git_ref_tag_object_key():
    """A tag's object key is 'tag <name>'."""
    obj = git_ref("refs/tags/v1.0", oid("c1"))
    assert obj.object_key == "tag v1.0"
    assert obj.unique_key == "refs/tags/v1.0"


def test_ref_object_key_for_other_refs():
    """Refs outside heads/ and tags/ are named 'ref <full name>'."""
    assert ref_object_key("refs/notes/commits") == "ref refs/notes/commits"
    assert ref_object_key("HEAD") == "ref HEAD"


def test_git_ref_content_hash_matches_git_ref_hash():
    """The hash of a ref object equals git_ref_hash of its object id."""
    obj = git_ref("refs/heads/main", oid("c1"))
    assert obj.content_hash == git_ref_hash(oid("c1"))
    assert obj.content_hash == content_hash({"target": oid("c1")})


def test_git_ref_hash_depends_only_on_object_id():
    """Two refs at the same commit hash the same; a different commit hashes differently."""
    assert git_ref("refs/heads/a", oid("c1")).content_hash == (
        git_ref("refs/tags/b", oid("c1")).content_hash
    )
    assert git_ref_hash(oid("c1")) != git_ref_hash(oid("c2"))


def test_index_entry_carries_index_fields_and_payload_size():
    """index_entry copies the index fields and sizes the canonical payload in bytes."""
    obj = git_ref("refs/heads/main", oid("c1"))
    entry = obj.index_entry()
    assert entry == IndexEntry(
        ObjectType.GIT_REF,
        "refs/heads/main",
        "branch main",
        "refs/heads/main",
        oid("c1"),
        git_ref_hash(oid("c1")),
        len(b'{"target":"%s"}' % oid("c1").encode()),
    )


def test_index_entry_size_counts_utf8_bytes():
    """The size of a payload with non-ASCII text is its UTF-8 byte length."""
    obj = CanonicalObject(ObjectType.GIT_REF, "x", "x", None, "r", {"t": "é"})
    assert obj.index_entry().size == len('{"t":"é"}'.encode())
    assert obj.index_entry().size == 10


def test_canonical_object_hash_ignores_payload():
    """CanonicalObject is hashable although its payload is a dict (payload not hashed)."""
    first = git_ref("refs/heads/main", oid("c1"))
    second = git_ref("refs/heads/main", oid("c1"))
    assert first == second
    assert hash(first) == hash(second)
    assert len({first, second}) == 1


def test_mapper_version_is_a_positive_int():
    """MAPPER_VERSION is a positive integer that links compare against."""
    assert isinstance(MAPPER_VERSION, int)
    assert MAPPER_VERSION >= 1


@pytest.mark.parametrize(
    ("name", "supported"),
    [
        ("refs/heads/main", True),
        ("refs/heads/feature/x", True),
        ("refs/tags/v1", True),
        ("refs/notes/commits", False),
        ("refs/pull/1/head", False),
        ("refs/stash", False),
        ("refs/heads", False),
        ("HEAD", False),
        ("refs/remotes/origin/main", False),
    ],
)
def test_is_supported_ref(name, supported):
    """Only branches (refs/heads/) and tags (refs/tags/) are synced."""
    assert is_supported_ref(name) is supported


@pytest.mark.parametrize(
    ("name", "namespace"),
    [
        ("refs/notes/commits", "refs/notes"),
        ("refs/pull/12/head", "refs/pull"),
        ("refs/remotes/origin/main", "refs/remotes"),
        ("refs/stash", "refs/stash"),
        ("HEAD", "HEAD"),
    ],
)
def test_ref_namespace(name, namespace):
    """Unsupported refs are counted by their first two path components."""
    assert ref_namespace(name) == namespace


# -- inventory digests -------------------------------------------------------------------


def _inventory() -> list[IndexEntry]:
    return [
        branch("dev", "c2"),
        branch("main", "c1"),
        branch("main-2", "c1"),
        tag("v1", "c1"),
        tag("v2", "c3"),
    ]


def test_inventory_digest_is_order_independent():
    """Any permutation of the same entries gives the same digest."""
    inventory = _inventory()
    expected = inventory_digest(inventory)
    shuffled = list(inventory)
    for seed in range(5):
        random.Random(seed).shuffle(shuffled)
        assert inventory_digest(shuffled) == expected
    assert inventory_digest(reversed(inventory)) == expected


def test_inventory_digest_changes_with_content_identity_or_membership():
    """A moved ref, a renamed ref or a missing ref changes the digest."""
    inventory = _inventory()
    base = inventory_digest(inventory)
    assert inventory_digest([*inventory[:-1], tag("v2", "c4")]) != base
    assert inventory_digest([*inventory[:-1], tag("v3", "c3")]) != base
    assert inventory_digest(inventory[:-1]) != base


def test_inventory_digest_ignores_non_hashed_fields():
    """Only type, identity and content hash count: object_key and size do not."""
    entry = branch("main", "c1")
    renamed = IndexEntry(
        entry.object_type,
        entry.identity,
        "another label",
        None,
        entry.revision,
        entry.content_hash,
        999,
    )
    assert inventory_digest([entry]) == inventory_digest([renamed])


def test_inventory_digest_of_empty_inventory():
    """The empty inventory digests to the SHA-256 of nothing."""
    assert inventory_digest([]) == "sha256:" + hashlib.sha256(b"").hexdigest()
    assert DigestBuilder().hexdigest() == inventory_digest([])


def test_digest_builder_equals_inventory_digest_for_sorted_input():
    """Feeding sorted entries one by one gives inventory_digest's value and a count."""
    inventory = sorted(_inventory(), key=lambda e: (str(e.object_type), e.identity))
    builder = DigestBuilder()
    for entry in inventory:
        builder.add(entry)
    assert builder.count == len(inventory)
    assert builder.hexdigest() == inventory_digest(inventory)
    assert builder.hexdigest() == inventory_digest(reversed(inventory))


def test_digest_builder_orders_by_code_point_like_inventory_digest():
    """'main' < 'main-2' < 'main/x' in code points; the builder accepts that order."""
    names = ["refs/heads/main", "refs/heads/main-2", "refs/heads/main/x", "refs/heads/mainz"]
    inventory = [ref(name, "c1") for name in names]
    builder = DigestBuilder()
    for entry in inventory:
        builder.add(entry)
    assert builder.hexdigest() == inventory_digest(inventory)


def test_digest_builder_raises_on_out_of_order_entry():
    """An entry sorting before the previous one is refused with ValueError."""
    builder = DigestBuilder()
    builder.add(branch("main", "c1"))
    with pytest.raises(ValueError, match="out of order"):
        builder.add(branch("dev", "c1"))


def test_digest_builder_raises_on_duplicate_entry():
    """The same (type, identity) twice is out of order too: identities are unique."""
    builder = DigestBuilder()
    builder.add(branch("main", "c1"))
    with pytest.raises(ValueError, match="out of order"):
        builder.add(branch("main", "c2"))
    assert builder.count == 1


# -- shadow branches -----------------------------------------------------------------------


def test_shadow_refs_cover_only_heads_that_are_not_branches_at_their_commit():
    """A head branch at the head commit needs no shadow; a fork or a deleted head does."""
    refs = {"refs/heads/main": "a" * 40, "refs/heads/feature": "b" * 40}
    heads = [
        PullHead(1, "feature", "b" * 40),  # the branch is here, at the head: native
        PullHead(2, "feature", "c" * 40),  # same name, other commit: a fork's branch
        PullHead(3, "gone", "d" * 40),  # deleted after the pull request was opened
    ]
    assert shadow_refs(heads, refs) == {
        "refs/heads/reposync/pr/2/head": "c" * 40,
        "refs/heads/reposync/pr/3/head": "d" * 40,
    }


def test_shadow_refs_skip_missing_commits_and_yield_to_real_refs():
    """Nothing to push without the commit; a real branch of the shadow's name wins."""
    refs = {"refs/heads/reposync/pr/4/head": "e" * 40}
    heads = [PullHead(4, "fork-branch", "e" * 40), PullHead(5, "x", "f" * 40)]
    assert shadow_refs(heads, refs, has_commit=lambda sha: sha != "f" * 40) == {}
    assert is_shadow_ref(shadow_ref(4))
    assert not is_shadow_ref("refs/heads/reposync/x")
