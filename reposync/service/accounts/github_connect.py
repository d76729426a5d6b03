"""Connect GitHub: a user authorizes (or installs) reposync's GitHub App themselves.

The flow, and why each step is as it is:

1. ``start`` (``POST /github/authorize/start`` or ``/github/install/start``) writes a
   one-time state bound to the user, to a secret the browser keeps in a cookie, and to a
   short lifetime; it records the installations the user had authorized (the baseline)
   and answers GitHub's URL. Only digests of the state and the browser secret are stored.
2. ``complete`` (``GET /github/install/callback``) checks the state together with the
   flow cookie of the browser that started it, and only then consumes it (unknown, used,
   expired or without that browser's cookie: ``GitHubStateInvalid``, nothing recorded
   and nothing consumed: seeing a state is not enough to end its flow), then
   exchanges the code for the user's token, reads the identity and the installations
   the token shows, and for an install waits a bounded time for one that is not in the
   baseline: GitHub lists an organization's new installation some seconds after the
   redirect. The token is forgotten before anything is written.
3. What is written: the identity, and the grants. An install merges the installations
   it saw into the user's grants; an authorization (a re-authorization too) replaces
   them with what GitHub shows now; a different GitHub identity than the one connected
   before replaces them as well (a user never keeps another identity's grants).

Reads (``connection``, ``repositories``) take the user's id and return only that user's
rows. A repository's ``connection_id`` (``github:installation:<id>``) is what a Binding
side's ``connection_id`` names: the installation whose token reaches it.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from reposync.errors import GitHubConnectUnconfigured, GitHubStateInvalid
from reposync.models import (
    GitHubAccount,
    GitHubConnectState,
    GitHubGrantRepository,
    GitHubInstallationGrant,
    utcnow,
)
from reposync.providers.accounts import (
    AccountConnector,
    AccountIdentity,
    AccountInstallation,
    AccountRepository,
    UserSession,
)
from reposync.providers.registry import account_connector
from reposync.service.context import ServiceContext
from reposync.service.queries import connection_id as connection_id  # web/endpoints/github.py's

log = logging.getLogger(__name__)

FLOWS = ("authorize", "install")
#: Where a flow may start: the JSON API, or the web page (whose callback returns there).
ORIGINS = ("api", "page")
#: How often a callback asks GitHub again while it waits for a new installation: often
#: enough to answer soon after GitHub lists it, seldom enough to spend little quota.
POLL_INTERVAL = 1.0


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _connector(ctx: ServiceContext) -> AccountConnector:
    if not ctx.settings.github_connect_enabled:
        raise GitHubConnectUnconfigured(
            "Connect GitHub is not configured on this reposync (no GitHub App OAuth client)"
        )
    assert ctx.environment is not None
    return account_connector("github", ctx.environment)


@dataclass(frozen=True, slots=True)
class Started:
    """What the browser needs: GitHub's URL, and the secret its flow cookie keeps."""

    url: str
    browser_secret: str
    expires_at: datetime


def start(
    ctx: ServiceContext, user_id: int, flow: str, redirect_uri: str, *, origin: str = "api"
) -> Started:
    """A new one-time state for ``user_id``'s ``flow`` (``authorize`` or ``install``),
    remembering its ``origin`` (``api`` or ``page``) for the callback's answer."""
    if flow not in FLOWS:
        raise ValueError(f"unknown Connect GitHub flow {flow!r}")
    if origin not in ORIGINS:
        raise ValueError(f"unknown Connect GitHub origin {origin!r}")
    connector = _connector(ctx)
    state, browser = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    now = utcnow()
    expires = now + timedelta(seconds=ctx.settings.github_connect_state_ttl)
    with ctx.db.transaction() as session:
        session.execute(delete(GitHubConnectState).where(GitHubConnectState.expires_at <= now))
        baseline = sorted(_granted_ids(session, user_id))
        session.add(
            GitHubConnectState(
                state_hash=_digest(state),
                browser_hash=_digest(browser),
                user_id=user_id,
                flow=flow,
                baseline=baseline,
                origin=origin,
                created_at=now,
                expires_at=expires,
            )
        )
    if flow == "install":
        url = connector.install_url(state)
    else:
        url = connector.authorize_url(state, redirect_uri)
    return Started(url=url, browser_secret=browser, expires_at=expires)


@dataclass(frozen=True, slots=True)
class Connected:
    """What a callback did: for whom, which flow, and whether the install showed up."""

    user_id: int
    flow: str
    #: Installations GitHub showed that were not in the baseline.
    new_installation_ids: list[str]
    #: An install whose installation GitHub had not listed within the wait (its grant
    #: comes with the next authorization, or a later install callback).
    pending: bool
    waited_seconds: float
    #: Where the flow started (``api`` or ``page``): how the callback answers.
    origin: str = "api"


@dataclass(slots=True)
class _Seen:
    identity: AccountIdentity
    installations: list[AccountInstallation]
    repositories: dict[str, list[AccountRepository]] = field(default_factory=dict)


def complete(
    ctx: ServiceContext,
    *,
    state: str,
    browser_secret: str | None,
    code: str,
    redirect_uri: str,
    installation_id: str | None = None,
) -> Connected:
    """Finish a flow: consume the state, exchange the code, wait, record (see module)."""
    connector = _connector(ctx)
    claimed = _consume(ctx, state, browser_secret)
    user_id, flow, baseline = claimed.user_id, claimed.flow, set(claimed.baseline)
    started = time.monotonic()
    user_session = connector.exchange(code, redirect_uri)
    try:
        seen, pending = _read(ctx, user_session, flow, baseline, installation_id)
    finally:
        user_session.close()
    waited = time.monotonic() - started
    new = [i.installation_id for i in seen.installations if i.installation_id not in baseline]
    with ctx.db.transaction() as session:
        _record(session, user_id, flow, seen)
    log.info(
        "Connect GitHub: user %s is %s on GitHub (%s): %d installation(s), %d new%s",
        user_id,
        seen.identity.login,
        flow,
        len(seen.installations),
        len(new),
        ", the new installation still pending" if pending else "",
    )
    return Connected(user_id, flow, new, pending, round(waited, 3), claimed.origin)


def abandon(ctx: ServiceContext, *, state: str, browser_secret: str | None) -> str:
    """GitHub came back without a code (the user declined, or GitHub refused the
    redirect): consume the state as ``complete`` would, record nothing, and answer the
    flow's origin so the callback can tell the page. The state and the browser's flow
    cookie are checked before anything is consumed, so a forged refusal cannot learn or
    end someone else's flow."""
    return _consume(ctx, state, browser_secret).origin


def _consume(ctx: ServiceContext, state: str, browser_secret: str | None) -> GitHubConnectState:
    """The state's row, deleted in the same transaction (one use, whatever comes next).

    Only a callback that brings the browser secret of the flow consumes it: the state
    travels in URLs (GitHub's redirect, the browser's history, a proxy's log), the secret
    only in the flow cookie of the browser that started it. A callback without that
    cookie, or after the state expired, is refused and leaves the row as it was, so
    whoever merely saw the state can neither finish the flow nor end it.
    """
    refused = GitHubStateInvalid(
        "this Connect GitHub callback's state is unknown, used already, expired, or was "
        "started in another browser"
    )
    if not state or not browser_secret:
        raise refused
    browser_hash = _digest(browser_secret)
    with ctx.db.transaction() as session:
        row = session.execute(
            select(GitHubConnectState).where(GitHubConnectState.state_hash == _digest(state))
        ).scalar_one_or_none()
        if row is None or row.expires_at <= utcnow():
            raise refused
        if not secrets.compare_digest(row.browser_hash, browser_hash):
            raise refused
        consumed = session.execute(
            delete(GitHubConnectState).where(
                GitHubConnectState.id == row.id, GitHubConnectState.browser_hash == browser_hash
            )
        )
        if getattr(consumed, "rowcount", 0) != 1:  # another request consumed it first
            raise refused
        session.expunge(row)
    return row


def _read(
    ctx: ServiceContext,
    user_session: UserSession,
    flow: str,
    baseline: set[str],
    installation_id: str | None,
) -> tuple[_Seen, bool]:
    """Identity, installations (waiting for the install's) and their repositories."""
    identity = user_session.identity()
    listed = user_session.installations()

    def arrived(found: Sequence[AccountInstallation]) -> bool:
        ids = {i.installation_id for i in found}
        if installation_id:  # GitHub named it in the redirect: wait for exactly that one
            return installation_id in ids
        return bool(ids - baseline)

    pending = False
    if flow == "install":
        wait = ctx.settings.github_connect_wait
        deadline = time.monotonic() + wait
        interval = min(POLL_INTERVAL, max(wait / 20, 0.01))
        while not arrived(listed):
            if time.monotonic() + interval > deadline:
                pending = True
                break
            assert ctx.environment is not None
            ctx.environment.clock.sleep(interval)
            listed = user_session.installations()
    seen = _Seen(identity=identity, installations=listed)
    for inst in listed:
        seen.repositories[inst.installation_id] = user_session.repositories(inst.installation_id)
    return seen, pending


def _record(session: Session, user_id: int, flow: str, seen: _Seen) -> None:
    now = utcnow()
    account = session.execute(
        select(GitHubAccount).where(GitHubAccount.user_id == user_id)
    ).scalar_one_or_none()
    identity = seen.identity
    replace = flow == "authorize"
    if account is None:
        account = GitHubAccount(user_id=user_id, connected_at=now)
        session.add(account)
    elif account.github_user_id != identity.user_id:
        replace = True  # another GitHub identity: none of the previous one's grants stay
        account.connected_at = now
    account.github_user_id = identity.user_id
    account.login = identity.login
    account.name = identity.name
    account.html_url = identity.html_url
    account.updated_at = now
    if replace:
        session.execute(
            delete(GitHubInstallationGrant).where(GitHubInstallationGrant.user_id == user_id)
        )
    for inst in seen.installations:
        session.execute(
            delete(GitHubInstallationGrant).where(
                GitHubInstallationGrant.user_id == user_id,
                GitHubInstallationGrant.installation_id == inst.installation_id,
            )
        )
        grant = GitHubInstallationGrant(
            user_id=user_id,
            installation_id=inst.installation_id,
            account_login=inst.account_login,
            account_type=inst.account_type,
            repository_selection=inst.repository_selection,
            manage_url=inst.manage_url,
            granted_at=now,
        )
        session.add(grant)
        session.flush()
        session.add_all(
            GitHubGrantRepository(
                grant_id=grant.id,
                repository_id=repo.repository_id,
                full_name=repo.full_name,
                private=repo.private,
                html_url=repo.html_url,
            )
            for repo in {
                r.repository_id: r for r in seen.repositories[inst.installation_id]
            }.values()
        )


def _granted_ids(session: Session, user_id: int) -> set[str]:
    return set(
        session.execute(
            select(GitHubInstallationGrant.installation_id).where(
                GitHubInstallationGrant.user_id == user_id
            )
        ).scalars()
    )


# -- reads: the asking user's rows only ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class Connection:
    """A user's GitHub identity (None: not connected) and the installations they granted."""

    account: GitHubAccount | None
    installations: list[GitHubInstallationGrant]


def connection(ctx: ServiceContext, user_id: int) -> Connection:
    with ctx.db.session() as session:
        account = session.execute(
            select(GitHubAccount).where(GitHubAccount.user_id == user_id)
        ).scalar_one_or_none()
        grants = list(
            session.execute(
                select(GitHubInstallationGrant)
                .where(GitHubInstallationGrant.user_id == user_id)
                .order_by(GitHubInstallationGrant.account_login, GitHubInstallationGrant.id)
            ).scalars()
        )
        session.expunge_all()
    return Connection(account, grants)


@dataclass(frozen=True, slots=True)
class PickerRepository:
    """A repository the user may pick for a Binding, with the connection that reaches it."""

    repository_id: str
    full_name: str
    private: bool
    html_url: str
    installation_id: str
    account_login: str

    @property
    def connection_id(self) -> str:
        return connection_id(self.installation_id)

    @property
    def locator(self) -> str:
        return f"github:{self.full_name}"


def repositories(ctx: ServiceContext, user_id: int) -> list[PickerRepository]:
    """The user's repositories across their installations, each once (by GitHub's id; an
    App has one installation per account, so a repository is reached through one; should
    two list it, the older grant wins, deterministically)."""
    with ctx.db.session() as session:
        rows = session.execute(
            select(GitHubGrantRepository, GitHubInstallationGrant)
            .join(
                GitHubInstallationGrant,
                GitHubGrantRepository.grant_id == GitHubInstallationGrant.id,
            )
            .where(GitHubInstallationGrant.user_id == user_id)
            .order_by(GitHubInstallationGrant.id, GitHubGrantRepository.id)
        ).all()
        found: dict[str, PickerRepository] = {}
        for repo, grant in rows:
            found.setdefault(
                repo.repository_id,
                PickerRepository(
                    repository_id=repo.repository_id,
                    full_name=repo.full_name,
                    private=repo.private,
                    html_url=repo.html_url,
                    installation_id=grant.installation_id,
                    account_login=grant.account_login,
                ),
            )
    return sorted(found.values(), key=lambda r: r.full_name.casefold())


def disconnect(ctx: ServiceContext, user_id: int) -> bool:
    """Forget the user's GitHub identity, grants and flows in progress; whether there was
    an identity. The App's installations on GitHub stay (their owners remove them)."""
    with ctx.db.transaction() as session:
        session.execute(delete(GitHubConnectState).where(GitHubConnectState.user_id == user_id))
        session.execute(
            delete(GitHubInstallationGrant).where(GitHubInstallationGrant.user_id == user_id)
        )
        removed = session.execute(delete(GitHubAccount).where(GitHubAccount.user_id == user_id))
        return bool(getattr(removed, "rowcount", 0))
