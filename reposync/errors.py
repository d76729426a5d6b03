"""The one error hierarchy of reposync.

Every error a user, an operator or the API can see is one of these classes. Each class has
a stable ``code`` (part of the public contract: reports, JSON output and the API use it),
whether retrying can help (``retryable``), the HTTP status the API answers with, and the
exit status of the CLI. Lower-layer errors (SQLAlchemy, pygit2, ``git``, HTTP) are mapped
into this tree at one boundary each, never leaked.

::

    ReposyncError                       internal_error
    ├── UsageError                      invalid_input            (exit 2)
    │   ├── InvalidLocator              invalid_locator
    │   ├── InvalidConnection           invalid_connection       (a side's connection_id)
    │   ├── RepositoryNotFound          repository_not_found     (also LookupError)
    │   ├── OwnerNotFound               owner_not_found          (also LookupError)
    │   ├── NotARepository              not_a_repository
    │   ├── RepositoryNotCreatable      repository_not_creatable (a path under a file)
    │   ├── WrongDirection              wrong_direction
    │   ├── UnschedulableCron           cron_has_no_future_slot  (HTTP 422)
    │   ├── WebhookTargetRefused        webhook_target_refused   (HTTP 422)
    │   ├── ConfigurationError          invalid_configuration
    │   ├── IdempotencyKeyInvalid       idempotency_key_invalid
    │   ├── IdempotencyKeyReused        idempotency_key_reused   (HTTP 422)
    │   ├── WebhookMalformed            webhook_malformed        (HTTP 400)
    │   ├── WebhookPayloadInvalid       webhook_payload_invalid  (HTTP 422)
    │   ├── WebhookTooLarge             webhook_too_large        (HTTP 413)
    │   └── GitHubStateInvalid          github_state_invalid     (Connect GitHub)
    ├── GitHubConnectUnconfigured       github_connect_unconfigured (HTTP 503)
    ├── SecretKeyMissing                secret_key_missing       (HTTP 503)
    ├── SecretUnreadable                secret_unreadable
    ├── DatabaseUnavailable             database_unavailable     (exit 2, retryable, Retry-After)
    ├── DatabaseNotMigrated             database_not_migrated    (exit 2; the API refuses to start)
    ├── WebhooksNotConfigured           webhooks_not_configured  (HTTP 503)
    ├── RecordNotFound                  record_not_found         (also LookupError)
    │   └── ConnectionNotGranted        connection_not_granted   (HTTP 404)
    ├── Unauthenticated                 unauthenticated
    │   └── WebhookSignatureInvalid     webhook_signature_invalid
    ├── TooManyAttempts                 too_many_attempts        (HTTP 429, Retry-After)
    ├── Forbidden                       forbidden
    │   └── LocatorRefused              locator_refused
    ├── NotAllowedNow                   not_allowed_now
    │   ├── ResultUnknownUnresolved     result_unknown_unresolved
    │   ├── ConnectionMismatch          connection_mismatch
    │   ├── VisibilityUnconfirmed       visibility_unconfirmed
    │   └── WritesNotStopped            writes_not_stopped       (a handoff from GitHub)
    ├── BindingBusy                     binding_busy
    ├── OwnerBindingBusy                owner_binding_busy       (a pass is running)
    ├── IdempotencyKeyInProgress        idempotency_key_in_progress (retryable)
    ├── LeaseLost                       lease_lost
    ├── RunCancelled                    run_cancelled            (a cancel stopped a running push)
    ├── AttemptsExhausted               attempts_exhausted
    ├── GitTransportError               git_transport_failed     (retryable)
    │   └── GitRateLimited              git_rate_limited         (a Run waits: GIT_RATE_LIMIT_WAIT)
    └── ProviderError                   provider_error
        ├── PermissionDenied            permission_denied
        │   └── GitCredentialsRefused   git_credentials_refused  (renewed once where it can be)
        ├── RateLimited                 rate_limited             (retryable, retry_at)
        ├── QuotaExceeded               quota_exceeded
        ├── ObjectNotFound              not_found                (also LookupError)
        ├── ResultUnknown               result_unknown           (a rerun clears it)
        ├── VerifyMismatch              verify_mismatch          (a rerun clears it)
        ├── Conflict                    conflict
        ├── PushTooLarge                push_too_large
        ├── TargetRefusedPush           target_refused_push      (a rerun clears it once fixed)
        ├── WikiDisabled                wiki_disabled            (a rerun clears it once enabled)
        ├── WikiNotInitialized          wiki_not_initialized     (a rerun clears it once created)
        ├── WriteRefused                write_refused            (item code in .refusal)
        ├── RepositoryMismatch          repository_mismatch
        ├── ContentUnavailable          source_content_unavailable
        │   └── AssetTooLarge           asset_too_large          (REPOSYNC_MAX_ASSET_BYTES)
        ├── UntrustedOrigin             untrusted_origin
        ├── GitHubCodeRefused           github_code_refused      (Connect GitHub)
        ├── LfsObjectError              lfs_object_error         (an item's code)
        │   ├── LfsObjectMissing        lfs_object_missing
        │   ├── LfsObjectCorrupt        lfs_object_corrupt
        │   ├── LfsObjectTooLarge       lfs_object_too_large
        │   ├── LfsObjectNotAFile       lfs_object_not_a_file    (a link in a local store)
        │   └── LfsNotServed            lfs_not_served           (a Git remote without LFS)
        └── ProviderUnavailable         provider_unavailable     (retryable)

Each class also names the **kind** of problem it is (``problem_type``, one of
``ProblemType``'s seven: what a user interface offers to do about it), inherited like
everything else, so a new class has one without restating it::

    authorization_required    Unauthenticated, Forbidden, ConnectionNotGranted,
                              PermissionDenied (GitCredentialsRefused), VisibilityUnconfirmed,
                              GitHubCodeRefused
    temporarily_rate_limited  RateLimited, GitRateLimited
    quota_exceeded            QuotaExceeded
    external_result_unknown   ResultUnknown, ResultUnknownUnresolved
    repository_conflict       Conflict
    verification_failed       VerifyMismatch
    sync_failed               every other class (ReposyncError's own)

Why one module of ~940 lines: the tree above is one public contract (its codes are in
reports, JSON output and API answers), read and reviewed as a whole; almost every line
is a class with its code, status and suggested action. Split by layer, a new error would
need a decision where it lives, and the test that every code is unique and reads the same
in reports (tests/unit/test_errors.py) would have to gather the pieces back.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import ClassVar


class ProblemType(StrEnum):
    """What a problem asks of whoever reads it: the kinds a user interface maps to one
    action each (README, "Problem types"). A report's problem and an API error carry one
    beside their ``error_code``, which stays the precise, stable name of the cause."""

    #: Someone must grant or confirm something: credentials' access, a Connect GitHub
    #: grant, the operator's yes to a more public standby.
    AUTHORIZATION_REQUIRED = "authorization_required"
    #: A forge's rate limit: wait, the Run resumes by itself.
    TEMPORARILY_RATE_LIMITED = "temporarily_rate_limited"
    #: A forge's quota: raise it or remove data, then run again.
    QUOTA_EXCEEDED = "quota_exceeded"
    #: A write's outcome was never observed: recover the Run (read-back proves it).
    EXTERNAL_RESULT_UNKNOWN = "external_result_unknown"
    #: The standby holds something else where the authority's object goes: resolve it on
    #: the standby, or choose the Binding's conflict policy.
    REPOSITORY_CONFLICT = "repository_conflict"
    #: A write was accepted but did not read back as written: run a full audit.
    VERIFICATION_FAILED = "verification_failed"
    #: Anything else: read the message and the suggested action, then retry.
    SYNC_FAILED = "sync_failed"


class ReposyncError(Exception):
    """Base of every error reposync raises on purpose."""

    code: ClassVar[str] = "internal_error"
    retryable: ClassVar[bool] = False
    http_status: ClassVar[int] = 500
    exit_status: ClassVar[int] = 1
    #: What an operator should do about it; shown in reports and the API.
    suggested_action: ClassVar[str] = "inspect the logs and report a bug"
    #: The kind of problem, for a user interface's action (inherited by subclasses).
    problem_type: ClassVar[ProblemType] = ProblemType.SYNC_FAILED
    #: Whether a later Run clears it with nobody changing anything: what a report's
    #: problem calls ``retryable``. None: as ``retryable`` (which says whether a stage may
    #: run again by itself; an unknown outcome never is, yet recovering the Run proves it).
    clears_on_rerun: ClassVar[bool | None] = None

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @classmethod
    def rerun_clears(cls) -> bool:
        return cls.retryable if cls.clears_on_rerun is None else cls.clears_on_rerun

    def to_dict(self) -> dict[str, object]:
        return {
            "error_code": self.code,
            "problem_type": self.problem_type.value,
            "message": self.message,
            "retryable": self.retryable,
            "suggested_action": self.suggested_action,
        }


class UsageError(ReposyncError):
    """The caller asked for something impossible; nothing was written."""

    code = "invalid_input"
    http_status = 400
    exit_status = 2
    suggested_action = "correct the command line or request"


class InvalidLocator(UsageError):
    code = "invalid_locator"
    suggested_action = "use PROVIDER:LOCATION, for example local:/srv/forge/app.git"


class InvalidConnection(UsageError):
    """A Binding side's ``connection_id`` its provider cannot read (or takes none)."""

    code = "invalid_connection"
    suggested_action = (
        "use a connection_id GET /github/repositories lists (github:installation:<id>), "
        "or none for the configured credentials"
    )


class RepositoryNotFound(UsageError, LookupError):
    code = "repository_not_found"
    http_status = 404
    suggested_action = "check the path or name of the repository"

    @classmethod
    def or_hidden(cls, locator: str) -> RepositoryNotFound:
        """The one answer to an API caller for a repository that does not exist *or* that
        the caller may not see: the two must read the same, or the answer tells them apart."""
        return cls(f"{locator} does not exist or is not granted to you")


class OwnerNotFound(UsageError, LookupError):
    """An owner of repositories (an organization or user, a directory of bare
    repositories) that does not exist, or that the credentials cannot see."""

    code = "owner_not_found"
    http_status = 404
    suggested_action = (
        "check the owner's name (github:LOGIN) or directory (local:/PATH, which must exist)"
    )


class NotARepository(UsageError):
    code = "not_a_repository"
    suggested_action = "point the locator at a Git repository or at a path that does not exist"


class RepositoryNotCreatable(UsageError):
    """A missing standby the provider would create where its filesystem refuses one (a
    path under a file, a directory the service may not write, a read-only mount): the
    locator as given can never work, so it is the caller's to change, and nothing about
    the pair is recorded."""

    code = "repository_not_creatable"
    suggested_action = (
        "choose a locator under a directory reposync may write, or create the repository there"
    )


class WrongDirection(UsageError):
    """Normal Runs copy authority -> standby only; the other way needs a handoff."""

    code = "wrong_direction"
    http_status = 409
    suggested_action = "swap SOURCE and TARGET, or hand authority over first"


class UnschedulableCron(UsageError):
    """A well-formed cron expression that never fires again (``0 0 31 2 *``, a past year)."""

    code = "cron_has_no_future_slot"
    http_status = 422
    suggested_action = "choose a cron expression that fires again (UTC)"


class WebhookTargetRefused(UsageError):
    """A webhook target URL the service will not call: not http(s), credentials in it, or
    a host that resolves to loopback, private, link-local, unique-local, multicast or
    unspecified addresses (request forgery against the service's own network)."""

    code = "webhook_target_refused"
    http_status = 422
    suggested_action = (
        "use a public http(s) URL; an operator may allow an internal network with "
        "REPOSYNC_WEBHOOK_ALLOWED_NETWORKS"
    )


class ConfigurationError(UsageError):
    code = "invalid_configuration"
    suggested_action = "fix the REPOSYNC_* setting named in the message"


class IdempotencyKeyInvalid(UsageError):
    """The ``Idempotency-Key`` header is missing where it is required, or malformed."""

    code = "idempotency_key_invalid"
    suggested_action = (
        "send an Idempotency-Key header of 1 to 255 visible ASCII characters (a UUID is "
        "a good key), and the same key again only to retry the same request"
    )


class IdempotencyKeyReused(UsageError):
    """The key was used before with another request: its answer belongs to that one."""

    code = "idempotency_key_reused"
    http_status = 422
    suggested_action = "use a new Idempotency-Key for a different request"


# -- Connect GitHub (issue 15) ---------------------------------------------------------


class GitHubStateInvalid(UsageError):
    """A Connect GitHub callback whose state is unknown, used already, expired, or was
    started in another browser: nothing is recorded (a forged or replayed redirect must
    never attach a GitHub identity to someone else's reposync user)."""

    code = "github_state_invalid"
    suggested_action = "start Connect GitHub again from the same browser"


class GitHubConnectUnconfigured(ReposyncError):
    """Connect GitHub was asked for and the GitHub App's OAuth settings are not set."""

    code = "github_connect_unconfigured"
    http_status = 503
    exit_status = 2
    suggested_action = (
        "set REPOSYNC_GITHUB_CLIENT_ID, REPOSYNC_GITHUB_CLIENT_SECRET and "
        "REPOSYNC_GITHUB_APP_SLUG (the GitHub App's settings page) on the API"
    )


# -- end Connect GitHub ------------------------------------------------------------------


class SecretKeyMissing(ReposyncError):
    """A secret must be sealed or opened and REPOSYNC_SECRET_KEY is not set."""

    code = "secret_key_missing"
    http_status = 503
    exit_status = 2
    suggested_action = (
        "set REPOSYNC_SECRET_KEY to a Fernet key (python -c 'from cryptography.fernet "
        "import Fernet; print(Fernet.generate_key().decode())') on the API and the workers"
    )


class SecretUnreadable(ReposyncError):
    """A sealed secret that none of the configured keys opens (its key was removed)."""

    code = "secret_unreadable"
    suggested_action = (
        "put the key that sealed it back into REPOSYNC_SECRET_KEY (after the current one), "
        "or set the subscription's secret again"
    )


class WebhookMalformed(UsageError):
    """A webhook delivery without the headers or the JSON body every delivery has."""

    code = "webhook_malformed"
    suggested_action = (
        "send the delivery as the forge does: a JSON body (content type application/json) "
        "with its event and delivery id headers"
    )


class WebhookPayloadInvalid(UsageError):
    """A signed delivery whose payload does not match its event's published schema."""

    code = "webhook_payload_invalid"
    http_status = 422
    suggested_action = (
        "nothing was recorded; the next scheduled Run still syncs the change. Report the "
        "payload if the forge itself sent it"
    )


class WebhookTooLarge(UsageError):
    """A delivery body beyond GitHub's own cap (25 MB): GitHub never sends one."""

    code = "webhook_too_large"
    http_status = 413
    suggested_action = "nothing: the forge never sends such a delivery; the next Run syncs"


class WebhooksNotConfigured(ReposyncError):
    """No webhook secret is configured: unsigned input is refused, never accepted."""

    code = "webhooks_not_configured"
    http_status = 503
    exit_status = 2
    suggested_action = (
        "set the forge's webhook secret setting the message names to the secret of its hook "
        "(and restart the API)"
    )


class DatabaseUnavailable(ReposyncError):
    """The database cannot be used for the moment (down, restarting, unreachable, out of
    connections, its file unreadable). The API answers 503 with ``Retry-After``."""

    code = "database_unavailable"
    retryable = True
    http_status = 503
    exit_status = 2
    suggested_action = "check REPOSYNC_DATABASE_URL and that the database server is running"
    #: Seconds an API client is asked to wait before it tries again.
    retry_after: ClassVar[int] = 5


class DatabaseNotMigrated(ReposyncError):
    """The database's schema is not at the migration this reposync needs (never migrated,
    older, or newer): the distributed mode's API refuses to start on it."""

    code = "database_not_migrated"
    http_status = 503
    exit_status = 2
    suggested_action = (
        "run `reposync db upgrade` with the same REPOSYNC_DATABASE_URL (compose: the "
        "`migrate` service) before starting the API"
    )


class RecordNotFound(ReposyncError, LookupError):
    code = "record_not_found"
    http_status = 404
    exit_status = 2
    suggested_action = "check the id"


class ConnectionNotGranted(RecordNotFound):
    """A member named a connection (a GitHub App installation) that Connect GitHub did not
    grant them, or one whose grant does not reach the repository. 404, not 403: a member
    learns nothing of installations outside their grants, not even that one exists."""

    code = "connection_not_granted"
    problem_type = ProblemType.AUTHORIZATION_REQUIRED
    suggested_action = (
        "connect GitHub (or re-authorize) and bind a repository GET /github/repositories "
        "lists, with the connection_id listed for it"
    )


class Unauthenticated(ReposyncError):
    code = "unauthenticated"
    problem_type = ProblemType.AUTHORIZATION_REQUIRED
    http_status = 401
    exit_status = 2
    suggested_action = "send a valid API token: Authorization: Bearer <token>"


class WebhookSignatureInvalid(Unauthenticated):
    """A webhook delivery whose signature is missing or made with another secret."""

    code = "webhook_signature_invalid"
    suggested_action = (
        "give the forge's hook the secret of its webhook secret setting (during a rotation, "
        "the previous secret counts until the end of the overlap the settings give)"
    )


class TooManyAttempts(ReposyncError):
    """Too many refused API tokens (bearer tokens, the page's sign-in form and session
    cookies alike) came from one client within the throttle's window: every attempt from
    it is refused, valid or not, until ``retry_after`` seconds have passed."""

    code = "too_many_attempts"
    retryable = True
    http_status = 429
    exit_status = 2
    suggested_action = (
        "wait for the Retry-After seconds, then send a valid API token; a reverse proxy in "
        "front of the API must be declared (REPOSYNC_PROXY_HOPS) or all its clients share "
        "one budget"
    )

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "retry_after": self.retry_after}


class Forbidden(ReposyncError):
    code = "forbidden"
    problem_type = ProblemType.AUTHORIZATION_REQUIRED
    http_status = 403
    exit_status = 2
    suggested_action = "ask an admin for the role or the repository grant this needs"


class LocatorRefused(Forbidden):
    """A ``local:`` locator given over the API that resolves outside the repository roots.

    Its message never says whether anything exists there.
    """

    code = "locator_refused"
    suggested_action = (
        "use a repository under REPOSYNC_LOCAL_ROOTS, or bind it with the reposync CLI"
    )


class NotAllowedNow(ReposyncError):
    """The request is valid, but the Binding's state forbids it for now."""

    code = "not_allowed_now"
    http_status = 409
    suggested_action = "resolve the condition named in the message, then try again"


class ResultUnknownUnresolved(NotAllowedNow):
    """A write's outcome is unknown: nothing may touch the Binding until it is proven."""

    code = "result_unknown_unresolved"
    problem_type = ProblemType.EXTERNAL_RESULT_UNKNOWN
    suggested_action = "recover the Run (POST /runs/{id}/recover): it proves each outcome"


class ConnectionMismatch(NotAllowedNow):
    """The pair's Binding exists and authenticates a side through another connection: a
    create request does not silently move an existing Binding to other credentials."""

    code = "connection_mismatch"
    suggested_action = (
        "bind without connection ids to use the existing Binding as it is, or delete it "
        "and create it again with the connection wanted"
    )


class VisibilityUnconfirmed(NotAllowedNow):
    """The standby is more public than the authority and nobody confirmed that."""

    code = "visibility_unconfirmed"
    problem_type = ProblemType.AUTHORIZATION_REQUIRED
    suggested_action = (
        "if the standby may be more public than the authority, confirm it: "
        "confirm_visibility: true (POST or PATCH /bindings), --confirm-visibility, or the "
        "visibility checkbox on the page"
    )


class WritesNotStopped(NotAllowedNow):
    """A handoff from an authority reposync cannot freeze (GitHub), and nobody said that
    writes to it stopped: one made after the switch would be overwritten later."""

    code = "writes_not_stopped"
    suggested_action = (
        "stop every write to the authority (archive it or take push rights away), then "
        "hand off with --confirm-writes-stopped (confirm_writes_stopped: true)"
    )


class BindingBusy(ReposyncError):
    """A Binding already has an active Run; one Run per Binding at a time."""

    code = "binding_busy"
    http_status = 409
    suggested_action = "wait for the active Run to finish or cancel it"


class OwnerBindingBusy(ReposyncError):
    """A pass of the owner binding is running already (on demand, or its schedule's);
    one pass at a time, so a repository is never created or bound twice at once."""

    code = "owner_binding_busy"
    http_status = 409
    suggested_action = "wait for the running pass to end, then read its report"


class IdempotencyKeyInProgress(ReposyncError):
    """Another request with the same key is still being answered (the first one wins)."""

    code = "idempotency_key_in_progress"
    retryable = True
    http_status = 409
    suggested_action = "retry with the same key in a moment: it then gets the first answer"


class LeaseLost(ReposyncError):
    """The Binding's lease moved on: this execution must stop before any further write."""

    code = "lease_lost"
    http_status = 409
    suggested_action = "none: another execution owns the Run now"


class RunCancelled(ReposyncError):
    """Somebody cancelled the Run while one of its writes ran (a ``git push``): the write
    was stopped, and what it may have written is read back before the Run ends
    ``cancelled``. Never shown as a problem: the Run's status says it."""

    code = "run_cancelled"
    http_status = 409
    suggested_action = "none: the Run was cancelled; start a new one to sync"


class AttemptsExhausted(ReposyncError):
    code = "attempts_exhausted"
    suggested_action = "inspect the Run's events; retry the Run once the cause is fixed"


class GitTransportError(ReposyncError):
    code = "git_transport_failed"
    retryable = True
    http_status = 502
    suggested_action = "check that both repositories are reachable; the Run can be retried"


class GitRateLimited(GitTransportError):
    """A Git host answered a git request HTTP 429: its rate limit, or a proxy's before it.

    A Run waits for it as for an API's rate limit (the runner defers it; no item spends
    an attempt), rather than spend the stage's attempts on backoff that the limit outlasts.
    git reports no ``Retry-After``, so the wait is ``REPOSYNC_GIT_RATE_LIMIT_WAIT``. The
    request that met the limit wrote nothing: of a push, ``unsent_refs`` names the refs no
    request of it carried past the limit (as ``GitCredentialsRefused`` does).
    """

    code = "git_rate_limited"
    problem_type = ProblemType.TEMPORARILY_RATE_LIMITED
    http_status = 429
    suggested_action = "nothing: the Run waits for the Git host's limit and resumes"

    def __init__(self, message: str, *, unsent_refs: frozenset[str] | None = None) -> None:
        super().__init__(message)
        #: Of a push: the refs that did not land (``GitCredentialsRefused.unsent_refs``).
        self.unsent_refs = unsent_refs


class ProviderError(ReposyncError):
    """A forge answered with an error (or not at all)."""

    code = "provider_error"
    http_status = 502
    suggested_action = "inspect the provider's message"


class PermissionDenied(ProviderError):
    code = "permission_denied"
    problem_type = ProblemType.AUTHORIZATION_REQUIRED
    http_status = 403
    suggested_action = "grant the connection's credentials access to the repository"


class GitCredentialsRefused(PermissionDenied):
    """A remote refused the credentials git sent it (HTTP 401 or 403, SSH's publickey):
    a token revoked, expired or stripped of its access while a Run holds it. Git asks
    once more only where the provider can renew them (a GitHub App's installation token:
    ``GitRemote.with_credentials``); otherwise the same credentials would be refused
    again, so no stage retries it and the Run stops with the forge's words."""

    code = "git_credentials_refused"
    suggested_action = (
        "renew the connection's credentials or give them back their access to the "
        "repository (a revoked or expired token, or one without write access to push), "
        "then run again"
    )

    def __init__(self, message: str, *, unsent_refs: frozenset[str] | None = None) -> None:
        super().__init__(message)
        #: Of a push: the refs no request of it carried past the remote's credentials
        #: (a refusal comes before a ref is written), which therefore did not land; None
        #: where no push said (a fetch, a listing).
        self.unsent_refs = unsent_refs


class RateLimited(ProviderError):
    """A forge's rate limit.

    A Run never ends with it: the runner defers the Run to ``retry_at`` (its ``deferred``
    event says when it resumes) and no item spends an attempt. So whoever meets it as an
    error sent a request the limit refused before any Run existed (creating a Binding, a
    dry-run reconcile, Connect GitHub, a command line's binding): nothing was queued, and
    the suggestion says so rather than promise a Run that does not exist.
    """

    code = "rate_limited"
    problem_type = ProblemType.TEMPORARILY_RATE_LIMITED
    retryable = True
    http_status = 429
    suggested_action = "nothing was queued: send the request again after retry_at"

    def __init__(self, message: str, retry_at: datetime) -> None:
        super().__init__(message)
        self.retry_at = retry_at

    @classmethod
    def rerun_clears(cls) -> bool:
        return cls.retryable if cls.clears_on_rerun is None else cls.clears_on_rerun

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "retry_at": self.retry_at.isoformat()}


class QuotaExceeded(ProviderError):
    code = "quota_exceeded"
    problem_type = ProblemType.QUOTA_EXCEEDED
    http_status = 507
    suggested_action = "raise the forge's quota or remove data"


class ObjectNotFound(ProviderError, LookupError):
    code = "not_found"
    http_status = 404
    suggested_action = "the object disappeared; the next Run re-plans it"


class ResultUnknown(ProviderError):
    """A write was sent but its outcome was not observed; never re-send it blindly."""

    code = "result_unknown"
    problem_type = ProblemType.EXTERNAL_RESULT_UNKNOWN
    suggested_action = "recover the Run: reposync proves each outcome by read-back"
    clears_on_rerun = True


class VerifyMismatch(ProviderError):
    """A write was accepted, but the target did not read back as written (an item's code;
    the forge changed or dropped part of it)."""

    code = "verify_mismatch"
    problem_type = ProblemType.VERIFICATION_FAILED
    http_status = 502
    suggested_action = "the target did not read back as written; run a full audit"
    clears_on_rerun = True


class Conflict(ProviderError):
    code = "conflict"
    problem_type = ProblemType.REPOSITORY_CONFLICT
    http_status = 409
    suggested_action = (
        "resolve the objects on the target, or set the Binding's conflict policy to use_source"
    )


class PushTooLarge(ProviderError):
    """One ref's own pack is larger than the target accepts in one push (GitHub: 2 GiB):
    that ref's item fails, the other refs of its batch still land."""

    code = "push_too_large"
    http_status = 413
    suggested_action = (
        "push that ref's history to the target in parts (older commits first) outside "
        "reposync, or rewrite it without its largest files; the next Run then syncs it"
    )


class TargetRefusedPush(ProviderError):
    """The target refused a push for its own reasons, not because its refs changed: its
    disk or quota is full, a pre-receive or update hook declined, its fsck refused an
    object, it could not write what was sent (git's ``[remote rejected] (unpacker
    error)``, ``(hook declined)``, ...; ``reposync.git.push_report`` tells it from a
    conflict). The refused refs' items fail with this code and the message quotes the
    target's own words; nothing of them was written, and a Run after the cause is fixed
    pushes them (a full disk freed, a hook that lets reposync through)."""

    code = "target_refused_push"
    http_status = 502
    suggested_action = (
        "fix what the target said in the message (free space or raise the quota on the "
        "target, let the hook that declined accept reposync's pushes, repair the object "
        "its check refused), then run again; the refused refs were not written"
    )
    clears_on_rerun = True


class WikiDisabled(ProviderError):
    """The target has its wiki turned off (GitHub: ``has_wiki`` false), so the wiki's refs
    cannot be written there: its wiki items fail with this code, the rest of the Run goes
    on. Turning the wiki on and running again clears it."""

    code = "wiki_disabled"
    http_status = 409
    suggested_action = (
        "enable the wiki on the target repository (GitHub: Settings > General > Features > "
        "Wikis), then run again"
    )
    clears_on_rerun = True


class WikiNotInitialized(ProviderError):
    """The target's wiki is on but has no Git repository yet, and the forge refused to
    create it with the push (github.com answers "Repository not found" until a first
    page is saved in the browser). Its wiki items fail with this code; the rest of the Run
    goes on, and a rerun after the first page clears it."""

    code = "wiki_not_initialized"
    http_status = 409
    suggested_action = (
        "create the wiki's first page on the target (GitHub: the repository's Wiki tab > "
        "Create the first page), then run again"
    )
    clears_on_rerun = True


class WriteRefused(ProviderError):
    """The forge refused one write (a 4xx that is not a limit): nothing was written.

    A provider turns it into its item's ``REFUSED`` result with ``refusal`` as the item's
    error code (``conflict``, ``not_found``, ``dependency_missing``, ``unsupported``,
    ``invalid``); it only surfaces as itself when a refusal escapes a batch.
    """

    code = "write_refused"
    http_status = 422
    suggested_action = "read the forge's message; the object needs a change on either side"

    def __init__(self, message: str, *, refusal: str = "invalid", status: int = 422) -> None:
        super().__init__(message)
        self.refusal = refusal
        self.status = status


class RepositoryMismatch(ProviderError):
    """The locator now leads to another repository than the one the Binding was made for."""

    code = "repository_mismatch"
    http_status = 409
    suggested_action = "point the Binding's locator back at its repository, or create a new Binding"


class ContentUnavailable(ProviderError):
    """The source's bytes of one object (a release asset) could not be read: that object's
    write fails, the rest of its batch goes on."""

    code = "source_content_unavailable"
    http_status = 502
    suggested_action = "the next Run reads the asset again; check the source if it keeps failing"


class AssetTooLarge(ContentUnavailable):
    """A release asset larger than REPOSYNC_MAX_ASSET_BYTES: its item fails before any
    byte of it is sent (a write of the asset would be refused, or leave a partial upload
    behind); the rest of the Run goes on."""

    code = "asset_too_large"
    http_status = 413
    suggested_action = (
        "raise REPOSYNC_MAX_ASSET_BYTES if the target takes assets that large (GitHub: up "
        "to 2 GiB each), or remove the asset from the source's release"
    )
    clears_on_rerun = False


class UntrustedOrigin(ProviderError):
    """A forge response named a URL on a host that is not configured for it."""

    code = "untrusted_origin"
    http_status = 502
    suggested_action = (
        "check the REPOSYNC_GITHUB_*_URL settings; a forge should only name its own hosts"
    )


class LfsObjectError(ProviderError):
    """One LFS object a ref needs cannot be moved: the ref's item fails with this code and
    the ref is not pushed (a ref never reaches a target that lacks one of its objects)."""

    code = "lfs_object_error"
    http_status = 502
    suggested_action = "read the message: it names the object and the ref that needs it"


class LfsObjectMissing(LfsObjectError):
    """The source's LFS store does not have an object one of its refs points to."""

    code = "lfs_object_missing"
    suggested_action = (
        "upload the object to the source's LFS store (git lfs push --object-id origin OID "
        "from a clone that has it); the next Run pushes the ref"
    )
    clears_on_rerun = False


class LfsObjectCorrupt(LfsObjectError):
    """An LFS object's bytes do not hash to its OID or do not have its size."""

    code = "lfs_object_corrupt"
    suggested_action = (
        "replace the object in the source's LFS store with the right bytes; the next Run "
        "pushes the ref"
    )
    clears_on_rerun = False


class LfsObjectTooLarge(LfsObjectError):
    """An LFS object is larger than REPOSYNC_LFS_MAX_OBJECT_SIZE or the target's limit."""

    code = "lfs_object_too_large"
    suggested_action = (
        "raise REPOSYNC_LFS_MAX_OBJECT_SIZE if the target accepts the object, or remove it "
        "from the ref's history"
    )
    clears_on_rerun = False


class LfsObjectNotAFile(LfsObjectError):
    """A local LFS store's entry for an object is not a regular file reached without
    symbolic links: a link (perhaps out of the repository, to ``/etc`` or a secret), a
    directory, a pipe or a device, or a path through a linked directory. It is never
    read, sent on, or written through."""

    code = "lfs_object_not_a_file"
    suggested_action = (
        "remove the entry named in the message and upload the object itself (git lfs push "
        "--object-id origin OID from a clone that has it); links in an LFS store are never "
        "followed"
    )
    clears_on_rerun = False


class LfsNotServed(LfsObjectError):
    """A plain Git remote serves no LFS (its Batch API answers "not found", or its SSH
    server has no ``git-lfs-authenticate``) while a ref's history has LFS pointers: the
    objects cannot move, so those refs are not pushed."""

    code = "lfs_not_served"
    suggested_action = (
        "enable Git LFS on the remote's server (the Batch API at <url>/info/lfs, or "
        "git-lfs-authenticate over SSH), or sync those refs with a provider that has LFS"
    )
    clears_on_rerun = False


class GitHubCodeRefused(ProviderError):
    """GitHub would not exchange a Connect GitHub callback's code for a user token
    (``bad_verification_code``: expired or used; ``incorrect_client_credentials``: the
    OAuth settings are wrong). Nothing is recorded."""

    code = "github_code_refused"
    problem_type = ProblemType.AUTHORIZATION_REQUIRED
    http_status = 502
    suggested_action = (
        "start Connect GitHub again; if it fails again, check REPOSYNC_GITHUB_CLIENT_ID and "
        "REPOSYNC_GITHUB_CLIENT_SECRET against the GitHub App's settings"
    )


class ProviderUnavailable(ProviderError):
    code = "provider_unavailable"
    retryable = True
    http_status = 503
    suggested_action = "wait for the forge to come back; the Run can be retried"


def error_class(code: str) -> type[ReposyncError] | None:
    """The class whose stable code this is (None: an item's own code, such as a refusal)."""
    return _BY_CODE.get(code)


def all_error_classes() -> list[type[ReposyncError]]:
    """Every class of the tree, for tests that check codes are unique and documented."""
    found: list[type[ReposyncError]] = []
    pending: list[type[ReposyncError]] = [ReposyncError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


_BY_CODE = {cls.code: cls for cls in all_error_classes()}
