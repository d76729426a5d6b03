"""Canonical, provider-neutral objects and the hashes the whole engine compares.

A hash is computed over canonical JSON (sorted keys, no whitespace, UTF-8), so the same
state hashes the same on both sides whatever provider produced it. The engine only ever
compares hashes; payloads are read when an object has to be written.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reposync.sync.vocabulary import ObjectType

#: Bump when the canonical mapping of any type changes; links verified under an older
#: mapper are re-planned.
#: 2: review requests are written as review requests to every target (the provider
#: projects them where it must), no longer as comments chosen by the service.
MAPPER_VERSION = 2


def canonical_json(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def content_hash(payload: Mapping[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(dict(payload))).hexdigest()


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """What an inventory index knows of one object, without its payload."""

    object_type: ObjectType
    identity: str
    object_key: str
    unique_key: str | None
    revision: str
    content_hash: str
    #: Approximate payload size in bytes, so batches respect their byte budget unread.
    size: int = 0
    #: Creation order within the type (issue numbers, timestamps): creates follow it, so
    #: numbers can be preserved and replies come after what they reply to.
    order_key: str = ""
    #: The own number of an issue or pull request (identity, not content). Filled by
    #: object and hash reads (read-back records number maps); listings may leave it out.
    number: int | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """A reference to another object, in the namespace of the side it was read from."""

    object_type: ObjectType
    identity: str


@dataclass(frozen=True, slots=True)
class CanonicalObject:
    """One object in full: the index fields plus the payload the hash is computed on.

    ``payload`` is content only and side-neutral: references to other objects inside it
    use natural keys (label names, milestone titles). Structural references that never
    change after creation (a comment's issue, a reply's parent) live in ``refs`` and are
    resolved through ObjectLinks when writing; they are not hashed. The own ``number``
    (issues, pull requests) is identity, not content, and is not hashed either.
    """

    object_type: ObjectType
    identity: str
    object_key: str
    unique_key: str | None
    revision: str
    payload: Mapping[str, Any] = field(hash=False)
    number: int | None = None
    refs: Mapping[str, ObjectRef] = field(default_factory=dict, hash=False)
    order_key: str = ""
    #: The payload's hash when the reader already knows it (a store that hashed what it
    #: stored); saves encoding the payload again. Must equal ``content_hash(payload)``.
    known_hash: str | None = field(default=None, compare=False, repr=False)

    @property
    def content_hash(self) -> str:
        return self.known_hash or content_hash(self.payload)

    def index_entry(self) -> IndexEntry:
        data = canonical_json(dict(self.payload))  # encoded once for hash and size
        return IndexEntry(
            self.object_type,
            self.identity,
            self.object_key,
            self.unique_key,
            self.revision,
            self.known_hash or "sha256:" + hashlib.sha256(data).hexdigest(),
            len(data),
            self.order_key,
            self.number,
        )


# -- git refs ------------------------------------------------------------------------------

BRANCH_PREFIX = "refs/heads/"
TAG_PREFIX = "refs/tags/"
SUPPORTED_REF_PREFIXES = (BRANCH_PREFIX, TAG_PREFIX)


def is_supported_ref(name: str) -> bool:
    return name.startswith(SUPPORTED_REF_PREFIXES)


#: Longest ref name reposync syncs, in bytes: libgit2 cannot read longer ones (its
#: ``GIT_REFNAME_MAX`` is 1024 with the terminator), and every store keeps 1024 characters.
MAX_REF_NAME_BYTES = 1023

#: Characters ``git check-ref-format`` refuses anywhere in a ref name.
_FORBIDDEN_REF_CHARS = frozenset(" ~^:?*[\\\x7f") | {chr(c) for c in range(32)}


def ref_name_problem(name: str) -> str | None:
    """Why a listed ref cannot be synced, as a stable code, or ``None`` when it can.

    A repository can hold names Git itself would never create: bytes that are not UTF-8
    (read as surrogates), a broken ``packed-refs`` line, names too long for libgit2.
    Such refs are counted and named in the report, never synced and never fatal.
    ``invalid_ref_name`` follows ``git check-ref-format``; ``ref_name_too_long`` is
    ``MAX_REF_NAME_BYTES``.
    """
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "invalid_ref_name"
    if (
        name.endswith(("/", ".", ".lock"))
        or ".." in name
        or "//" in name
        or "@{" in name
        or name == "@"
        or any(part.startswith(".") or part.endswith(".lock") for part in name.split("/"))
        or any(char in _FORBIDDEN_REF_CHARS for char in name)
    ):
        return "invalid_ref_name"
    if size > MAX_REF_NAME_BYTES:
        return "ref_name_too_long"
    return None


def printable_ref_name(name: str) -> str:
    """A ref name fit for a report: undecodable bytes as ``\\xNN``, control characters
    escaped, at most 200 characters."""
    text = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    text = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)
    return text if len(text) <= 200 else text[:197] + "..."


def ref_namespace(name: str) -> str:
    """``refs/notes/commits`` -> ``refs/notes``: how unsupported refs are counted."""
    parts = name.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else name


def ref_object_key(name: str) -> str:
    if name.startswith(BRANCH_PREFIX):
        return "branch " + name[len(BRANCH_PREFIX) :]
    if name.startswith(TAG_PREFIX):
        return "tag " + name[len(TAG_PREFIX) :]
    return "ref " + name


def git_ref(name: str, object_id: str) -> CanonicalObject:
    """A branch or tag: identity and unique key are the full ref name on both sides."""
    return CanonicalObject(
        object_type=ObjectType.GIT_REF,
        identity=name,
        object_key=ref_object_key(name),
        unique_key=name,
        revision=object_id,
        payload={"target": object_id},
    )


def git_ref_hash(object_id: str) -> str:
    return content_hash({"target": object_id})


#: The types that are Git refs moved by native Git transport: the main repository's and
#: the wiki's. They plan alike (named by their ref name, fast-forwards proven by Git).
REF_TYPES = frozenset({ObjectType.GIT_REF, ObjectType.WIKI_REF})


def wiki_ref(name: str, object_id: str) -> CanonicalObject:
    """A branch or tag of the wiki: a ref of its own type, so it never mixes with the main
    repository's same-named ref (both wikis and repositories have a ``master``)."""
    return CanonicalObject(
        object_type=ObjectType.WIKI_REF,
        identity=name,
        object_key="wiki " + ref_object_key(name),
        unique_key=name,
        revision=object_id,
        payload={"target": object_id},
    )


# -- the default branch --------------------------------------------------------------------

#: Identity and unique key of the one default-branch object of a repository.
DEFAULT_BRANCH_IDENTITY = "HEAD"


def default_branch(branch: str) -> CanonicalObject:
    """The branch a clone checks out: Git's ``HEAD`` (``refs/heads/<branch>``), GitHub's
    ``default_branch``. The short name is the payload, so both spell it alike.

    A provider reports it only while the branch exists: a ``HEAD`` naming nothing (a new
    bare repository's ``master``) is no default branch to copy, and a forge refuses to
    point its default at a missing branch anyway.
    """
    if not branch or ref_name_problem(BRANCH_PREFIX + branch) is not None:
        raise ValueError(f"not a branch name: {branch!r}")
    return CanonicalObject(
        object_type=ObjectType.DEFAULT_BRANCH,
        identity=DEFAULT_BRANCH_IDENTITY,
        object_key="default branch",
        unique_key=DEFAULT_BRANCH_IDENTITY,
        # Revisions are stored in 255 characters; a longer name is its hash there.
        revision=branch if len(branch.encode()) <= 200 else content_hash({"branch": branch}),
        payload={"branch": branch},
    )


# -- shadow branches of pull requests -----------------------------------------------------

#: Where an open pull request's head lives when it is not a branch of the repository
#: (a fork, a deleted branch): forges such as GitHub need a branch to open a pull
#: request on, and a backup needs the head's commits.
SHADOW_PREFIX = BRANCH_PREFIX + "reposync/pr/"


def shadow_ref(number: int) -> str:
    return f"{SHADOW_PREFIX}{number}/head"


def is_shadow_ref(name: str) -> bool:
    return name.startswith(SHADOW_PREFIX)


@dataclass(frozen=True, slots=True)
class PullHead:
    """What a shadow needs of an open pull request."""

    number: int
    head_ref: str
    head_sha: str


def shadow_refs(
    heads: Iterable[PullHead],
    refs: Mapping[str, str],
    has_commit: Callable[[str], bool] = lambda _sha: True,
) -> dict[str, str]:
    """Shadow branches (name -> sha) for open pull requests whose head is not a branch here.

    A head that is a branch at the head commit needs none; neither does one whose
    commit this repository does not have (nothing could be pushed). A real ref of the
    shadow's name wins: after a handoff the shadow *is* a branch of the new authority.
    """
    shadows: dict[str, str] = {}
    for head in heads:
        if refs.get(BRANCH_PREFIX + head.head_ref) == head.head_sha:
            continue
        name = shadow_ref(head.number)
        if name in refs or not has_commit(head.head_sha):
            continue
        shadows[name] = head.head_sha
    return shadows


def inventory_digest(entries: Iterable[IndexEntry]) -> str:
    """A stable digest of a whole inventory: equal states give equal digests."""
    digest = hashlib.sha256()
    for entry in sorted(entries, key=lambda e: (e.object_type, e.identity)):
        digest.update(f"{entry.object_type}\0{entry.identity}\0{entry.content_hash}\n".encode())
    return "sha256:" + digest.hexdigest()


class DigestBuilder:
    """Incremental ``inventory_digest`` for entries that arrive already sorted."""

    def __init__(self) -> None:
        self._digest = hashlib.sha256()
        self._last: tuple[str, str] | None = None
        self.count = 0

    def add(self, entry: IndexEntry) -> None:
        # ``.value``, not str(): formatting the enum is most of this method's cost.
        key = (entry.object_type.value, entry.identity)
        if self._last is not None and key <= self._last:
            raise ValueError(f"inventory entries out of order at {key}")
        self._last = key
        self.count += 1
        self._digest.update(f"{key[0]}\0{key[1]}\0{entry.content_hash}\n".encode())

    def hexdigest(self) -> str:
        return "sha256:" + self._digest.hexdigest()
