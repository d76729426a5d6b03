"""``github:OWNER/NAME``: a repository on GitHub (or GitHub Enterprise Server).

The endpoint's immutable id is GitHub's repository id; a renamed repository is found by
its id and the locator follows. Git data moves with native Git over HTTPS, the token
handed to git through environment-only configuration; so does the wiki's, from its own
repository ``<repo>.wiki.git`` (GitHub creates it on the first push while the
repository's ``has_wiki`` is on).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, cast
from urllib.parse import quote

import requests

from reposync.config import Settings
from reposync.errors import (
    Conflict,
    InvalidLocator,
    ObjectNotFound,
    PermissionDenied,
    RepositoryMismatch,
    RepositoryNotFound,
    UsageError,
    WikiDisabled,
    WriteRefused,
)
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
    LfsStore,
    LfsThroughBackend,
    NestedCreator,
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
from reposync.providers.github import owners
from reposync.providers.github.auth import installation_of, token_source
from reposync.providers.github.client import EtagCache, GitHubClient
from reposync.providers.github.lfs import GitHubLfs
from reposync.providers.github.reads import Inventory, read_many
from reposync.providers.github.writes.batch import GitHubWriter
from reposync.providers.github.writes.markers import marker_finder
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
from reposync.sync.vocabulary import ObjectType, Representation

#: GitHub's grammar of ``owner/name``: an owner of 1-39 letters, digits and hyphens
#: (not first), a name of 1-100 letters, digits, ``.``, ``-``, ``_`` that is not ``.`` or
#: ``..`` (a webhook's renamed repository is held to it before it becomes a locator).
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/(?!\.\.?$)[A-Za-z0-9._-]{1,100}$")


def _client(
    env: ProviderEnvironment | None, connection_id: str | None = None
) -> tuple[GitHubClient, Settings]:
    """A REST client with the side's credentials: its connection's installation token,
    or the configured defaults when the side names no connection."""
    env = env or ProviderEnvironment(settings=Settings.from_env())
    settings = env.settings
    session = env.http_session() if env.http_session else requests.Session()
    tokens = token_source(settings, session, env.clock, connection_id)
    cache_dir = settings.data_dir / "http-cache" / "github"
    client = GitHubClient(
        settings.github_api_url,
        tokens,
        clock=env.clock,
        timeout=settings.http_timeout,
        budget=env.budget,
        etags=EtagCache(cache_dir),
        session=session,
        write_interval=settings.github_write_interval,
        trusted_urls=(settings.github_uploads_url, settings.github_git_url),
    )
    return client, settings


class GitHubProvider(
    Provider,
    # The capabilities it has (providers.base.CAPABILITIES). Not IndexReader (GitHub
    # stores no hashes: reads build whole objects), StandbyMarker (no guard the sync
    # could set), LockRecoverer (no ref locks a sync could leave behind) nor
    # AncestryChecker (not built: GitHub's compare API could prove fast-forwards).
    ObjectWriter,
    NestedCreator,
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
    WebhookSource,
    # Organizations and users list and create repositories (providers/github/owners.py).
    OwnerLister,
    RepositoryCreator,
):
    name = "github"
    #: github.com does not publish its limit; pushes of thousands of refs are reported to
    #: fail with HTTP 500 and to work in chunks of about 500 (notes/github-api.md).
    max_ref_updates_per_push = 500
    #: "GitHub has a maximum 2 GiB limit for a single push" (notes/github-api.md §11).
    max_push_pack_bytes = 2 * 1024**3

    def __init__(self, client: GitHubClient, settings: Settings, data: dict[str, Any]) -> None:
        super().__init__()
        self.client = client
        self._settings = settings
        self._data = data
        self._repo = data["full_name"]
        self._inventory: Inventory | None = None
        self._lfs_store: GitHubLfs | None = None

    # -- locators ---------------------------------------------------------------------

    @classmethod
    def normalize_locator(cls, location: str) -> str:
        location = location.strip().removesuffix(".git").strip("/")
        if not _NAME.match(location):
            raise InvalidLocator(
                f"github:{location} is not OWNER/NAME (for example github:octo-org/app)"
            )
        return location

    @classmethod
    def normalize_connection(cls, connection_id: str) -> str:
        """``github:installation:<id>``: an installation of the configured GitHub App."""
        return f"github:installation:{installation_of(connection_id)}"

    @classmethod
    def webhook_reader(cls, settings: Settings) -> WebhookReader:
        """``POST /webhooks/github``: ``X-Hub-Signature-256`` and GitHub's payloads."""
        # Imported here: its JSON Schema reader is a visible share of this module's import
        # time, which a worker that never reads a delivery would pay on every start.
        from reposync.providers.github.webhooks import GitHubWebhookReader

        return GitHubWebhookReader(settings)

    @classmethod
    def exists(cls, spec: EndpointSpec, env: ProviderEnvironment | None = None) -> bool:
        client, _ = _client(env, spec.connection_id)
        try:
            client.get(f"/repos/{spec.locator}")
        except ObjectNotFound:
            return False
        return True

    @classmethod
    def create(cls, spec: EndpointSpec, env: ProviderEnvironment | None = None) -> None:
        raise UsageError(
            f"github:{spec.locator} does not exist; create the repository on GitHub first "
            "(reposync does not create GitHub repositories)"
        )

    # -- owners (organizations and users) ----------------------------------------------

    @classmethod
    def normalize_owner(cls, location: str) -> str:
        return owners.normalize_owner(location)

    @classmethod
    def repository_locator(cls, owner: str, name: str) -> str:
        return cls.normalize_locator(f"{owner}/{name}")

    @classmethod
    def list_repositories(
        cls, owner: OwnerSpec, env: ProviderEnvironment | None = None
    ) -> list[OwnedRepository]:
        client, _ = _client(env, owner.connection_id)
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
        client, _ = _client(env, owner.connection_id)
        try:
            return owners.create_repository(client, owner, name, visibility, description)
        finally:
            client.session.close()

    @classmethod
    def open(cls, spec: EndpointSpec, env: ProviderEnvironment | None = None) -> GitHubProvider:
        client, settings = _client(env, spec.connection_id)
        try:
            data = client.get(f"/repos/{spec.locator}")
        except ObjectNotFound:
            if spec.repository_id is None:
                raise RepositoryNotFound(f"github:{spec.locator} does not exist") from None
            data = None
        if data is None or (spec.repository_id and str(data["id"]) != spec.repository_id):
            if data is not None:
                raise RepositoryMismatch(
                    f"github:{spec.locator} is repository {data['id']}, but this Binding was "
                    f"made for {spec.repository_id}"
                )
            raise RepositoryNotFound(
                f"github:{spec.locator} (repository {spec.repository_id}) is gone or was "
                "renamed; update the Binding's locator"
            )
        return cls(client, settings, data)

    # -- base contract ----------------------------------------------------------------

    def endpoint(self) -> EndpointInfo:
        return EndpointInfo(self.name, self._repo, str(self._data["id"]))

    def check_access(self, *, write: bool) -> None:
        permissions = self._data.get("permissions")
        if write and isinstance(permissions, dict) and not permissions.get("push", True):
            raise PermissionDenied(f"the GitHub credentials cannot write to {self._repo}")

    def inventory_index(self, object_types: Sequence[ObjectType]) -> InventoryListing:
        listing = InventoryListing(entries=[])
        self.stats.index_reads += 1
        self._inventory = Inventory(self.client, self._repo)
        listing.entries = self._entries(sorted(set(object_types), key=str), listing)
        return listing

    def _entries(
        self, types: Sequence[ObjectType], listing: InventoryListing
    ) -> Iterator[IndexEntry]:
        assert self._inventory is not None
        for object_type in types:
            if object_type is ObjectType.GIT_REF:
                if ObjectType.PULL_REQUEST in types:  # listed anyway: shadows reuse it
                    self._inventory.pulls()
                refs = self._git_refs(self._inventory, listing)
                yield from (git_ref(name, refs[name]).index_entry() for name in sorted(refs))
                continue
            if object_type is ObjectType.WIKI_REF:
                wiki = self._wiki_refs(listing)
                yield from (wiki_ref(name, wiki[name]).index_entry() for name in sorted(wiki))
                continue
            if object_type is ObjectType.REACTION:
                continue  # GitHub's reactions are not read (archive-only everywhere)
            if object_type is ObjectType.DEFAULT_BRANCH:
                head = self._default_branch()
                if head is not None:
                    yield head.index_entry()
                continue
            entries = [obj.index_entry() for obj in self._inventory.objects(object_type)]
            yield from sorted(entries, key=lambda e: e.identity)

    def read(self, object_type: ObjectType, identity: str) -> CanonicalObject | None:
        return self.read_batch(object_type, [identity])[identity]

    def read_batch(
        self, object_type: ObjectType, identities: Sequence[str]
    ) -> dict[str, CanonicalObject | None]:
        self.stats.object_reads += len(identities)
        if object_type is ObjectType.GIT_REF:
            # A fresh listing: this is a re-read.
            refs = self._git_refs(Inventory(self.client, self._repo), InventoryListing([]))
            return {i: git_ref(i, refs[i]) if i in refs else None for i in identities}
        if object_type is ObjectType.WIKI_REF:
            wiki = self._wiki_refs(InventoryListing([]))
            return {i: wiki_ref(i, wiki[i]) if i in wiki else None for i in identities}
        if object_type is ObjectType.DEFAULT_BRANCH:
            head = self._default_branch()
            return {i: head if i == DEFAULT_BRANCH_IDENTITY else None for i in identities}
        return read_many(self.client, self._repo, object_type, identities)

    def close(self) -> None:
        self.client.session.close()

    # -- capabilities -----------------------------------------------------------------

    def is_empty(self) -> bool:
        self.stats.index_reads += 1
        if self._remote_refs() or self._wiki_refs(InventoryListing([])):
            return False
        base = f"/repos/{self._repo}"
        for path, params in (
            (f"{base}/issues", {"state": "all", "per_page": 1}),
            (f"{base}/labels", {"per_page": 1}),
            (f"{base}/milestones", {"state": "all", "per_page": 1}),
            (f"{base}/releases", {"per_page": 1}),
        ):
            if self.client.get(path, params):
                return False
        return True

    def visibility(self) -> str:
        return str(
            self._data.get("visibility") or ("private" if self._data.get("private") else "public")
        )

    def git_remote(self, *, write: bool) -> GitRemote:
        return self._git_remote(f"{self._settings.github_git_url.rstrip('/')}/{self._repo}.git")

    @property
    def has_wiki(self) -> bool:
        """The repository's ``has_wiki`` setting (as read when it was opened)."""
        return bool(self._data.get("has_wiki", True))

    def wiki_remote(self, *, write: bool) -> GitRemote:
        """``<repo>.wiki.git`` with the repository's credentials (``WikiRemoteSource``).

        A wiki that has no repository yet is created by GitHub on the first push while
        ``has_wiki`` is on; with it off, a write is refused (``WikiDisabled``) before git
        is started.
        """
        if write and not self.has_wiki:
            raise WikiDisabled(
                f"github:{self._repo} has its wiki disabled (has_wiki is false); "
                "its wiki refs are not written"
            )
        return self._git_remote(
            f"{self._settings.github_git_url.rstrip('/')}/{self._repo}.wiki.git"
        )

    def _git_remote(self, url: str) -> GitRemote:
        return GitRemote(url=url, env=self._git_env(), renew=lambda: self._renewed(url))

    def _renewed(self, url: str) -> GitRemote | None:
        """``url`` with a new token, once git's was refused: an installation token is
        exchanged anew (it expired, or GitHub dropped it, before our clock said so); a
        personal or user token cannot be renewed (None)."""
        try:
            self.client.tokens.invalidate()
        except PermissionDenied:
            return None
        return GitRemote(url=url, env=self._git_env())

    def _git_env(self) -> dict[str, str]:
        """Environment-only git configuration: the token is never in a URL, a config file
        or a process listing."""
        token = self.client.tokens.token()
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        return {
            **stall_guard(self._settings.git_stall_seconds),
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "http.extraHeader",
            "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
        }

    def apply_batch(self, writes: Sequence[TargetWrite]) -> list[ApplyResult]:
        writer = GitHubWriter(
            self.client,
            self._repo,
            self._settings.github_uploads_url,
            lambda write: write.source_label,
        )
        results = writer.apply(writes)
        self.stats.writes += sum(1 for r in results if r.status.value == "ok")
        return results

    def find_by_markers(self, object_type: ObjectType, markers: Sequence[str]) -> dict[str, str]:
        return marker_finder(self.client, self._repo).find(object_type, markers).identities

    def nested_types(self, object_type: ObjectType) -> frozenset[ObjectType]:
        """A review is created whole, with its top-level comments (``NestedCreator``):
        a review comment created alone opens a review of its own on GitHub."""
        if object_type is ObjectType.REVIEW:
            return frozenset({ObjectType.REVIEW_COMMENT})
        return frozenset()

    def adopted_representation(self, object_type: ObjectType) -> Representation | None:
        # A comment created with its review carries an attribution header like any other.
        return Representation.ATTRIBUTED if object_type is ObjectType.REVIEW_COMMENT else None

    def markers_absent(self, object_type: ObjectType, markers: Sequence[str]) -> set[str]:
        return marker_finder(self.client, self._repo).absent(object_type, markers)

    def open_asset(self, identity: str) -> BinaryIO:
        data = self.client.get(f"/repos/{self._repo}/releases/assets/{identity}")
        self.client.check_origin(data["browser_download_url"])
        response = self.client.session.get(
            data["browser_download_url"],
            stream=True,
            timeout=self._settings.http_timeout,
            headers={"Authorization": f"Bearer {self.client.tokens.token()}"},
        )
        response.raise_for_status()
        response.raw.decode_content = True
        # urllib3's HTTPResponse: a file-like reader of bytes.
        return cast(BinaryIO, response.raw)

    # -- LFS --------------------------------------------------------------------------------

    def lfs_backend(self) -> GitHubLfs:
        if self._lfs_store is None:
            self._lfs_store = GitHubLfs(
                self.client.session,
                f"{self._settings.github_git_url.rstrip('/')}/{self._repo}.git",
                self.client.tokens.token,
                timeout=self._settings.http_timeout,
                clock=self.client.clock,
            )
        return self._lfs_store

    # -- the default branch ---------------------------------------------------------------

    def _default_branch(self) -> CanonicalObject | None:
        """``default_branch`` while that branch exists (an empty repository names one
        nobody pushed yet). Both reads are conditional: a no-change Run gets 304s."""
        data = self.client.get(f"/repos/{self._repo}")
        branch = data.get("default_branch") if isinstance(data, dict) else None
        if not isinstance(branch, str) or not branch:
            return None
        try:
            self.client.get(f"/repos/{self._repo}/git/ref/heads/{quote(branch, safe='/')}")
        except (ObjectNotFound, Conflict):  # 404: no such branch; 409: an empty repository
            return None
        return default_branch(branch)

    def set_default_branch(self, branch: str) -> None:
        """PATCH the repository's ``default_branch`` (``DefaultBranchWriter``).

        GitHub answers 422 for a branch that does not exist: the contract's refusal
        ``not_found``, as every provider says it. It needs administration rights (an App:
        "Administration: write"). Not content creation: no write budget is spent.
        """
        try:
            self.client.write(
                "PATCH",
                f"/repos/{self._repo}",
                json_body={"default_branch": branch},
                creates_content=False,
            )
        except WriteRefused as refused:
            if refused.status == 422:
                raise WriteRefused(refused.message, refusal="not_found") from None
            raise
        self.stats.writes += 1

    # -- git ----------------------------------------------------------------------------

    def _git_refs(self, inventory: Inventory, listing: InventoryListing) -> dict[str, str]:
        """Branches and tags, plus shadow branches of open fork pull requests.

        A shadow's commit is what GitHub keeps in ``refs/pull/N/head`` (which a mirror
        fetches); refs outside branches and tags are counted in ``listing.unsupported``,
        names reposync cannot sync in ``listing.rejected``.
        """
        supported, pull_heads = branches_and_tags(listing, self._remote_refs())
        if self.derive_shadows:
            supported.update(pull_shadows(inventory.open_pull_heads, supported, pull_heads))
        return supported

    def materialize_shadows(self) -> dict[str, str]:
        """The derived shadow branches, created through the REST API
        (``ShadowMaterializer``): their commits are in the repository already (its
        ``refs/pull/N/head``), so nothing is pushed. A branch made meanwhile (422
        "Reference already exists") counts as made."""
        refs, pull_heads = branches_and_tags(InventoryListing([]), self._remote_refs())
        derived = pull_shadows(Inventory(self.client, self._repo).open_pull_heads, refs, pull_heads)
        created: dict[str, str] = {}
        for name, oid in sorted(derived.items()):
            try:
                self.client.write(
                    "POST", f"/repos/{self._repo}/git/refs", json_body={"ref": name, "sha": oid}
                )
            except WriteRefused as exc:
                if exc.refusal != "conflict" and "already exists" not in exc.message.lower():
                    raise
                continue
            created[name] = oid
            self.stats.writes += 1
        return created

    def _wiki_refs(self, listing: InventoryListing) -> dict[str, str]:
        """The wiki's branches and tags: none while the wiki is disabled or has no
        repository yet (GitHub answers "Repository not found" until its first page)."""
        if not self.has_wiki:
            return {}
        remote = self._remote_refs(self.wiki_remote(write=False), missing_ok=True)
        return split_refs(remote, listing, wiki=True)[0]

    def _remote_refs(
        self, remote: GitRemote | None = None, *, missing_ok: bool = False
    ) -> list[tuple[str, str]]:
        return ls_remote(
            remote or self.git_remote(write=False),
            self._repo,
            missing_ok=missing_ok,
            shown=shown_by(self.client.get, f"/repos/{self._repo}"),
        )


def mirror_path(data_dir: Path, binding_id: int) -> Path:
    return data_dir / "git" / f"binding-{binding_id}-source.git"


__all__ = ["GitHubProvider", "mirror_path"]
