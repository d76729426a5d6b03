"""The provider contract: what the engine may ask of a forge, and what it gets back.

A small required base (``Provider``) plus optional capabilities, each a small
``Protocol`` discovered with ``isinstance`` (rclone's optional features): when a provider
lacks one, the engine falls back to a slower path or reports the gap. ``CAPABILITIES``
lists every one the engine discovers; a provider declares those it has by naming them as
base classes, so a type checker holds its methods to the contract, and the conformance
suite checks that what a provider declares is exactly what it implements. The engine
never probes a provider with ``getattr``/``hasattr``: what it reads is declared here.

Every method documents the errors it raises; all are ``reposync.errors.ProviderError``
subclasses with stable codes. A provider never swallows an error and never retries a
non-idempotent write blindly.

Why one module of ~890 lines: it is the one document a provider author reads, and the
conformance suite checks against it; almost all of it is docstrings of the 19
capabilities and the value types they exchange. Split, the contract would be read in
pieces and ``CAPABILITIES`` would have to import them all back.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, BinaryIO, ClassVar, Protocol, TypeVar, runtime_checkable

from reposync.config import Settings
from reposync.errors import GitCredentialsRefused, InvalidConnection, ReposyncError
from reposync.providers.notifications import Delivery, Notification
from reposync.sync.canonical import CanonicalObject, IndexEntry
from reposync.sync.lfs import LfsPointer
from reposync.sync.vocabulary import Action, ObjectType, Representation

_T = TypeVar("_T")

log = logging.getLogger(__name__)


class Clock(Protocol):
    """Time as a provider sees it (tests and benchmarks run it faster than the wall)."""

    def now(self) -> datetime: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))


class WriteBudget(Protocol):
    """Paces content-creating writes per account, shared by every worker."""

    def reserve(self, key: str, now: datetime) -> datetime | None:
        """Count one write now and return ``None``, or return when one will be allowed."""


@dataclass(frozen=True, slots=True)
class ProviderEnvironment:
    """What a provider may take from the process that opens it (never the database)."""

    settings: Settings
    budget: WriteBudget | None = None
    clock: Clock = field(default_factory=SystemClock)
    #: Builds the HTTP sessions of API providers (tests attach contract validation here).
    http_session: Callable[[], Any] | None = None


@dataclass(frozen=True, slots=True)
class EndpointSpec:
    """How a Binding names one side: enough to open it again on any worker."""

    provider: str
    locator: str
    repository_id: str | None = None
    connection_id: str | None = None

    @property
    def display(self) -> str:
        return f"{self.provider}:{self.locator}"


@dataclass(frozen=True, slots=True)
class EndpointInfo:
    """What a provider reports once it opened a repository."""

    provider: str
    locator: str
    repository_id: str

    @property
    def display(self) -> str:
        return f"{self.provider}:{self.locator}"


@dataclass(frozen=True, slots=True)
class OwnerSpec:
    """An owner of repositories on one forge: an organization or a user (``github:acme``),
    a directory of bare repositories (``local:/srv/forge``). A whole-owner binding lists
    its source owner's repositories and creates missing ones of its target owner."""

    provider: str
    locator: str
    connection_id: str | None = None

    @property
    def display(self) -> str:
        return f"{self.provider}:{self.locator}"


@dataclass(frozen=True, slots=True)
class OwnedRepository:
    """One repository of an owner, as its listing tells it (nothing is opened)."""

    #: Its name within the owner: what a target repository of the same owner is called.
    name: str
    #: Its locator, in the provider's canonical spelling (``EndpointSpec.locator``).
    locator: str
    #: Its immutable id when the listing carries one (a local repository reposync never
    #: opened has none yet: opening it gives it one).
    repository_id: str | None
    #: ``public``, ``internal`` or ``private`` (None: the forge cannot say).
    visibility: str | None
    description: str | None = None


@dataclass(slots=True)
class InventoryListing:
    """An inventory index: entries sorted by (object type, identity), plus what was skipped.

    ``unsupported`` counts objects the provider saw but reposync cannot sync (for example
    Git refs outside ``refs/heads`` and ``refs/tags``), keyed by namespace; the inventory
    stage adds the objects of types the target cannot hold, keyed by the type (``issue``:
    a plain Git remote's target holds refs only). It is complete once ``entries`` has
    been consumed.
    """

    entries: Iterable[IndexEntry]
    unsupported: dict[str, int] = field(default_factory=dict)
    #: Objects that cannot be synced for what they are (a ref name Git would refuse),
    #: by stable code: how many, and the first few names.
    rejected: dict[str, Rejected] = field(default_factory=dict)

    def reject(self, code: str, name: str) -> None:
        self.rejected.setdefault(code, Rejected()).add(name)


@dataclass(slots=True)
class Rejected:
    """How many objects one reason kept out of a listing, with a few printable names."""

    count: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, name: str) -> None:
        self.count += 1
        if len(self.examples) < 5:
            self.examples.append(name)

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "examples": list(self.examples)}


@dataclass(slots=True)
class ProviderStats:
    """Reads and writes a provider performed, for the Run's ``io`` report."""

    object_reads: int = 0
    index_reads: int = 0
    writes: int = 0

    def take(self) -> dict[str, int]:
        """The counts so far, resetting them (each count is reported exactly once)."""
        counts = {
            "object_reads": self.object_reads,
            "index_reads": self.index_reads,
            "writes": self.writes,
        }
        self.object_reads = self.index_reads = self.writes = 0
        return counts


@dataclass(frozen=True, slots=True)
class GitRemote:
    """Where native Git transport reaches a repository, and with what environment."""

    url: str
    #: The object store on this machine, when the repository is local (pushes borrow it
    #: instead of fetching); ``None`` for remote repositories.
    objects_dir: str | None = None
    #: Extra environment for ``git`` (credentials helpers); never logged.
    env: Mapping[str, str] = field(default_factory=dict)
    #: The command a push runs on the target's side (``git push --receive-pack``), when
    #: it must differ from git's default (a local target whose hooks must not run).
    receive_pack: str | None = None
    #: The same remote with its credentials fetched anew, once git said the remote refused
    #: them; None from it when they cannot be renewed (a personal token is what it is).
    #: None: nothing to renew (a path on this machine, a plain remote's credential helper).
    renew: Callable[[], GitRemote | None] | None = field(default=None, compare=False, repr=False)

    @property
    def is_local(self) -> bool:
        return self.objects_dir is not None

    def with_credentials(self, call: Callable[[GitRemote], _T]) -> _T:
        """``call(self)``; when the remote refuses git's credentials, ``call`` once more
        on the remote renewed, where they can be (a GitHub App's installation token that
        expired, or was dropped, during a long Run: what a stage's retry used to heal by
        chance, with backoff). Otherwise the refusal stands at once: the same credentials
        would be refused again, and a retry with backoff only delays saying so."""
        try:
            return call(self)
        except GitCredentialsRefused:
            renewed = self.renew() if self.renew is not None else None
            if renewed is None:
                raise
            log.info("%s refused git's credentials; asking once more with new ones", self.url)
        return call(renewed)


class Provider(ABC):
    """The base contract every provider implements.

    Class methods deal with locators before anything is opened, so bad input is refused
    before a single write; ``open`` returns a connected instance.
    """

    #: Registry name and locator prefix (``local``, ``github``, ...).
    name: ClassVar[str] = ""
    #: Most ref updates one push to this forge may carry (``None``: no limit of its own;
    #: the ``GIT_BATCH_MAX_ITEMS`` setting still applies). Planning reads it from the
    #: class, before anything is opened. No default: every provider states its own (one
    #: in ``DECLARED_ATTRIBUTES``), so a new forge's limit is never "none" by omission.
    max_ref_updates_per_push: ClassVar[int | None]
    #: Largest pack (bytes) one push to this forge may carry (``None``: no limit of its
    #: own; the ``GIT_MAX_PUSH_PACK_BYTES`` setting may still set one). Pushes are split by
    #: history to stay under it; a ref whose own pack is larger fails (``push_too_large``).
    max_push_pack_bytes: ClassVar[int | None]
    #: Whether new issues and pull requests must be created together in number order
    #: (``sync.batching.numbers_in_order``): a forge that fills number gaps with
    #: placeholder issues and cannot turn one into a pull request (Forgejo) would
    #: otherwise carry every pull request created after the issues around it. Others
    #: create each type in its own run (fewer, larger batches).
    interleaves_numbered_creates: ClassVar[bool] = False

    def __init__(self) -> None:
        self.stats = ProviderStats()
        #: Whether ref listings and reads include shadow branches derived from open pull
        #: requests (``sync.canonical.shadow_refs``). The service turns it off on a
        #: Binding's standby: there they are real branches the sync pushed, and a derived
        #: one would hide a push that failed.
        self.derive_shadows = True

    @classmethod
    @abstractmethod
    def normalize_locator(cls, location: str) -> str:
        """The canonical spelling of a locator's location. Raises ``InvalidLocator``."""

    @classmethod
    def normalize_connection(cls, connection_id: str) -> str:
        """The canonical spelling of a side's ``connection_id``: which credentials of the
        forge open it (GitHub: ``github:installation:<id>``, an App installation).
        Raises ``InvalidConnection``; a provider without connections takes none."""
        raise InvalidConnection(f"{cls.name} sides take no connection_id (got {connection_id!r})")

    @classmethod
    @abstractmethod
    def exists(cls, spec: EndpointSpec, env: ProviderEnvironment | None = None) -> bool:
        """Whether the repository exists. Raises ``NotARepository`` when the location holds
        something else, ``PermissionDenied``, ``ProviderUnavailable``."""

    @classmethod
    @abstractmethod
    def create(cls, spec: EndpointSpec, env: ProviderEnvironment | None = None) -> None:
        """Create an empty repository at the location (a new standby)."""

    @classmethod
    @abstractmethod
    def open(cls, spec: EndpointSpec, env: ProviderEnvironment | None = None) -> Provider:
        """Connect to an existing repository. Raises ``RepositoryNotFound``,
        ``NotARepository``, ``PermissionDenied``, ``ProviderUnavailable``, and
        ``ProviderError`` when ``spec.repository_id`` names another repository."""

    @abstractmethod
    def endpoint(self) -> EndpointInfo:
        """Identity of the opened repository. Raises nothing once opened."""

    @abstractmethod
    def check_access(self, *, write: bool) -> None:
        """Prove the repository is readable (and writable when ``write``).

        Raises ``PermissionDenied`` or ``ProviderUnavailable``.
        """

    @abstractmethod
    def inventory_index(self, object_types: Sequence[ObjectType]) -> InventoryListing:
        """Identities, revisions and hashes of every object of the given types.

        Raises ``PermissionDenied``, ``RateLimited``, ``ProviderUnavailable``.
        """

    @abstractmethod
    def read(self, object_type: ObjectType, identity: str) -> CanonicalObject | None:
        """One object in full, or ``None`` when it does not exist."""

    def read_batch(
        self, object_type: ObjectType, identities: Sequence[str]
    ) -> dict[str, CanonicalObject | None]:
        """Many objects, ``None`` for those that do not exist.

        Part of the base contract, not a capability: the engine reads every candidate
        and every source of a write through it. This default reads one by one; a
        provider with a bulk API overrides it.
        """
        return {identity: self.read(object_type, identity) for identity in identities}

    def close(self) -> None:  # noqa: B027  (optional hook: most providers hold nothing)
        """Release connections and caches. Idempotent."""


@runtime_checkable
class IndexReader(Protocol):
    """Hashes without payloads (``read_index``); without it, whole objects are read."""

    @abstractmethod
    def read_index_batch(
        self, object_type: ObjectType, identities: Sequence[str]
    ) -> dict[str, IndexEntry | None]:
        """Index entries (revision, hash, number) of these objects, without payloads.

        Read-back and planning compare hashes only; a provider that stores the hash of
        what it stores answers this without building whole objects.
        """


@runtime_checkable
class EmptyChecker(Protocol):
    """Lets an empty standby be bootstrapped from the whole source inventory; without it
    the first Run plans against a baseline listing of the target."""

    @abstractmethod
    def is_empty(self) -> bool:
        """Whether the repository holds nothing reposync would sync (an empty standby)."""


@runtime_checkable
class VisibilityReporter(Protocol):
    """Lets a Run refuse a standby more public than its authority until an operator
    confirms; without it that side's visibility is unknown and nothing is refused."""

    @abstractmethod
    def visibility(self) -> str:
        """``public``, ``internal`` or ``private``."""


@runtime_checkable
class StandbyMarker(Protocol):
    """A standby that can refuse edits made outside the sync (set when a Binding is made,
    by every applying Run and by a handoff); without it nothing guards the standby."""

    @abstractmethod
    def mark_standby(self, authority: str | None) -> None:
        """Record that this repository is a standby of ``authority`` (``None``: it is not):
        edits and pushes from anyone but reposync are then refused, with a message naming
        ``authority``. Idempotent: a lock removed by hand is put back."""


@runtime_checkable
class ShadowMaterializer(Protocol):
    """A repository whose derived shadow branches (``sync.canonical.shadow_refs``) can
    become real branches. An authority only derives them; a standby holds them as
    branches. A handoff turns the old authority into a standby, so without this the first
    Run in the new direction would push them back to it."""

    @abstractmethod
    def materialize_shadows(self) -> dict[str, str]:
        """Create, as a branch, each shadow this repository would derive that is no
        branch yet; returns the branches created (name -> commit). Its listing is the
        same before and after (a real branch of a shadow's name is listed as the shadow
        was). Idempotent. Raises ``PermissionDenied`` or ``WriteRefused`` when the forge
        refuses a branch (a local repository: after creating the others)."""


@runtime_checkable
class LockRecoverer(Protocol):
    """A target whose ref locks a killed writer can leave behind (a repository on disk)."""

    @abstractmethod
    def remove_stale_locks(self, older_than: float, *, wait: bool = False) -> list[str]:
        """Remove ref lock files older than ``older_than`` seconds that a killed writer
        left (the caller holds the Binding's lease); returns their names. With ``wait``,
        a lock no process holds is first waited for until it is that old."""


@runtime_checkable
class GitRemoteSource(Protocol):
    """Git data (refs, their objects) moves only through native Git transport: a
    provider without it cannot sync refs."""

    @abstractmethod
    def git_remote(self, *, write: bool) -> GitRemote:
        """URL and environment for native Git transport."""


@runtime_checkable
class WikiRemoteSource(Protocol):
    """A repository with a wiki: its own Git repository beside the main one, whose branches
    and tags are listed and read as ``wiki_ref`` objects (``inventory_index``,
    ``read_batch``; a wiki that does not exist yet has none) and move through native Git
    transport like the main refs. Without it a provider has no wiki refs to sync."""

    @abstractmethod
    def wiki_remote(self, *, write: bool) -> GitRemote:
        """URL and environment for native Git transport to the wiki.

        With ``write``, a wiki that does not exist yet is made ready to take the first push
        (a local forge creates its sibling repository; GitHub creates the wiki on the
        first push). Raises ``WikiDisabled`` when the forge has the wiki turned off,
        ``PermissionDenied``, ``ProviderUnavailable``.
        """


@runtime_checkable
class DefaultBranchWriter(Protocol):
    """A target whose default branch the sync can set; a Run that must change it on a
    target without this fails with ``ProviderError``."""

    @abstractmethod
    def set_default_branch(self, branch: str) -> None:
        """Point the repository's default branch (``HEAD``) at ``branch``.

        The branch must exist, as a forge demands: ``WriteRefused`` (refusal
        ``not_found``) otherwise. Idempotent, so a lost answer (``ResultUnknown``) is
        settled by reading the default branch back. Also raises ``PermissionDenied``,
        ``RateLimited`` (nothing was written), ``ProviderUnavailable``.
        """


@runtime_checkable
class AncestryChecker(Protocol):
    """A source that proves fast-forwards: without it, a branch that moved on both sides
    is a collision (settled by the ref conflict policy), never a fast-forward."""

    @abstractmethod
    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Git's proof that ``descendant`` contains ``ancestor`` (False if either is unknown)."""


@dataclass(frozen=True, slots=True)
class TargetRef:
    """A structural reference in a write, in the *target's* namespace.

    ``identity`` comes from the ObjectLinks; when the referenced object is created in
    the same batch it is still ``None`` and the provider resolves ``marker`` (the
    referenced object's source identity) against what it has created.

    ``gone`` says the source no longer has the referenced object at all (a reply whose
    comment was deleted, as forges allow): a provider keeps such a reference naming
    nothing, the way the source shows it, instead of waiting for an object that will
    never arrive.
    """

    object_type: ObjectType
    identity: str | None
    marker: str
    gone: bool = False


@dataclass(frozen=True, slots=True)
class TargetWrite:
    """One object write the engine asks a provider for (already mapped to the target)."""

    item_id: int
    action: Action  # create, update or delete
    object_type: ObjectType  # the type written on the target (a projection may differ)
    target_identity: str | None  # None for creates
    #: Canonical payload to store (None for deletes). The provider stores it so that a
    #: later read returns exactly this payload.
    payload: Mapping[str, Any] | None
    #: The source identity; stored with a created object so an unknown outcome is
    #: recovered by finding it, never by creating again.
    marker: str
    number: int | None = None  # the number to keep (issues, pull requests)
    #: Structural references by the names the canonical model uses: ``parent`` (every
    #: nested type) and ``in_reply_to`` (review comment replies).
    refs: Mapping[str, TargetRef] = field(default_factory=dict)
    #: Updates: the content hash the target must still hold (optimistic concurrency).
    expected_hash: str | None = None
    #: Release assets: opens the bytes to upload (streamed, never held whole).
    content: Callable[[], BinaryIO] | None = None
    #: ``content_hash(payload)`` as the engine computed it, so a provider that hashes
    #: what it stores can confirm the payload is canonical without encoding it twice.
    payload_hash: str | None = None
    #: Where the object comes from, for humans (an attributed header's "in ..." part).
    source_label: str | None = None
    #: Creates only: child objects the provider may create in the same request (see
    #: ``NestedCreator``); each carries its own marker and item id, and its own RunItem
    #: later adopts what was created by that marker instead of creating it again.
    nested: tuple[TargetWrite, ...] = ()


class WriteStatus(StrEnum):
    OK = "ok"  # the provider observed the write succeed
    REFUSED = "refused"  # the target refused it (conflict, validation): nothing written
    UNKNOWN = "unknown"  # sent, outcome not observed: recover by read-back, never resend
    DEFERRED = "deferred"  # not attempted: a rate limit; try again at ``retry_at``


@dataclass(frozen=True, slots=True)
class ItemError:
    """Why one item did not (or may not have) come through: a stable code and a message
    for people. It is what a RunItem stores (``error_code``, ``error_message``).

    The one shape of an item's error on both sides of read-back: a provider's
    ``ApplyResult`` says it of a write, the applying stage's ``ItemOutcome`` of the item
    it settles (often the same error, carried over when read-back does not find the
    write). The code is an error class's ``code`` (``ResultUnknown.code``) or a
    refusal's own (``dependency_missing``, ``unsupported``: see ``ObjectWriter``).
    """

    code: str
    message: str

    @classmethod
    def of(cls, error: ReposyncError) -> ItemError:
        return cls(error.code, error.message)


@dataclass(frozen=True, slots=True)
class ApplyResult:
    """What a provider says about one write it was given: its word, not a proof.

    Not the applying stage's ``ItemOutcome``, which is what the service concludes about
    the item after reading the target back (a write that says ``OK`` may still not read
    back as written, and one that says ``UNKNOWN`` may have landed); the two share their
    error type, ``ItemError``, and nothing else.
    """

    item_id: int
    status: WriteStatus
    target_identity: str | None = None
    #: Set unless ``OK``: the refusal, the lost response, the rate limit.
    error: ItemError | None = None
    #: How the object exists on the target when it is not the type's own representation
    #: (authorship written as an attributed header, a pull request carried by an issue).
    representation: Representation | None = None
    retry_at: datetime | None = None


@runtime_checkable
class ObjectWriter(Protocol):
    """A target that holds objects other than Git data (labels, issues, ...): writes
    and the marker look-ups that recover lost ones."""

    @abstractmethod
    def apply_batch(self, writes: Sequence[TargetWrite]) -> list[ApplyResult]:
        """Perform a batch of writes of one type and action.

        Per write, never raises for the target's refusal (``REFUSED`` with an error
        code: ``conflict``, ``invalid``, ``not_found``, ``dependency_missing`` for a
        reference it cannot resolve) and never retries a create whose
        response was lost (``UNKNOWN``). Raises ``PermissionDenied``, ``RateLimited`` or
        ``ProviderUnavailable`` when the whole batch cannot be attempted.
        """

    @abstractmethod
    def find_by_markers(self, object_type: ObjectType, markers: Sequence[str]) -> dict[str, str]:
        """{marker: target identity} of objects created with these markers."""


@runtime_checkable
class NestedCreator(Protocol):
    """A forge that creates some children together with their parent, because creating
    them one by one would change their shape (GitHub: a review comment created alone
    opens a review of its own; a review is made whole with its comments in one call)."""

    @abstractmethod
    def nested_types(self, object_type: ObjectType) -> frozenset[ObjectType]:
        """Child types a create of ``object_type`` may carry in ``TargetWrite.nested``."""

    @abstractmethod
    def adopted_representation(self, object_type: ObjectType) -> Representation | None:
        """How a child created with its parent exists on this forge (``None``: native)."""


@runtime_checkable
class AbsenceProver(Protocol):
    """Lets a create whose response was lost be tried again at once, instead of
    blocking the Binding until recovery, when the target proves it never happened."""

    @abstractmethod
    def markers_absent(self, object_type: ObjectType, markers: Sequence[str]) -> set[str]:
        """The markers no object of the type carries, where the target can prove it.

        A write whose response was lost and whose marker is proven absent never
        happened: it may be tried again instead of blocking the Binding until recovery.
        A marker the target cannot rule out (a search it had to cut short) is left out.
        """


@runtime_checkable
class AssetSource(Protocol):
    """A source whose release assets' bytes can be read; without it an asset write
    carries no bytes, and the target refuses it."""

    @abstractmethod
    def open_asset(self, identity: str) -> BinaryIO:
        """The bytes of a release asset, as a stream."""


class LfsOperation(StrEnum):
    """What a Batch API request asks a store for (git-lfs ``docs/api/batch.md``)."""

    DOWNLOAD = "download"
    UPLOAD = "upload"


@dataclass(frozen=True, slots=True)
class LfsTransfer:
    """A store's answer for one object of an ``lfs_batch`` request.

    ``download``: ``error`` is None when the object can be read. ``upload``: ``present``
    when the store already has it (nothing to send), else the object may be uploaded
    (``error`` None) or is refused (``error``: ``lfs_object_too_large``, ...).
    ``action`` is the provider's own (a Batch API response's actions); the engine
    only hands it back to ``lfs_download``/``lfs_upload``.
    """

    pointer: LfsPointer
    error: ItemError | None = None
    present: bool = False
    action: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class LfsStore(Protocol):
    """A repository with a Git LFS object store, addressed by OID and size as git-lfs's
    Batch API addresses it (one OID with another size is another, impossible, object).
    Without it on both sides, refs move without their LFS objects being looked at
    (their pointers are plain blobs to Git)."""

    @abstractmethod
    def lfs_batch(
        self, operation: LfsOperation, pointers: Sequence[LfsPointer]
    ) -> list[LfsTransfer]:
        """One answer per pointer, in order, for at most ``LFS_BATCH_SIZE`` objects.
        Raises ``PermissionDenied``, ``RateLimited``, ``ProviderUnavailable`` for the whole
        request; per-object problems are answers (``LfsObjectMissing``'s code, ...)."""

    @abstractmethod
    def lfs_download(self, transfer: LfsTransfer) -> BinaryIO:
        """The object's bytes as a stream (the caller verifies hash and size). Raises
        ``LfsObjectMissing`` or ``ProviderUnavailable``."""

    @abstractmethod
    def lfs_upload(self, transfer: LfsTransfer, content: BinaryIO) -> None:
        """Store the object from ``content`` (exactly its bytes) and verify it as the
        store does (a Batch API ``verify`` action, a local hash). Uploading by OID is
        idempotent: after a lost response, ``lfs_batch(UPLOAD)`` tells whether it landed.
        Raises ``LfsObjectCorrupt`` when the bytes are not the object's, or
        ``ProviderUnavailable``/``ResultUnknown`` when the store could not be reached."""


class LfsBackend(Protocol):
    """An LFS object store one repository's ``LfsStore`` methods go to (a Batch API
    endpoint, a git-lfs directory on this machine)."""

    def batch(self, operation: LfsOperation, pointers: Sequence[LfsPointer]) -> list[LfsTransfer]:
        """``LfsStore.lfs_batch``'s answer."""

    def download(self, transfer: LfsTransfer) -> BinaryIO:
        """``LfsStore.lfs_download``'s stream."""

    def upload(self, transfer: LfsTransfer, content: BinaryIO) -> None:
        """``LfsStore.lfs_upload``'s upload."""


class LfsThroughBackend:
    """``LfsStore``'s methods by way of the one store its provider names
    (``lfs_backend``), every provider counting an object read or stored as the others do.
    A mixin, not a capability: a provider names it before ``LfsStore`` among its bases."""

    stats: ProviderStats

    @abstractmethod
    def lfs_backend(self) -> LfsBackend:
        """The repository's store (made on first use by a provider that may never need it)."""

    def lfs_batch(
        self, operation: LfsOperation, pointers: Sequence[LfsPointer]
    ) -> list[LfsTransfer]:
        return self.lfs_backend().batch(operation, pointers)

    def lfs_download(self, transfer: LfsTransfer) -> BinaryIO:
        self.stats.object_reads += 1
        return self.lfs_backend().download(transfer)

    def lfs_upload(self, transfer: LfsTransfer, content: BinaryIO) -> None:
        self.lfs_backend().upload(transfer, content)
        self.stats.writes += 1


#: Objects per Batch API request: git-lfs's own default (``lfs.transfer.batchSize``).
LFS_BATCH_SIZE = 100


@runtime_checkable
class ChangeHooks(Protocol):
    """A repository that can be made to report its own changes as they happen, through
    hooks reposync installs in it (a remote forge sends webhooks instead). What the hooks
    report only asks for a Run sooner: a change they miss waits for the next schedule."""

    @abstractmethod
    def install_change_hooks(
        self, command: Sequence[str], environment: Mapping[str, str]
    ) -> list[str]:
        """Install hooks that run ``command`` with ``environment`` whenever the repository
        changes: a push (the command gets ``push`` and git's ``<old> <new> <ref>`` lines
        on its standard input) and an edit of the repository's other objects through
        the provider's own editing API (``forge`` and the object types). Returns the
        paths written. Idempotent; raises ``UsageError`` rather than replace a hook
        reposync did not write."""


class WebhookReader(ABC):
    """One forge's webhook deliveries: how they are authenticated and what they say.

    The service keeps what every forge shares (the body's cap, deduplication by
    provider and delivery id, the Bindings a change concerns, coalesced Runs, branch
    watches); the reader knows its forge's headers, signature and payloads, and turns a
    delivery into a provider-neutral ``Notification``, so a new forge adds a reader and
    no branch to the service. ``headers`` are given with their names in lower case.
    """

    #: The provider its notifications name: a Binding side's ``provider``.
    provider: str
    #: The headers that carry a delivery's signature (one of them suffices).
    signature_headers: tuple[str, ...]

    @abstractmethod
    def secrets(self, now: datetime) -> tuple[bytes, ...]:
        """The secrets a delivery may be signed with at ``now`` (during a rotation, the
        previous one too, until its overlap ends). Raises ``WebhooksNotConfigured``
        without one: unsigned deliveries are refused, never taken."""

    @abstractmethod
    def verify(self, headers: Mapping[str, str], body: bytes, secrets: Sequence[bytes]) -> None:
        """Return when ``headers`` sign the raw ``body`` with one of ``secrets``, compared
        in constant time; raise ``WebhookSignatureInvalid`` for a missing, malformed or
        wrong signature. Called before anything else reads the body."""

    @abstractmethod
    def delivery(self, headers: Mapping[str, str]) -> Delivery:
        """The delivery's event and id (``Delivery.from_headers``), read before the
        body: a redelivery is answered by them alone. Raises ``WebhookMalformed``."""

    @abstractmethod
    def notification(
        self, delivery: Delivery, headers: Mapping[str, str], body: bytes
    ) -> Notification:
        """What the signed delivery says changed, its ``provider`` this reader's. An
        event the forge sends that reposync does not act on is ``Outcome.IGNORED``.
        Raises ``WebhookMalformed`` for a body that is no payload (not JSON, a content
        type the forge never sends) and ``WebhookPayloadInvalid`` naming the first value
        reposync reads that is missing or out of range; nothing is recorded then."""


@runtime_checkable
class WebhookSource(Protocol):
    """A forge that reports its changes in webhook deliveries reposync reads, at the
    API's ``/webhooks/<name>``; without it, its repositories are synced on schedule (or
    report through ``ChangeHooks``). Asked of the provider class: a delivery names
    repositories, it opens none."""

    @classmethod
    @abstractmethod
    def webhook_reader(cls, settings: Settings) -> WebhookReader:
        """The reader of this forge's deliveries, with the secrets ``settings`` give it.
        Raises nothing: a missing secret is refused by the reader's ``secrets``."""


@runtime_checkable
class OwnerLister(Protocol):
    """A forge whose owners (organizations, users, a directory) list their repositories:
    what a whole-owner binding reads on both sides, its sources and the names its target
    owner holds already. Without it an owner of this forge cannot be bound whole.

    Class methods, like ``exists`` and ``create``: an owner is no opened repository. The
    service discovers it with ``issubclass`` on the registry's class.
    """

    @classmethod
    @abstractmethod
    def normalize_owner(cls, location: str) -> str:
        """The canonical spelling of an owner's location (a login, a directory). Raises
        ``InvalidLocator``."""

    @classmethod
    @abstractmethod
    def repository_locator(cls, owner: str, name: str) -> str:
        """The canonical locator of the repository ``name`` of the (normalized) ``owner``,
        whether it exists or not. Raises ``InvalidLocator`` when ``name`` cannot be a
        repository of this forge."""

    @classmethod
    @abstractmethod
    def list_repositories(
        cls, owner: OwnerSpec, env: ProviderEnvironment | None = None
    ) -> list[OwnedRepository]:
        """Every repository of ``owner`` its credentials see, sorted by name. Raises
        ``OwnerNotFound``, ``PermissionDenied``, ``RateLimited``, ``ProviderUnavailable``."""


@runtime_checkable
class RepositoryCreator(Protocol):
    """A forge on which reposync may create an owner's repositories: a whole-owner
    binding creates its missing targets. Without it a missing target is reported, never
    created. A class method, as ``OwnerLister``'s."""

    @classmethod
    @abstractmethod
    def create_repository(
        cls,
        owner: OwnerSpec,
        name: str,
        visibility: str,
        description: str | None,
        env: ProviderEnvironment | None = None,
    ) -> OwnedRepository:
        """Create the empty repository ``name`` of ``owner``, never more public than
        ``visibility`` (a forge without that visibility makes it less public: private),
        and return it as a listing would. Raises ``Conflict`` when the name is taken,
        ``OwnerNotFound``, ``PermissionDenied``, ``RateLimited`` (nothing was created),
        ``ResultUnknown`` (it may exist: look before creating again),
        ``ProviderUnavailable``."""


#: Every optional capability the engine discovers with ``isinstance`` (those asked of a
#: provider class, an owner's or a webhook source, with ``issubclass``). A provider names
#: those it has as base classes (``class GitHubProvider(Provider, ObjectWriter, ...)``);
#: their methods are abstract, so a declared capability left unimplemented fails when
#: the class is instantiated, never by a stub answering ``None``.
CAPABILITIES: tuple[type, ...] = (
    IndexReader,
    EmptyChecker,
    VisibilityReporter,
    StandbyMarker,
    ShadowMaterializer,
    LockRecoverer,
    GitRemoteSource,
    WikiRemoteSource,
    DefaultBranchWriter,
    AncestryChecker,
    ObjectWriter,
    NestedCreator,
    AbsenceProver,
    AssetSource,
    LfsStore,
    ChangeHooks,
    WebhookSource,
    OwnerLister,
    RepositoryCreator,
)
#: Class attributes the engine reads from every provider class, which the contract
#: declares without a default: each provider states its own value.
DECLARED_ATTRIBUTES: tuple[str, ...] = ("max_ref_updates_per_push", "max_push_pack_bytes")


def read_index(
    provider: Provider, object_type: ObjectType, identities: Sequence[str]
) -> dict[str, IndexEntry | None]:
    """Hashes of these objects: the cheap ``IndexReader`` path, else whole objects."""
    if isinstance(provider, IndexReader):
        return provider.read_index_batch(object_type, identities)
    return {
        identity: obj.index_entry() if obj is not None else None
        for identity, obj in provider.read_batch(object_type, identities).items()
    }


def iter_sorted(entries: Iterable[IndexEntry]) -> Iterator[IndexEntry]:
    """Entries in the order every inventory promises: (object type, identity)."""
    return iter(sorted(entries, key=lambda e: (str(e.object_type), e.identity)))
