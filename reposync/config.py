"""Typed settings, read once from the environment.

Every entry point (CLI, Celery worker, API) builds one ``Settings`` and passes it down;
nothing reads the environment at import time, so tests construct ``Settings(...)``
directly. The defaults run on a laptop: an SQLite database in the user's data directory
and no broker (the embedded mode).

Why ~660 lines: every setting, its default, its parser and the checks that join
settings (credentials given together, secrets files owner-only) sit in one dataclass
so that ``Settings`` is checked whole at start; the Forgejo instances' own file format
lives in ``forge_instances``.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import platformdirs

from reposync.errors import ConfigurationError
from reposync.forge_instances import (
    ForgejoInstance,
    instances_from_file,
    instances_from_json,
    merge_instances,
)

ENV_PREFIX = "REPOSYNC_"

#: The broker Celery uses when ``REPOSYNC_BROKER_URL`` is not set.
DEFAULT_BROKER_URL = "redis://127.0.0.1:6379/0"

#: The values of ``REPOSYNC_EXECUTOR``.
EXECUTORS = ("auto", "celery", "in-process")

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("reposync", appauthor=False))


@dataclass(frozen=True, slots=True)
class Settings:
    """All knobs of reposync. Environment variable = ``REPOSYNC_`` + upper-cased name."""

    #: Where the embedded database and Git caches live.
    data_dir: Path = field(default_factory=default_data_dir)
    #: SQLAlchemy URL; empty means the embedded SQLite file in ``data_dir``.
    database_url: str = ""
    #: Celery broker. Empty: ``DEFAULT_BROKER_URL`` wherever Celery runs (the distributed
    #: mode), and nothing to send to in the embedded mode (``executor``).
    broker_url: str = ""
    #: Who executes the Runs the API queues: ``celery`` (a broker, ``reposync worker``
    #: and ``reposync beat``), ``in-process`` (threads inside ``reposync api``: one
    #: process serves, so exactly one executor and one tick exist), or ``auto``:
    #: in-process on the embedded database when no broker is configured
    #: (``REPOSYNC_BROKER_URL`` unset), else Celery. See ``runs_in_process``.
    executor: str = "auto"
    #: Seconds a Run's lease on its Binding lives without a heartbeat.
    lease_ttl: float = 120.0
    #: Physical batch limits for the applying stage.
    batch_max_items: int = 500
    batch_max_bytes: int = 8 * 1024 * 1024
    #: Git refs per applying batch and per push. A ref costs the forge nothing like an API
    #: object does, and one push of thousands of refs packs the shared history once (an
    #: empty standby gets everything in one bootstrap push); a target that takes fewer
    #: per push (GitHub: 500) gets the batch in several atomic pushes. The batch limit for
    #: API objects stays above.
    git_batch_max_items: int = 5000
    #: Largest pack one push may carry, in bytes (0: the target forge's own limit, GitHub's
    #: 2 GiB; a value > 0 lowers it, or sets one for a forge without). Pushes are split
    #: by history to stay under it; a ref whose own pack is larger fails ``push_too_large``.
    git_max_push_pack_bytes: int = 0
    #: Most ref updates one push may carry (0: the target forge's own, GitHub's 500; a
    #: value > 0 replaces it, up or down: GitHub does not publish its limit and GitHub
    #: Enterprise sets its own). A push the forge answers with a server error is pushed
    #: again in halves all the same, so a value too high costs pushes, not the Run.
    git_max_ref_updates_per_push: int = 0
    #: Seconds an HTTP transfer of git's (a push, a fetch, a listing) may go without one
    #: byte moving before git gives it up (0: never): a connection a proxy or a NAT
    #: dropped without a word would otherwise hold its Run, and its lease, until the
    #: task's time limit (an embedded ``sync`` forever). A forge that is working keeps
    #: bytes moving: git's progress and its server's keepalives, every 5 s. Over SSH
    #: (OpenSSH) a server that answers nothing for as long is given up the same way
    #: (``ServerAliveInterval``, ``ConnectTimeout``).
    git_stall_seconds: float = 300.0
    #: Seconds a Run waits when a Git host answers a git request 429 (its rate limit, or
    #: a proxy's): git reports no ``Retry-After``, so this stands in for it (GitHub says to
    #: wait a minute when it sends none). The Run is deferred, as for an API's limit.
    git_rate_limit_wait: float = 60.0
    #: How often one stage may be (re)started before the Run fails; caps redelivery loops.
    max_stage_attempts: int = 5
    #: Seconds before a stage that failed for a retryable reason (a forge or database
    #: briefly away) is tried again; doubled at each attempt, at most ``retry_backoff_max``.
    retry_backoff: float = 10.0
    retry_backoff_max: float = 300.0
    #: How often one item may be attempted before it fails.
    max_item_attempts: int = 3
    #: Celery timing. Invariant: soft < hard < visibility timeout (checked below).
    task_soft_time_limit: float = 3300.0
    task_time_limit: float = 3600.0
    visibility_timeout: float = 7200.0
    #: kombu's sweep that restores unacknowledged messages (seconds, and sweeps skipped).
    unacked_restore_interval: float = 10.0
    unacked_restore_throttle: int = 10
    #: Period of the recovery/scheduling tick of celery beat.
    tick_interval: float = 15.0
    #: Seconds a worker's task goes on running the next steps of the same Run before it
    #: sends the rest as a message (0: every step is a message). Small against the tick
    #: interval: a tick waits for a free pool slot, at most this long plus one step.
    step_chain_seconds: float = 5.0
    #: Seconds a queued Run may wait for its first task before the tick re-dispatches it.
    dispatch_grace: float = 60.0
    #: API listen address for ``reposync api``.
    api_bind: str = "127.0.0.1:8080"
    #: Request threads of each of the API's 2 worker processes; the Server-Sent Event
    #: streams one process may hold, each on a thread of its own beyond those (a waiting
    #: stream costs a blocked thread: its Run's shared feed reads the database); and the
    #: streams one user may hold per process (beyond either: 429).
    api_threads: int = 32
    api_max_streams: int = 256
    api_streams_per_user: int = 4
    #: GitHub (github:OWNER/NAME). Enterprise Server: point the three URLs at it.
    github_api_url: str = "https://api.github.com"
    github_uploads_url: str = "https://uploads.github.com"
    github_git_url: str = "https://github.com"
    #: Credentials: a GitHub App (id + private key file + installation) or, for local
    #: use, a personal access token. Secrets are read from here, never stored.
    github_app_id: str = ""
    github_app_private_key_path: str = ""
    github_installation_id: str = ""
    github_token: str = ""
    #: Connect GitHub (``/github/...``, the self-service flow): the GitHub App's OAuth
    #: client id and secret (its settings page), its slug (the ``/apps/<slug>`` of its
    #: public page, for the install URL), and the web host serving ``/login/oauth/*`` and
    #: ``/apps/<slug>/installations/new`` (Enterprise Server: its own host). The client id
    #: alone enables nothing: all three or none (checked below).
    github_client_id: str = ""
    github_client_secret: str = ""
    github_app_slug: str = ""
    github_oauth_url: str = "https://github.com"
    #: Where GitHub sends the user back (the App's registered callback URL; empty: this
    #: API's own ``/github/install/callback`` as the request reached it).
    github_callback_url: str = ""
    #: Seconds a Connect GitHub state lives between its start and GitHub's redirect back,
    #: and the most a callback waits for a new installation to show (GitHub lists an
    #: organization's new installation some seconds after the install redirect).
    github_connect_state_ttl: float = 600.0
    github_connect_wait: float = 20.0
    #: ``reposync sync`` waits in place for a rate limit that lifts within this many
    #: seconds; a longer one leaves the Run deferred for the next invocation.
    embedded_max_wait: float = 900.0
    #: Seconds between two progress lines of ``reposync sync`` when its stderr is no
    #: terminal (a log, CI); a terminal gets one line redrawn in place instead.
    progress_interval: float = 5.0
    #: Seconds a local forge waits for another writer's lock before the write fails
    #: (retryably: see ``retry_backoff``).
    local_busy_timeout: float = 10.0
    #: Directories under which ``local:`` locators given over the API must resolve (real
    #: paths, symlinks followed; ``os.pathsep``-separated). None: the API refuses
    #: ``local:``. The CLI is not confined: it acts with its user's own rights.
    local_roots: tuple[Path, ...] = ()
    #: URL prefixes under which ``git:`` locators given over the API must fall, in their
    #: canonical spelling (comma-separated, e.g. ``https://git.example.com/acme/,
    #: git@git.example.com:acme/``): the service's own credentials (git's credential
    #: helpers, its SSH keys) reach only remotes the operator listed. Empty: the API
    #: refuses ``git:`` over the network; ``git:file://`` follows ``local_roots``.
    git_remote_prefixes: tuple[str, ...] = ()
    #: Days an API token lives unless issued with another lifetime (0: forever).
    api_token_days: int = 90
    #: Run a local target's server-side hooks (pre-receive, update, post-receive) during
    #: a sync. Off: they would run as the service's user on content from the source.
    local_target_hooks: bool = False
    #: Forgejo and Gitea instances (``forgejo:HOST[:PORT][/PATH]/OWNER/NAME``): JSON
    #: ``{"<name>": {"url", "token", "accounts"}}``, and/or an owner-only TOML file of the
    #: same tables (``reposync/forge_instances.py``). The file's are added to the JSON's.
    forgejo_instances: tuple[ForgejoInstance, ...] = ()
    forgejo_instances_file: Path | None = None
    #: Seconds between two writes to GitHub (its best practices ask for at least one).
    github_write_interval: float = 1.0
    #: Seconds an HTTP request to a forge may take before its outcome counts as unknown.
    http_timeout: float = 30.0
    #: Largest LFS object a sync moves (bytes); a ref needing a larger one fails with
    #: ``lfs_object_too_large`` instead of being pushed. 2 GiB: github.com's own limit on
    #: its Free and Pro plans (Team 4 GB, Enterprise Cloud 5 GB).
    lfs_max_object_size: int = 2 * 1024**3
    #: Largest release asset a sync writes (bytes); a larger one fails its item with
    #: ``asset_too_large`` before any of it is sent. 2 GiB: GitHub's limit per asset.
    max_asset_bytes: int = 2 * 1024**3
    #: Seconds an ``Idempotency-Key`` and the answer it bought are kept (then purged by
    #: the beat's tick): a retry within it gets the first answer, not a second effect.
    idempotency_ttl: float = 24 * 3600.0
    #: Seconds a request holds its key while it is answered; a retry after that may take
    #: the key over (the first request died). Longer than any dry-run's inventory takes.
    idempotency_lock: float = 600.0
    #: Where the processes of ``reposync api`` and ``reposync worker`` keep their metric
    #: values for ``/metrics`` (None: ``<data_dir>/metrics``); see ``reposync.metrics``.
    metrics_dir: Path | None = None
    #: A bearer token ``/metrics`` requires; empty: it answers without one (what
    #: Prometheus scrapers usually expect; its values name no secret).
    metrics_token: str = ""
    #: ``text`` (the default) or ``json`` (one object per line; see ``reposync.logs``).
    log_format: str = "text"
    #: Fernet keys (url-safe base64 of 32 bytes) sealing the secrets stored in the
    #: database (webhook subscriptions'), comma-separated: the first seals, every one
    #: opens, so a key is rotated by putting the new one first. Empty: nothing can be
    #: sealed, and creating a subscription answers 503 until one is set.
    secret_key: str = ""
    #: Networks (CIDRs, comma-separated) webhook deliveries may reach although they are
    #: loopback, private, link-local...: by default every target must resolve to public
    #: addresses only (no request forgery against the service's own network).
    webhook_allowed_networks: tuple[Network, ...] = ()
    #: Seconds one webhook delivery may take, connection and response together.
    webhook_timeout: float = 10.0
    #: A failed delivery (429, 5xx, network) waits ``unit * 2^attempt`` seconds, at most
    #: ``webhook_backoff_max``, and is dead-lettered after ``webhook_max_attempts``.
    webhook_backoff_unit: float = 1.0
    webhook_backoff_max: float = 60.0
    webhook_max_attempts: int = 5
    #: GitHub webhooks (``POST /webhooks/github``): the hook's shared secret. Empty: the
    #: endpoint refuses every delivery (503) rather than accept unsigned input.
    github_webhook_secret: str = ""
    #: A secret rotation: the previous secret stays valid until ``..._until`` (an ISO 8601
    #: time with its UTC offset), so deliveries signed before GitHub took the new secret,
    #: and their redeliveries, still count. Both or neither.
    github_webhook_previous_secret: str = ""
    github_webhook_previous_secret_until: datetime | None = None
    #: Seconds a webhook's Run waits for more deliveries (a burst of pushes: one Run).
    webhook_debounce_seconds: float = 2.0
    #: Days a delivery is remembered to recognize its redelivery (GitHub redelivers
    #: deliveries of the past 3 days).
    webhook_delivery_retention_days: int = 14
    #: Mark the web page's session cookie ``Secure`` even when the request came over plain
    #: HTTP: behind a TLS-terminating proxy, the API sees HTTP while browsers use HTTPS.
    web_secure_cookie: bool = False
    #: Refused API tokens (bearer tokens, the page's sign-in form and session cookies) one
    #: client may send within ``auth_failure_window`` seconds; beyond, every attempt from
    #: it, valid or not, is 429 ``too_many_attempts`` until the window ends. Counted in
    #: the database, so all API processes share one count per client.
    auth_failure_limit: int = 10
    auth_failure_window: float = 60.0
    #: Reverse proxies in front of the API that append to ``X-Forwarded-For`` (and set
    #: ``X-Forwarded-Proto``): the client is the address that many hops back. 0: the
    #: connection's own address, and those headers are ignored (a client could forge them).
    proxy_hops: int = 0

    def __post_init__(self) -> None:
        _check_github_connect(self)
        from_file = (
            instances_from_file(Path(self.forgejo_instances_file).expanduser())
            if self.forgejo_instances_file is not None
            else ()
        )
        merged = merge_instances(tuple(self.forgejo_instances), from_file)
        object.__setattr__(self, "forgejo_instances", merged)
        if not isinstance(self.data_dir, Path):
            object.__setattr__(self, "data_dir", Path(self.data_dir).expanduser())
        if any(isinstance(network, str) for network in self.webhook_allowed_networks):
            try:
                networks = tuple(
                    ipaddress.ip_network(network, strict=False)
                    for network in self.webhook_allowed_networks
                )
            except ValueError as exc:
                raise ConfigurationError(
                    f"REPOSYNC_WEBHOOK_ALLOWED_NETWORKS is not a list of CIDRs: {exc}"
                ) from exc
            object.__setattr__(self, "webhook_allowed_networks", networks)
        if self.api_threads < 1 or self.api_max_streams < 1 or self.api_streams_per_user < 1:
            raise ConfigurationError(
                "REPOSYNC_API_THREADS, REPOSYNC_API_MAX_STREAMS and "
                "REPOSYNC_API_STREAMS_PER_USER must each be at least 1 (got "
                f"{self.api_threads} / {self.api_max_streams} / {self.api_streams_per_user})"
            )
        if not self.task_soft_time_limit < self.task_time_limit < self.visibility_timeout:
            raise ConfigurationError(
                "REPOSYNC_TASK_SOFT_TIME_LIMIT < REPOSYNC_TASK_TIME_LIMIT < "
                "REPOSYNC_VISIBILITY_TIMEOUT must hold (got "
                f"{self.task_soft_time_limit} / {self.task_time_limit} / "
                f"{self.visibility_timeout}); otherwise the broker redelivers running tasks"
            )
        if not 0 <= self.step_chain_seconds < self.task_soft_time_limit:
            raise ConfigurationError(
                "REPOSYNC_STEP_CHAIN_SECONDS must be at least 0 and below "
                f"REPOSYNC_TASK_SOFT_TIME_LIMIT (got {self.step_chain_seconds} / "
                f"{self.task_soft_time_limit}): a task runs steps for that long"
            )
        if (
            min(
                self.lease_ttl, self.batch_max_items, self.batch_max_bytes, self.git_batch_max_items
            )
            <= 0
            or min(
                self.git_max_push_pack_bytes,
                self.git_max_ref_updates_per_push,
                self.git_stall_seconds,
            )
            < 0
            or self.git_rate_limit_wait <= 0
        ):
            raise ConfigurationError(
                "REPOSYNC_LEASE_TTL, REPOSYNC_GIT_RATE_LIMIT_WAIT and the "
                "REPOSYNC_*BATCH_MAX_* limits must be positive "
                "(REPOSYNC_GIT_MAX_PUSH_PACK_BYTES, REPOSYNC_GIT_MAX_REF_UPDATES_PER_PUSH and "
                "REPOSYNC_GIT_STALL_SECONDS: 0 or more)"
            )
        if self.executor not in EXECUTORS:
            raise ConfigurationError(
                f"REPOSYNC_EXECUTOR must be one of {', '.join(EXECUTORS)} (got {self.executor!r})"
            )
        if self.progress_interval <= 0:
            raise ConfigurationError("REPOSYNC_PROGRESS_INTERVAL must be a positive number")
        if self.log_format not in ("text", "json"):
            raise ConfigurationError(
                f"REPOSYNC_LOG_FORMAT must be text or json (got {self.log_format!r})"
            )
        if self.lfs_max_object_size < 0:
            raise ConfigurationError("REPOSYNC_LFS_MAX_OBJECT_SIZE must be 0 or more bytes")
        if self.max_asset_bytes < 1:
            raise ConfigurationError(
                f"REPOSYNC_MAX_ASSET_BYTES must be at least 1 byte (got {self.max_asset_bytes})"
            )
        if not 0 < self.idempotency_lock < self.idempotency_ttl:
            raise ConfigurationError(
                "0 < REPOSYNC_IDEMPOTENCY_LOCK < REPOSYNC_IDEMPOTENCY_TTL must hold (got "
                f"{self.idempotency_lock} / {self.idempotency_ttl}): a key must outlive the "
                "request that holds it"
            )
        for key in self.secret_keys:
            _check_fernet_key(key)
        if (
            min(self.webhook_timeout, self.webhook_backoff_unit, self.webhook_backoff_max) <= 0
            or self.webhook_max_attempts < 1
        ):
            raise ConfigurationError(
                "REPOSYNC_WEBHOOK_TIMEOUT, REPOSYNC_WEBHOOK_BACKOFF_UNIT and "
                "REPOSYNC_WEBHOOK_BACKOFF_MAX must be positive, REPOSYNC_WEBHOOK_MAX_ATTEMPTS "
                "at least 1"
            )

        if self.auth_failure_limit < 1 or self.auth_failure_window <= 0 or self.proxy_hops < 0:
            raise ConfigurationError(
                "REPOSYNC_AUTH_FAILURE_LIMIT must be at least 1, REPOSYNC_AUTH_FAILURE_WINDOW "
                "a positive number of seconds and REPOSYNC_PROXY_HOPS 0 or more"
            )

        self._check_webhooks()

    def _check_webhooks(self) -> None:
        previous, until = (
            self.github_webhook_previous_secret,
            self.github_webhook_previous_secret_until,
        )
        if previous and until is None:
            raise ConfigurationError(
                "REPOSYNC_GITHUB_WEBHOOK_PREVIOUS_SECRET needs "
                "REPOSYNC_GITHUB_WEBHOOK_PREVIOUS_SECRET_UNTIL (when the rotation's overlap "
                "ends): an old secret accepted forever is no rotation"
            )
        if until is not None and not previous:
            raise ConfigurationError(
                "REPOSYNC_GITHUB_WEBHOOK_PREVIOUS_SECRET_UNTIL is set but "
                "REPOSYNC_GITHUB_WEBHOOK_PREVIOUS_SECRET is empty"
            )
        if until is not None and until.tzinfo is None:
            raise ConfigurationError(
                "REPOSYNC_GITHUB_WEBHOOK_PREVIOUS_SECRET_UNTIL needs a UTC offset "
                "(for example 2026-12-31T12:00:00Z)"
            )
        if previous and not self.github_webhook_secret:
            raise ConfigurationError(
                "REPOSYNC_GITHUB_WEBHOOK_PREVIOUS_SECRET is set without "
                "REPOSYNC_GITHUB_WEBHOOK_SECRET (the secret it rotates to)"
            )
        if not 0 <= self.webhook_debounce_seconds <= 300:
            raise ConfigurationError(
                "REPOSYNC_WEBHOOK_DEBOUNCE_SECONDS must be between 0 and 300 "
                f"(got {self.webhook_debounce_seconds})"
            )
        if self.webhook_delivery_retention_days < 3:
            raise ConfigurationError(
                "REPOSYNC_WEBHOOK_DELIVERY_RETENTION_DAYS must be at least 3 (GitHub "
                "redelivers deliveries of the past 3 days; a forgotten one would run again)"
            )

    @property
    def github_connect_enabled(self) -> bool:
        """Whether Connect GitHub is configured (``__post_init__`` checked it is whole)."""
        return bool(self.github_client_id)

    @property
    def secret_keys(self) -> tuple[str, ...]:
        """The Fernet keys of ``secret_key``, the sealing one first."""
        return tuple(key.strip() for key in self.secret_key.split(",") if key.strip())

    @property
    def effective_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir / 'reposync.db'}"

    @property
    def effective_broker_url(self) -> str:
        return self.broker_url or DEFAULT_BROKER_URL

    @property
    def runs_in_process(self) -> bool:
        """Whether ``reposync api`` executes Runs itself (``executor``): asked for, or
        ``auto`` on the embedded database with no broker configured. A configured
        database stays with Celery unless asked, so the distributed mode is unchanged."""
        if self.executor != "auto":
            return self.executor == "in-process"
        return not self.database_url and not self.broker_url

    @property
    def effective_metrics_dir(self) -> Path:
        return self.metrics_dir or self.data_dir / "metrics"

    @property
    def heartbeat_interval(self) -> float:
        return self.lease_ttl / 3

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Build settings from ``REPOSYNC_*`` variables; explicit overrides win."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(ENV_PREFIX + f.name.upper())
            if raw is None or raw == "":
                continue
            values[f.name] = _parse(f.name, raw, _PARSERS[f.name])
        for name, value in overrides.items():
            if value is None:
                continue
            values[name] = _parse(name, value, _PARSERS[name]) if isinstance(value, str) else value
        return cls(**values)

    def with_overrides(self, **changes: Any) -> Settings:
        return replace(self, **changes)


_APP_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,99}$")


def _check_github_connect(settings: Settings) -> None:
    """Connect GitHub needs the OAuth client id, its secret and the App's slug together:
    with one missing, the first user to click "Connect GitHub" would meet the error."""
    given = {
        "REPOSYNC_GITHUB_CLIENT_ID": settings.github_client_id,
        "REPOSYNC_GITHUB_CLIENT_SECRET": settings.github_client_secret,
        "REPOSYNC_GITHUB_APP_SLUG": settings.github_app_slug,
    }
    missing = [name for name, value in given.items() if not value.strip()]
    if missing and len(missing) < len(given):
        raise ConfigurationError(
            "Connect GitHub needs REPOSYNC_GITHUB_CLIENT_ID, REPOSYNC_GITHUB_CLIENT_SECRET and "
            f"REPOSYNC_GITHUB_APP_SLUG together; missing: {', '.join(missing)}"
        )
    if settings.github_app_slug and not _APP_SLUG.match(settings.github_app_slug):
        raise ConfigurationError(
            f"REPOSYNC_GITHUB_APP_SLUG={settings.github_app_slug!r} is not a GitHub App slug "
            "(lower-case letters, digits and dashes: the <slug> of github.com/apps/<slug>)"
        )
    for name, value in (
        ("REPOSYNC_GITHUB_OAUTH_URL", settings.github_oauth_url),
        ("REPOSYNC_GITHUB_CALLBACK_URL", settings.github_callback_url),
    ):
        if value and urlsplit(value).scheme not in ("http", "https"):
            raise ConfigurationError(f"{name} must be an http(s) URL (got {value!r})")
    if settings.github_connect_state_ttl <= 0 or settings.github_connect_wait < 0:
        raise ConfigurationError(
            "REPOSYNC_GITHUB_CONNECT_STATE_TTL must be positive and "
            "REPOSYNC_GITHUB_CONNECT_WAIT 0 or more seconds"
        )


def _check_fernet_key(key: str) -> None:
    """A Fernet key is 32 bytes in url-safe base64 (44 characters): say so plainly here
    rather than let the first seal fail in a worker."""
    try:
        valid = len(base64.urlsafe_b64decode(key.encode("ascii"))) == 32
    except (binascii.Error, UnicodeEncodeError, ValueError):
        valid = False
    if not valid:
        raise ConfigurationError(
            "REPOSYNC_SECRET_KEY must be Fernet keys (32 bytes in url-safe base64, 44 "
            "characters; several comma-separated), for example the output of: python -c "
            "'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'"
        )


def _networks(raw: str) -> tuple[Network, ...]:
    """``10.0.0.0/8, ::1/128`` (a bare address is its own /32 or /128)."""
    return tuple(
        ipaddress.ip_network(part.strip(), strict=False) for part in raw.split(",") if part.strip()
    )


def _boolean(raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _aware_datetime(raw: str) -> datetime:
    """An ISO 8601 time (``Z`` or an offset; the check for one is in ``Settings``)."""
    return datetime.fromisoformat(raw.strip())


def _parse(name: str, raw: str, parser: Callable[[str], Any]) -> Any:
    try:
        return parser(raw)
    except ValueError as exc:
        raise ConfigurationError(f"{ENV_PREFIX}{name.upper()}={raw!r} is not valid: {exc}") from exc


_PARSERS: dict[str, Callable[[str], Any]] = {
    "data_dir": lambda raw: Path(raw).expanduser(),
    "local_target_hooks": _boolean,
    "web_secure_cookie": _boolean,
    "auth_failure_limit": int,
    "auth_failure_window": float,
    "proxy_hops": int,
    "api_threads": int,
    "api_max_streams": int,
    "api_streams_per_user": int,
    "api_token_days": int,
    "local_roots": lambda raw: tuple(
        Path(part).expanduser() for part in raw.split(os.pathsep) if part.strip()
    ),
    "git_remote_prefixes": lambda raw: tuple(
        part.strip() for part in raw.split(",") if part.strip()
    ),
    "database_url": str,
    "broker_url": str,
    "executor": lambda raw: raw.strip().lower(),
    "lease_ttl": float,
    "batch_max_items": int,
    "batch_max_bytes": int,
    "git_batch_max_items": int,
    "git_max_push_pack_bytes": int,
    "git_max_ref_updates_per_push": int,
    "git_stall_seconds": float,
    "git_rate_limit_wait": float,
    "max_stage_attempts": int,
    "max_item_attempts": int,
    "retry_backoff": float,
    "retry_backoff_max": float,
    "task_soft_time_limit": float,
    "task_time_limit": float,
    "visibility_timeout": float,
    "unacked_restore_interval": float,
    "unacked_restore_throttle": int,
    "tick_interval": float,
    "step_chain_seconds": float,
    "dispatch_grace": float,
    "api_bind": str,
    "github_api_url": str,
    "github_uploads_url": str,
    "github_git_url": str,
    "github_app_id": str,
    "github_app_private_key_path": str,
    "github_installation_id": str,
    "github_token": str,
    "github_client_id": str,
    "github_client_secret": str,
    "github_app_slug": lambda raw: raw.strip(),
    "github_oauth_url": str,
    "github_callback_url": str,
    "github_connect_state_ttl": float,
    "github_connect_wait": float,
    "github_write_interval": float,
    "forgejo_instances": instances_from_json,
    "forgejo_instances_file": lambda raw: Path(raw).expanduser(),
    "local_busy_timeout": float,
    "embedded_max_wait": float,
    "progress_interval": float,
    "http_timeout": float,
    "lfs_max_object_size": int,
    "max_asset_bytes": int,
    "idempotency_ttl": float,
    "idempotency_lock": float,
    "metrics_dir": lambda raw: Path(raw).expanduser(),
    "metrics_token": str,
    "log_format": lambda raw: raw.strip().lower(),
    "secret_key": str,
    "webhook_allowed_networks": _networks,
    "webhook_timeout": float,
    "webhook_backoff_unit": float,
    "webhook_backoff_max": float,
    "webhook_max_attempts": int,
    "github_webhook_secret": str,
    "github_webhook_previous_secret": str,
    "github_webhook_previous_secret_until": _aware_datetime,
    "webhook_debounce_seconds": float,
    "webhook_delivery_retention_days": int,
}


#: Settings that may carry a credential (a password in the URL's user part).
CREDENTIAL_URLS = ("REPOSYNC_DATABASE_URL", "REPOSYNC_BROKER_URL")


def url_has_password(url: str) -> bool:
    """Whether a database or broker URL carries a password."""
    try:
        return urlsplit(url).password is not None
    except ValueError:  # a malformed URL is refused where it is used, with its own message
        return False


def read_env_file(path: Path) -> dict[str, str]:
    """``REPOSYNC_*`` settings from a file of ``NAME=value`` lines (``export`` allowed,
    ``#`` comments, one level of quotes), the format of a systemd or compose env file.

    What a hook needs to reach the database may hold a password: an installed hook names
    this file instead of carrying the values, so it must be readable by its owner only.
    """
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read the settings file {path}: {exc.strerror}") from exc
    if mode & 0o077:
        raise ConfigurationError(
            f"{path} may be read by others (mode {mode & 0o777:o}): it holds the database's "
            f"address, so only its owner may read it (chmod 600 {path})"
        )
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.removeprefix("export ").partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not re.fullmatch(r"REPOSYNC_[A-Z0-9_]+", name):
            raise ConfigurationError(
                f"{path}:{number}: expected REPOSYNC_NAME=value, got {raw.strip()[:60]!r}"
            )
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[name] = value
    return values
