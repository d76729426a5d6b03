"""``forgejo:HOST[:PORT][/PATH]/OWNER/NAME``: a repository on a Forgejo (or Gitea) instance.

The instance is one of the settings' (``reposync/forge_instances.py``; ``locators`` says
how a locator names it), opened with that instance's token. The endpoint's immutable id
is ``<Forgejo's repository id>@<instance>``; a renamed repository is found by it and the
locator follows. ``gitea:`` is the same provider under Gitea's name (``GiteaProvider``):
Gitea and Forgejo share the API reposync uses.

Git data moves with native Git over HTTP(S), the token handed to git as the password of
a Basic ``Authorization`` header in environment-only configuration scoped to the
instance's URL (never in a URL, a config file or a process listing); so does the wiki's,
from ``<repo>.wiki.git`` (Forgejo creates it on the first push while the repository's
wiki is on). LFS objects go through the instance's LFS Batch API
(``providers/lfs_batch.py``). Forgejo states no limit of its own on a push's refs or
size (its hooks take a push's refs in batches); ``REPOSYNC_GIT_BATCH_MAX_ITEMS`` and
``REPOSYNC_GIT_MAX_PUSH_PACK_BYTES`` bound them, for a proxy in front of it too.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, ClassVar

import requests

from reposync.config import Settings
from reposync.errors import (
    ObjectNotFound,
    PermissionDenied,
    RepositoryMismatch,
    RepositoryNotFound,
    WikiDisabled,
    WriteRefused,
)
from reposync.forge_instances import ForgejoInstance
from reposync.git.environment import stall_guard
from reposync.providers.base import (
    AbsenceProver,
    ApplyResult,
    AssetSource,
    DefaultBranchWriter,
    EmptyChecker,
    EndpointInfo,
    EndpointSpec,
    GitRemote,
    GitRemoteSource,
    InventoryListing,
    LfsOperation,
    LfsStore,
    LfsThroughBackend,
    ObjectWriter,
    OwnedRepository,
    OwnerLister,
    OwnerSpec,
    Provider,
    ProviderEnvironment,
    RepositoryCreator,
    ShadowMaterializer,
    TargetWrite,
    VisibilityReporter,
    WebhookReader,
    WebhookSource,
    WikiRemoteSource,
)
from reposync.providers.forgejo import locators, owners
from reposync.providers.forgejo.accounts import People
from reposync.providers.forgejo.client import ForgejoClient
from reposync.providers.forgejo.listings import SnapshotStore
from reposync.providers.forgejo.locators import Location
from reposync.providers.forgejo.reads import Inventory, Reader
from reposync.providers.forgejo.webhooks import ForgejoWebhookReader
from reposync.providers.forgejo.writes.batch import ForgejoWriter
from reposync.providers.forgejo.writes.markers import marker_finder
from reposync.providers.lfs_batch import BatchRequest, LfsBatchStore
from reposync.providers.refs import (
    branches_and_tags,
    ls_remote,
    pull_shadows,
    shown_by,
    split_refs,
)
from reposync.sync.canonical import (
    DEFAULT_BRANCH_IDENTITY,
    CanonicalObject,
    IndexEntry,
    default_branch,
    git_ref,
    wiki_ref,
)
from reposync.sync.vocabulary import ObjectType

#: How Forgejo's git says a repository is not there (hidden from the token, or a wiki not
#: made yet): git's "not found", or curl's 404 (``refs.says_missing``).
GIT_MISSING = ("not found", "returned error: 404")


@dataclass(frozen=True, slots=True)
class _Opened:
    """What opening a side needs: its location, instance, client and settings."""

    location: Location
    instance: ForgejoInstance
    client: ForgejoClient
    settings: Settings


class ForgejoProvider(
    Provider,
    # The capabilities it has (providers.base.CAPABILITIES). Not IndexReader (Forgejo
    # stores no hashes), NestedCreator (a line comment added alone stays in the review it
    # names), StandbyMarker (no guard the sync could set), LockRecoverer (no ref locks a
    # sync leaves), AncestryChecker (not built), ChangeHooks (its hooks are webhooks:
    # WebhookSource, ``webhooks``). Owners are listed and their repositories created
    # (OwnerLister, RepositoryCreator: ``owners``).
    ObjectWriter,
    AbsenceProver,
    AssetSource,
    EmptyChecker,
    VisibilityReporter,
    GitRemoteSource,
    WikiRemoteSource,
    DefaultBranchWriter,
    LfsThroughBackend,
    LfsStore,
    ShadowMaterializer,
    OwnerLister,
    RepositoryCreator,
    WebhookSource,
):
    name = "forgejo"
    #: How what reposync writes on the instance names the forge.
    forge: ClassVar[str] = "Forgejo"
    #: Forgejo states no per-push limit: its hooks take a push's refs in batches of 30
    #: (go-gitea/gitea#8602), and REPOSYNC_GIT_BATCH_MAX_ITEMS bounds a push.
    max_ref_updates_per_push = None
    #: Forgejo sets no push size limit by default (a proxy may: see the module docstring).
    max_push_pack_bytes = None
    #: Forgejo cannot turn a placeholder into a pull request: issues and pull requests
    #: are created together in number order, so none waits behind a placeholder.
    interleaves_numbered_creates = True

    def __init__(self, opened: _Opened, data: dict[str, Any], people: People) -> None:
        super().__init__()
        self.client = opened.client
        self.instance = opened.instance
        self.location = opened.location
        self._settings = opened.settings
        self._data = data
        self._repo = str(data.get("full_name") or opened.location.full_name)
        self.people = people
        self._lfs_store: LfsBatchStore | None = None

    # -- locators ---------------------------------------------------------------------

    @classmethod
    def normalize_locator(cls, location: str) -> str:
        return locators.normalize(location, cls.name)

    @classmethod
    def _opened(cls, spec: EndpointSpec, env: ProviderEnvironment | None) -> _Opened:
        return cls._reach(locators.parse(spec.locator, cls.name), env)

    @classmethod
    def _reach(cls, location: Location, env: ProviderEnvironment | None) -> _Opened:
        """A client of the instance ``location`` names, with its token."""
        env = env or ProviderEnvironment(settings=Settings.from_env())
        instance = locators.instance_of(location, env.settings, cls.name)
        session = env.http_session() if env.http_session else requests.Session()
        client = ForgejoClient(
            instance,
            session=session,
            clock=env.clock,
            timeout=env.settings.http_timeout,
            forge=cls.forge,
        )
        return _Opened(location, instance, client, env.settings)

    @classmethod
    def exists(cls, spec: EndpointSpec, env: ProviderEnvironment | None = None) -> bool:
        opened = cls._opened(spec, env)
        try:
            opened.client.get(f"/repos/{opened.location.full_name}")
        except ObjectNotFound:
            return False
        finally:
            opened.client.session.close()
        return True

    @classmethod
    def create(cls, spec: EndpointSpec, env: ProviderEnvironment | None = None) -> None:
        """A new private, empty repository (a standby's), under the token's own account or
        an organization it may create repositories in."""
        location = locators.parse(spec.locator, cls.name)
        owner = OwnerSpec(cls.name, f"{location.instance}/{location.owner}")
        cls.create_repository(owner, location.name, "private", None, env)

    # -- webhooks ---------------------------------------------------------------------

    @classmethod
    def webhook_reader(cls, settings: Settings) -> WebhookReader:
        """Deliveries of the configured instances' hooks, at ``/webhooks/<name>``."""
        return ForgejoWebhookReader(settings, cls.name, cls.forge)

    # -- owners -----------------------------------------------------------------------

    @classmethod
    def normalize_owner(cls, location: str) -> str:
        return owners.normalize_owner(location, cls.name)

    @classmethod
    def repository_locator(cls, owner: str, name: str) -> str:
        return owners.repository_locator(owner, name, cls.name)

    @classmethod
    def _owner_client(cls, owner: OwnerSpec, env: ProviderEnvironment | None) -> ForgejoClient:
        instance, login = owners.split_owner(owner.locator, cls.name)
        return cls._reach(Location(instance, login, "repository"), env).client

    @classmethod
    def list_repositories(
        cls, owner: OwnerSpec, env: ProviderEnvironment | None = None
    ) -> list[OwnedRepository]:
        client = cls._owner_client(owner, env)
        try:
            return owners.list_repositories(client, owner)
        finally:
            client.session.close()

    @classmethod
    def create_repository(
        cls,
        owner: OwnerSpec,
        name: str,
        visibility: str,
        description: str | None,
        env: ProviderEnvironment | None = None,
    ) -> OwnedRepository:
        client = cls._owner_client(owner, env)
        try:
            return owners.create_repository(client, owner, name, visibility, description)
        finally:
            client.session.close()

    @classmethod
    def open(cls, spec: EndpointSpec, env: ProviderEnvironment | None = None) -> ForgejoProvider:
        opened = cls._opened(spec, env)
        location, client = opened.location, opened.client
        try:
            data = client.get(f"/repos/{location.full_name}")
        except ObjectNotFound:
            client.session.close()
            raise RepositoryNotFound(
                f"{cls.name}:{location.locator} does not exist or is not visible to the "
                "instance's token"
                + (
                    f" (repository {spec.repository_id}: renamed? update the Binding's locator)"
                    if spec.repository_id
                    else ""
                )
            ) from None
        identity = locators.repository_id(location.instance, data["id"])
        if spec.repository_id and identity != spec.repository_id:
            client.session.close()
            raise RepositoryMismatch(
                f"{cls.name}:{location.locator} is repository {identity}, but this Binding "
                f"was made for {spec.repository_id}"
            )
        return cls(opened, data, cls._people(opened))

    @classmethod
    def _people(cls, opened: _Opened) -> People:
        """The account map, and whether the token may act as its accounts (a site
        administrator's: asked only when there is a map)."""
        accounts = opened.instance.accounts
        if not accounts:
            return People({}, may_sudo=False)
        me = opened.client.get("/user")
        return People(accounts, may_sudo=bool(me.get("is_admin")))

    # -- base contract ----------------------------------------------------------------

    @property
    def locator(self) -> str:
        owner, _, name = self._repo.partition("/")
        return Location(self.location.instance, owner, name).locator

    def endpoint(self) -> EndpointInfo:
        identity = locators.repository_id(self.location.instance, self._data["id"])
        return EndpointInfo(self.name, self.locator, identity)

    def check_access(self, *, write: bool) -> None:
        permissions = self._data.get("permissions")
        if write and isinstance(permissions, dict) and not permissions.get("push", True):
            raise PermissionDenied(
                f"the token of {self.instance.name} cannot write to {self._repo}"
            )
        if write and self._data.get("archived"):
            raise PermissionDenied(f"{self.forge} keeps {self._repo} archived: read-only")

    def _inventory(self) -> Inventory:
        token = hashlib.sha256(self.instance.token.encode()).hexdigest()[:16]
        store = SnapshotStore(
            self._settings.data_dir / "http-cache" / "forgejo",
            f"{self.instance.url}|{self._data['id']}|{token}",
        )
        return Inventory(self.client, self._repo, self.people, store, self.client.clock.now())

    def inventory_index(self, object_types: Sequence[ObjectType]) -> InventoryListing:
        listing = InventoryListing(entries=[])
        self.stats.index_reads += 1
        listing.entries = self._entries(sorted(set(object_types), key=str), listing)
        return listing

    def _entries(
        self, types: Sequence[ObjectType], listing: InventoryListing
    ) -> Iterator[IndexEntry]:
        inventory = self._inventory()
        remote: list[tuple[str, str]] | None = None
        for object_type in types:
            if object_type in (ObjectType.GIT_REF, ObjectType.DEFAULT_BRANCH):
                remote = remote if remote is not None else self._remote_refs()
            if object_type is ObjectType.GIT_REF:
                assert remote is not None
                refs = self._git_refs(inventory, listing, remote)
                yield from (git_ref(name, refs[name]).index_entry() for name in sorted(refs))
            elif object_type is ObjectType.WIKI_REF:
                wiki = self._wiki_refs(listing)
                yield from (wiki_ref(name, wiki[name]).index_entry() for name in sorted(wiki))
            elif object_type is ObjectType.DEFAULT_BRANCH:
                assert remote is not None
                head = self._default_branch(remote)
                if head is not None:
                    yield head.index_entry()
            elif object_type is not ObjectType.REACTION:  # not read: archive-only
                entries = [obj.index_entry() for obj in inventory.objects(object_type)]
                yield from sorted(entries, key=lambda e: e.identity)

    def read(self, object_type: ObjectType, identity: str) -> CanonicalObject | None:
        return self.read_batch(object_type, [identity])[identity]

    def read_batch(
        self, object_type: ObjectType, identities: Sequence[str]
    ) -> dict[str, CanonicalObject | None]:
        self.stats.object_reads += len(identities)
        if object_type is ObjectType.GIT_REF:
            refs = self._git_refs(self._inventory(), InventoryListing([]), self._remote_refs())
            return {i: git_ref(i, refs[i]) if i in refs else None for i in identities}
        if object_type is ObjectType.WIKI_REF:
            wiki = self._wiki_refs(InventoryListing([]))
            return {i: wiki_ref(i, wiki[i]) if i in wiki else None for i in identities}
        if object_type is ObjectType.DEFAULT_BRANCH:
            self._data = self.client.get(f"/repos/{self._repo}")
            head = self._default_branch(self._remote_refs())
            return {i: head if i == DEFAULT_BRANCH_IDENTITY else None for i in identities}
        return Reader(self.client, self._repo, self.people).many(object_type, identities)

    def close(self) -> None:
        self.client.session.close()

    # -- capabilities -----------------------------------------------------------------

    def is_empty(self) -> bool:
        """No Git data, wiki or forge object: counted, not listed (``X-Total-Count``)."""
        self.stats.index_reads += 1
        if self._remote_refs() or self._wiki_refs(InventoryListing([])):
            return False
        base = f"/repos/{self._repo}"
        for path, params in (
            (f"{base}/issues", {"state": "all"}),
            (f"{base}/labels", {}),
            (f"{base}/milestones", {"state": "all"}),
            (f"{base}/releases", {}),
        ):
            if self.client.total(path, params):
                return False
        return True

    def visibility(self) -> str:
        if self._data.get("private"):
            return "private"
        return "internal" if self._data.get("internal") else "public"

    def git_remote(self, *, write: bool) -> GitRemote:
        return GitRemote(url=f"{self.instance.url}/{self._repo}.git", env=self._git_env())

    @property
    def has_wiki(self) -> bool:
        """The repository's wiki setting (as read when it was opened)."""
        return bool(self._data.get("has_wiki", True))

    def wiki_remote(self, *, write: bool) -> GitRemote:
        """``<repo>.wiki.git`` with the instance's token (``WikiRemoteSource``); Forgejo
        creates the wiki's repository on its first push while the wiki is on."""
        if write and not self.has_wiki:
            raise WikiDisabled(
                f"{self.name}:{self.locator} has its wiki disabled; its wiki refs are not written"
            )
        return GitRemote(url=f"{self.instance.url}/{self._repo}.wiki.git", env=self._git_env())

    def _basic(self) -> str:
        """The token as the password of HTTP Basic (Forgejo takes any user name)."""
        pair = f"reposync:{self.instance.token}".encode()
        return "Basic " + base64.b64encode(pair).decode()

    def _git_env(self) -> dict[str, str]:
        """Environment-only git configuration, scoped to the instance's URL: the token is
        never in a URL, a config file or a process listing, nor sent elsewhere."""
        return {
            **stall_guard(self._settings.git_stall_seconds),
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": f"http.{self.instance.url}/.extraHeader",
            "GIT_CONFIG_VALUE_0": f"Authorization: {self._basic()}",
        }

    def apply_batch(self, writes: Sequence[TargetWrite]) -> list[ApplyResult]:
        writer = ForgejoWriter(
            self.client, self._repo, self.people, lambda write: write.source_label, self.forge
        )
        results = writer.apply(writes)
        self.stats.writes += sum(1 for r in results if r.status.value == "ok")
        return results

    def find_by_markers(self, object_type: ObjectType, markers: Sequence[str]) -> dict[str, str]:
        return marker_finder(self.client, self._repo).find(object_type, markers).identities

    def markers_absent(self, object_type: ObjectType, markers: Sequence[str]) -> set[str]:
        return marker_finder(self.client, self._repo).absent(object_type, markers)

    def open_asset(self, identity: str) -> BinaryIO:
        for release in self.client.paginate(f"/repos/{self._repo}/releases"):
            for asset in release.get("assets") or []:
                if str(asset["id"]) == identity:
                    return self.client.download(str(asset["browser_download_url"]))
        raise ObjectNotFound(f"attachment {identity} is in no release of {self._repo}")

    # -- LFS --------------------------------------------------------------------------------

    def lfs_backend(self) -> LfsBatchStore:
        """The instance's Batch endpoint. A 404 there, from a repository the token has
        opened, is an instance that serves no LFS (``[server] LFS_START_SERVER`` off):
        the refs needing objects stay out, the others move."""
        if self._lfs_store is None:
            self._lfs_store = LfsBatchStore(
                self.client.session,
                _TokenAccess(f"{self.instance.url}/{self._repo}.git/info/lfs", self._basic),
                name=self.forge,
                timeout=self._settings.http_timeout,
                clock=self.client.clock,
                missing_means="not_served",
            )
        return self._lfs_store

    # -- the default branch ---------------------------------------------------------------

    def _default_branch(self, remote: list[tuple[str, str]]) -> CanonicalObject | None:
        """``default_branch`` while that branch exists (an empty repository names one
        nobody pushed yet)."""
        branch = self._data.get("default_branch")
        if not isinstance(branch, str) or not branch:
            return None
        if f"refs/heads/{branch}" not in dict(remote):
            return None
        return default_branch(branch)

    def set_default_branch(self, branch: str) -> None:
        """PATCH the repository's ``default_branch`` (``DefaultBranchWriter``); Forgejo
        answers 404 for a branch that does not exist (``WriteRefused``)."""
        self._data = self.client.write(
            "PATCH", f"/repos/{self._repo}", json_body={"default_branch": branch}
        )
        self.stats.writes += 1

    # -- git ----------------------------------------------------------------------------

    def _git_refs(
        self, inventory: Inventory, listing: InventoryListing, remote: list[tuple[str, str]]
    ) -> dict[str, str]:
        """Branches and tags, plus shadow branches of open pull requests whose head is on
        no branch (Forgejo keeps it in ``refs/pull/N/head``, which a mirror fetches)."""
        supported, pull_heads = branches_and_tags(listing, remote)
        if self.derive_shadows:
            supported.update(pull_shadows(inventory.open_pull_heads, supported, pull_heads))
        return supported

    def materialize_shadows(self) -> dict[str, str]:
        """The derived shadow branches, created through the REST API
        (``ShadowMaterializer``) at their commits, which the repository holds already
        (``refs/pull/N/head``): nothing is pushed. A branch made meanwhile (409) counts
        as made."""
        refs, pull_heads = branches_and_tags(InventoryListing([]), self._remote_refs())
        derived = pull_shadows(self._inventory().open_pull_heads, refs, pull_heads)
        created: dict[str, str] = {}
        for name, oid in sorted(derived.items()):
            body = {"new_branch_name": name.removeprefix("refs/heads/"), "old_ref_name": oid}
            try:
                self.client.write("POST", f"/repos/{self._repo}/branches", json_body=body)
            except WriteRefused as exc:
                if exc.refusal != "conflict":
                    raise
                continue
            created[name] = oid
            self.stats.writes += 1
        return created

    def _wiki_refs(self, listing: InventoryListing) -> dict[str, str]:
        """The wiki's branches and tags: none while the wiki is disabled or has no
        repository yet (Forgejo answers "not found" until its first page)."""
        if not self.has_wiki:
            return {}
        remote = self._remote_refs(self.wiki_remote(write=False), missing_ok=True)
        return split_refs(remote, listing, wiki=True)[0]

    def _remote_refs(
        self, remote: GitRemote | None = None, *, missing_ok: bool = False
    ) -> list[tuple[str, str]]:
        """Refs as git lists them; Forgejo's git says 404 for a repository it hides or
        has not made yet (a wiki), and 401 for a token it does not take."""
        return ls_remote(
            remote or self.git_remote(write=False),
            self._repo,
            missing_ok=missing_ok,
            missing=GIT_MISSING,
            shown=shown_by(self.client.get, f"/repos/{self._repo}"),
        )


class _TokenAccess:
    """The instance's token as HTTP Basic, Git's way (``LfsAccess``)."""

    def __init__(self, endpoint: str, authorization: Callable[[], str]) -> None:
        self.endpoint = endpoint
        self._authorization = authorization

    def request(self, operation: LfsOperation) -> BatchRequest:
        return BatchRequest(self.endpoint, {"Authorization": self._authorization()})

    def refused(self, request: BatchRequest) -> bool:
        return False  # the token is the only credential there is

    def accepted(self, request: BatchRequest) -> None:
        pass


class GiteaProvider(ForgejoProvider):
    """``gitea:``: the same provider, named as Gitea (Gitea serves the API reposync uses
    as Forgejo does)."""

    name = "gitea"
    forge = "Gitea"
    max_ref_updates_per_push = None
    max_push_pack_bytes = None


__all__ = ["ForgejoProvider", "GiteaProvider"]
