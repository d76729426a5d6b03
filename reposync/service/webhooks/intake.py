"""Webhooks in: a forge says a repository changed; reposync records it once and acts.

Two doors, one room. ``receive_delivery`` takes a forge's webhook delivery as it came
(headers and raw body) and hands it to the forge's own ``WebhookReader``, found through
the registry: it checks the signature, names the delivery, and reads what it says into a
provider-neutral ``Notification`` (GitHub's reader is ``providers/github/webhooks.py``),
so a new forge adds a reader and no branch here. ``receive_local`` takes what a local
repository's hooks report (a push's refs, the local forge's authoring API). Both end in
``receive``, which

1. looks up the Bindings with a side on each repository the delivery names (by
   immutable id), without locks;
2. applies the changes in transactions of at most ``APPLY_CHUNK`` Bindings, each locking
   its Bindings in id order: a renamed repository's locator follows, a visibility change
   is judged by the access stage's own rule (``visibility.observe``), a notice about
   access is kept; content changes owe a Run to the Bindings whose *authority* is the
   repository and whose sync is enabled (``event_runs``: coalesced, debounced);
3. records the delivery under its unique key (provider, delivery id) in the last of those
   transactions: a redelivery, or a concurrent copy, fails the constraint and changes
   nothing more (answered as a duplicate); every effect is idempotent, so a delivery
   whose last transaction never committed is applied whole by its redelivery;
4. after the commit, dispatches the due task of each Binding a Run was newly owed to, and
   the outbox rows (``branch.moved``) its ref moves wrote through the branch watches.

A delivery that arrives out of order (an older rename or visibility change after a newer
one) is recorded but does not move anything back. Nothing here is needed for
correctness: a lost delivery is repaired by the next scheduled checkpoint Run.

Why ~630 lines: one delivery's path from signature to effects (lookup of the
Bindings, chunked application, deduplication, out-of-order rules) reads top to bottom
here; each forge's format is its provider's, and watches and owed Runs are their own
modules.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import and_, delete, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from reposync.errors import UsageError
from reposync.git.transport import ZERO_OID
from reposync.lifecycle import Side, Stage
from reposync.metrics import record_webhook
from reposync.models import Binding, IncomingWebhook, utcnow
from reposync.providers import registry
from reposync.providers.base import ChangeHooks, WebhookReader
from reposync.providers.notifications import (
    AccessChange,
    ConnectionAccess,
    Notification,
    Outcome,
    RefMove,
    RepositoryChange,
)
from reposync.providers.registry import parse_locator, provider_class
from reposync.service.context import ServiceContext, Step
from reposync.service.lookups import active_run
from reposync.service.pipeline.leases import database_now
from reposync.service.pipeline.stages.visibility import observe
from reposync.service.runs import mark_cancel_requested
from reposync.service.webhooks import event_runs
from reposync.service.webhooks.outbox import dispatch_deliveries, written_in
from reposync.service.webhooks.watches import FilesOf, files_in, local_git_dir, observe_branch_moves

log = logging.getLogger(__name__)

#: Owed Runs the recovery tick looks at per tick (the due task normally got there first).
TICK_BATCH = 100
#: Bindings one transaction of a delivery's effects locks and changes at most.
APPLY_CHUNK = 200
#: The most repository ids one lookup of the Bindings a delivery concerns names (beyond
#: it, the provider's Bindings are read instead).
LOOKUP_CHUNK = 1000
#: How many repository ids a delivery record keeps of a delivery that lists many.
RECORDED_REPOSITORIES = 100
#: What a change may set that an older delivery must not undo, by the key of the hint
#: that records it (``RepositoryChange.hints``): known by what it sets, never by the
#: forge's name for the event (GitHub's renamed, transferred, publicized, privatized).
_ORDERED = {"locator": "new_locator", "visibility": "visibility"}


@dataclass(frozen=True, slots=True)
class Receipt:
    """What became of one delivery: the API's answer, the hook's log line."""

    delivery_id: str
    event: str
    action: str | None
    outcome: Outcome
    #: Binding id -> what the delivery did to it (``run_requested``, ``coalesced``, ...).
    bindings: dict[int, str] = field(default_factory=dict)


class _Duplicate(Exception):
    """The delivery's key is taken: roll back, answer duplicate."""


def webhook_reader(ctx: ServiceContext, provider: str) -> WebhookReader:
    """The reader of ``provider``'s deliveries, once it may take one: ``RecordNotFound``
    for a forge that sends none reposync reads, ``WebhooksNotConfigured`` until its
    secret is set. An entry point asks before it reads a byte of the body."""
    reader = registry.webhook_reader(provider, ctx.settings)
    reader.secrets(utcnow())
    return reader


def receive_delivery(
    ctx: ServiceContext, provider: str, headers: Mapping[str, str], body: bytes
) -> Receipt:
    """A webhook delivery of the forge ``provider`` as it came: its headers and raw body.

    The forge's reader checks the signature first (``WebhookSignatureInvalid``: nothing
    is read or recorded), then names the delivery from its headers; one seen before is a
    duplicate at the cost of one indexed read (no parse, no validation). Otherwise the
    reader says what changed (``WebhookMalformed``, ``WebhookPayloadInvalid``) and
    ``receive`` acts on it.
    """
    reader = registry.webhook_reader(provider, ctx.settings)
    named = {name.lower(): value for name, value in headers.items()}
    reader.verify(named, body, reader.secrets(utcnow()))
    delivery = reader.delivery(named)
    if _known(ctx, reader.provider, delivery.delivery_id):
        return Receipt(delivery.delivery_id, delivery.event, None, Outcome.DUPLICATE)
    return receive(ctx, reader.notification(delivery, named, body))


def receive_local(
    ctx: ServiceContext,
    locator: str,
    *,
    event: str,
    refs: Sequence[RefMove] = (),
    object_types: Sequence[str] = (),
) -> Receipt:
    """What a local repository's hook reports: a push (``refs``), or an edit of its forge
    objects through the authoring API (``object_types``)."""
    spec = parse_locator(locator)
    assert ctx.open_provider is not None
    provider = ctx.open_provider(spec)
    try:
        info = provider.endpoint()
        git_dir = local_git_dir(provider) if refs else None
    finally:
        provider.close()
    change = RepositoryChange(
        provider=info.provider,
        repository_id=info.repository_id,
        full_name=info.locator,
        event=event,
        refs=tuple(refs),
        object_types=tuple(object_types),
        content_changed=True,
    )
    delivery_id = f"{event}-{uuid.uuid4().hex}"
    return receive(
        ctx,
        Notification(info.provider, delivery_id, event, None, Outcome.ACCEPTED, (change,)),
        files_of=files_in([git_dir]) if git_dir is not None else None,
    )


def receive(
    ctx: ServiceContext, notification: Notification, *, files_of: FilesOf | None = None
) -> Receipt:
    """The one intake function: record ``notification`` once and apply its changes.

    The Bindings it concerns are looked up first, in reads of ``LOOKUP_CHUNK``
    repositories. Its effects are then applied in transactions of at most
    ``APPLY_CHUNK`` Bindings, the last of which records the delivery: an uninstalled App
    listing 100,000 repositories holds no lock for longer than one chunk. Every effect
    is idempotent (a locator set, a notice kept, an owed Run coalesced), so a delivery
    whose last transaction never committed is applied whole by its redelivery, and a
    concurrent copy that loses the race on the record changed nothing the first did not.
    ``files_of`` says what a ref move changed, for ``branch.moved`` (a local repository's
    hook: its Git directory is here).
    """
    effects: dict[int, str] = {}
    requested: list[int] = []
    outbox_rows: list[int] = []
    work = _concerned(ctx, notification) if notification.outcome is Outcome.ACCEPTED else []
    chunks = [work[i : i + APPLY_CHUNK] for i in range(0, len(work), APPLY_CHUNK)] or [[]]
    only = notification.changes[0] if len(notification.changes) == 1 else None
    for chunk in chunks[:-1]:
        with ctx.db.transaction() as session:
            _apply_chunk(ctx, session, None, chunk, database_now(session), effects, requested)
    try:
        with ctx.db.transaction() as session:
            now = database_now(session)
            delivery = IncomingWebhook(
                provider=notification.provider,
                delivery_id=notification.delivery_id,
                event=notification.event,
                action=notification.action,
                repository_id=only.repository_id if only is not None else None,
                full_name=only.full_name if only is not None else None,
                outcome=notification.outcome.value,
                occurred_at=only.occurred_at if only is not None else None,
                hints=_hints(notification),
                received_at=now,
            )
            session.add(delivery)
            try:
                session.flush()
            except IntegrityError:
                raise _Duplicate from None
            _apply_chunk(ctx, session, delivery, chunks[-1], now, effects, requested)
            if only is not None and notification.outcome is Outcome.ACCEPTED:
                _observe_refs(session, only, now, files_of)
            delivery.bindings = {str(k): v for k, v in sorted(effects.items())}
            # branch.moved of the watches the delivery moved (outbox rows, this transaction)
            outbox_rows = written_in(session)
    except _Duplicate:
        record_webhook("inbound", Outcome.DUPLICATE.value)
        return Receipt(
            notification.delivery_id, notification.event, notification.action, Outcome.DUPLICATE
        )
    record_webhook("inbound", notification.outcome.value)
    dispatch_deliveries(ctx, outbox_rows)
    for binding_id in dict.fromkeys(requested):
        ctx.dispatcher.dispatch_event_run(binding_id, ctx.settings.webhook_debounce_seconds)
    return Receipt(
        notification.delivery_id,
        notification.event,
        notification.action,
        notification.outcome,
        effects,
    )


@dataclass(frozen=True, slots=True)
class _Effect:
    """One Binding a delivery concerns, and why: one of its repository changes, or (None)
    its installation-wide access change."""

    binding_id: int
    change: RepositoryChange | None
    #: The connection-wide change (when ``change`` is None): provider and access.
    connection: tuple[str, AccessChange] | None = None


def _hints(notification: Notification) -> dict[str, object]:
    if len(notification.changes) == 1:
        return notification.changes[0].hints
    if notification.changes:
        listed = [c.repository_id for c in notification.changes]
        return {
            "repositories": listed[:RECORDED_REPOSITORIES],
            "repository_count": len(listed),
        }
    return {}


def _known(ctx: ServiceContext, provider: str, delivery_id: str) -> bool:
    with ctx.db.session() as session:
        return (
            session.execute(
                select(IncomingWebhook.id).where(
                    IncomingWebhook.provider == provider,
                    IncomingWebhook.delivery_id == delivery_id,
                )
            ).first()
            is not None
        )


def _concerned(ctx: ServiceContext, notification: Notification) -> list[_Effect]:
    """Every (Binding, change) the notification concerns, in the order of its changes;
    read without locks (the transactions that apply them lock and look again)."""
    effects: list[_Effect] = []
    with ctx.db.session() as session:
        by_repository = _bindings_by_repository(
            session,
            notification.provider,
            list(dict.fromkeys(c.repository_id for c in notification.changes)),
        )
        for change in notification.changes:
            effects.extend(_Effect(b, change) for b in by_repository.get(change.repository_id, ()))
        if notification.connection_access is not None:
            connection = (notification.provider, notification.connection_access.access)
            effects.extend(
                _Effect(b, None, connection)
                for b in _connection_bindings(
                    session, notification.provider, notification.connection_access
                )
            )
    return effects


def _bindings_by_repository(
    session: Session, provider: str, repository_ids: Sequence[str]
) -> dict[str, list[int]]:
    """Repository id -> the Bindings with a side on it, in id order. A delivery naming a
    few repositories asks the sides' indexes for them; one listing more than
    ``LOOKUP_CHUNK`` (an installation's every repository) reads the provider's Bindings
    once instead, so the cost is the smaller of the two lists, never a query per chunk
    of a list of 100,000."""
    found: dict[str, set[int]] = {}
    sides = [
        (Binding.a_provider, Binding.a_repository_id),
        (Binding.b_provider, Binding.b_repository_id),
    ]
    if len(repository_ids) > LOOKUP_CHUNK:
        wanted = set(repository_ids)
        for side_provider, side_repository in sides:
            rows = session.execute(
                select(Binding.id, side_repository)
                .where(side_provider == provider)
                .execution_options(yield_per=LOOKUP_CHUNK)
            )
            for binding_id, repository_id in rows:
                if repository_id in wanted:
                    found.setdefault(repository_id, set()).add(binding_id)
    else:
        for side_provider, side_repository in sides:
            rows = session.execute(
                select(Binding.id, side_repository).where(
                    side_provider == provider, side_repository.in_(repository_ids)
                )
            )
            for binding_id, repository_id in rows:
                found.setdefault(repository_id, set()).add(binding_id)
    return {repository: sorted(ids) for repository, ids in found.items()}


def _has_side(binding: Binding, provider: str, repository_id: str) -> bool:
    return (provider, repository_id) in (
        (binding.a_provider, binding.a_repository_id),
        (binding.b_provider, binding.b_repository_id),
    )


def _side_of(binding: Binding, provider: str, repository_id: str) -> Side:
    if (binding.a_provider, binding.a_repository_id) == (provider, repository_id):
        return Side.A
    return Side.B


def _apply_chunk(
    ctx: ServiceContext,
    session: Session,
    delivery: IncomingWebhook | None,
    chunk: Sequence[_Effect],
    now: datetime,
    effects: dict[int, str],
    requested: list[int],
) -> None:
    """Lock the chunk's Bindings (in id order: no deadlock between two deliveries) and
    apply each effect to its Binding, if it still has the side the change is about."""
    if not chunk:
        return
    ids = sorted({e.binding_id for e in chunk})
    locked = {
        b.id: b
        for b in session.execute(
            select(Binding).where(Binding.id.in_(ids)).order_by(Binding.id).with_for_update()
        ).scalars()
    }
    stale: dict[int, set[str]] = {}  # per change: what a later delivery already set
    for effect in chunk:
        binding = locked.get(effect.binding_id)
        if binding is None:  # deleted since the lookup
            continue
        change = effect.change
        if change is None:
            assert effect.connection is not None
            provider, access = effect.connection
            effects[binding.id] = _connection_access(
                ctx, session, binding, provider, access, now, requested
            )
            continue
        if not _has_side(binding, change.provider, change.repository_id):
            continue
        if id(change) not in stale:
            hints = change.hints
            stale[id(change)] = {
                what
                for what, hint in _ORDERED.items()
                if hint in hints and _superseded(session, delivery, change, hint)
            }
        effects[binding.id] = _apply(
            ctx, session, binding, change, stale[id(change)], now, requested
        )


def _apply(
    ctx: ServiceContext,
    session: Session,
    binding: Binding,
    change: RepositoryChange,
    stale: set[str],
    now: datetime,
    requested: list[int],
) -> str:
    """One change to one Binding; what it did (``locator_updated``, ``run_requested``...)."""
    side = _side_of(binding, change.provider, change.repository_id)
    done: list[str] = []
    if change.new_locator is not None:
        if "locator" in stale:
            done.append("stale_rename_ignored")
        elif binding.side(side)[2] != change.new_locator:
            setattr(binding, f"{side.value}_locator", change.new_locator)
            done.append("locator_updated")
    if change.visibility is not None:
        if "visibility" in stale:
            done.append("stale_visibility_ignored")
        else:
            done.append(_visibility(session, binding, side, change.visibility))
    if change.access is not None:
        binding.access_notice = _notice(change.access, now)
        done.append("access_lost" if change.access.notice else "access_restored")
    if change.content_changed and side is binding.authority and binding.sync_enabled:
        request = event_runs.request_run(
            session, binding, now, ctx.settings.webhook_debounce_seconds
        )
        if request is event_runs.Request.REQUESTED:
            requested.append(binding.id)
        done.append(request.value)
    return ",".join(done) or "nothing_to_do"


def _observe_refs(
    session: Session, change: RepositoryChange, now: datetime, files_of: FilesOf | None = None
) -> None:
    """Branch watches see every ref move a delivery reports, in the delivery's transaction
    (so a redelivery, refused as a duplicate, never moves a cursor twice). A move without
    its object ids (GitHub's ``create``/``delete`` events: the push beside them has them)
    says nothing a cursor could take."""
    moves = [
        (m.ref, m.before or ZERO_OID, m.after or ZERO_OID)
        for m in change.refs
        if m.before is not None or m.after is not None
    ]
    if moves:
        observe_branch_moves(
            session,
            change.provider,
            change.repository_id,
            moves,
            change.occurred_at or now,
            files_of=files_of,
        )


def _superseded(
    session: Session, delivery: IncomingWebhook | None, change: RepositoryChange, hint: str
) -> bool:
    """Whether a delivery of the same repository that set the same thing (its record
    has the ``hint``) and happened later is already recorded."""
    if change.occurred_at is None:
        return False
    query = select(IncomingWebhook.id).where(
        IncomingWebhook.provider == change.provider,
        IncomingWebhook.repository_id == change.repository_id,
        IncomingWebhook.occurred_at > change.occurred_at,
        # ->> on PostgreSQL, json_extract on SQLite: NULL where the record has no such hint
        IncomingWebhook.hints[hint].as_string().is_not(None),
    )
    if delivery is not None:
        query = query.where(IncomingWebhook.id != delivery.id)
    newer = session.execute(query.limit(1)).first()
    return newer is not None


def _visibility(session: Session, binding: Binding, side: Side, visibility: str) -> str:
    """A side's new visibility, judged as the access stage judges it: a standby now more
    public than its authority without confirmation turns sync off, and a Run in flight
    is asked to stop before it writes more."""
    seen = {Side.A: binding.a_visibility, Side.B: binding.b_visibility}
    seen[side] = visibility
    source = binding.authority
    values, refused = observe(binding, source, seen[source], seen[source.other])
    for name, value in values.items():
        setattr(binding, name, value)
    if not refused:
        return "visibility_recorded"
    active = active_run(session, binding.id)
    if active is not None:
        mark_cancel_requested(
            session,
            active,
            f"{side.value} became {visibility}: the standby would be more public than the "
            "authority without confirmation",
        )
    return "sync_disabled_visibility_unconfirmed"


def _notice(access: AccessChange, now: datetime) -> str | None:
    if access.notice is None:
        return None
    return f"{access.notice} ({now:%Y-%m-%d %H:%M} UTC)"[:500]


def _connection_bindings(session: Session, provider: str, change: ConnectionAccess) -> list[int]:
    """A connection's access changed and the delivery names no repository (a GitHub App
    installation uninstalled): every Binding with a side of ``provider`` opened through
    it. A side names its connection by its ``connection_id``; a side without one is
    opened with the provider's configured credentials, so it is concerned only when the
    change is theirs (``configured``). A side through another connection is not: its
    access did not change."""
    connection, configured = change.connection_id, change.configured
    sides = [
        (Binding.a_provider, Binding.a_connection_id),
        (Binding.b_provider, Binding.b_connection_id),
    ]
    return list(
        session.execute(
            select(Binding.id)
            .where(
                or_(
                    *(
                        and_(
                            side_provider == provider,
                            or_(side_connection == connection, side_connection.is_(None))
                            if configured
                            else side_connection == connection,
                        )
                        for side_provider, side_connection in sides
                    )
                )
            )
            .order_by(Binding.id)
        ).scalars()
    )


def _connection_access(
    ctx: ServiceContext,
    session: Session,
    binding: Binding,
    provider: str,
    access: AccessChange,
    now: datetime,
    requested: list[int],
) -> str:
    """A connection-wide access change to one of its Bindings: the notice, and the Run
    owed once access is back."""
    binding.access_notice = _notice(access, now)
    done = "access_lost" if access.notice else "access_restored"
    authority = binding.side(binding.authority)
    if access.notice is None and authority[0] == provider and binding.sync_enabled:
        request = event_runs.request_run(
            session, binding, now, ctx.settings.webhook_debounce_seconds
        )
        if request is event_runs.Request.REQUESTED:
            requested.append(binding.id)
        done += "," + request.value
    return done


# -- the owed Runs ------------------------------------------------------------------------


def start_due_run(ctx: ServiceContext, binding_id: int) -> event_runs.DueOutcome:
    """The due task's body: create the Run a webhook owes the Binding, if it is due."""
    with ctx.db.transaction() as session:
        now = database_now(session)
        binding = session.execute(
            select(Binding).where(Binding.id == binding_id).with_for_update()
        ).scalar_one_or_none()
        if binding is None:
            return event_runs.DueOutcome(event_runs.Due.NOTHING_OWED)
        outcome = event_runs.start_if_due(session, binding, now)
    if outcome.due is event_runs.Due.CREATED:
        assert outcome.run_id is not None
        ctx.dispatcher.dispatch(Step(outcome.run_id, Stage.CHECKING_ACCESS, None))
    elif outcome.due is event_runs.Due.NOT_YET:  # early (another clock): come back when due
        ctx.dispatcher.dispatch_event_run(binding_id, outcome.wait)
    return outcome


def tick(ctx: ServiceContext) -> list[int]:
    """The recovery tick's share: owed Runs whose due task was lost (or is blocked), and
    delivery records past their retention. Returns the Runs it created."""
    with ctx.db.transaction() as session:
        now = database_now(session)
        due = (
            session.execute(
                select(Binding.id)
                .where(Binding.event_run_due_at <= now)
                .order_by(Binding.event_run_due_at)
                .limit(TICK_BATCH)
            )
            .scalars()
            .all()
        )
        retention = timedelta(days=ctx.settings.webhook_delivery_retention_days)
        session.execute(
            delete(IncomingWebhook).where(IncomingWebhook.received_at < now - retention)
        )
    created = []
    for binding_id in due:
        outcome = start_due_run(ctx, binding_id)
        if outcome.due is event_runs.Due.CREATED and outcome.run_id is not None:
            log.info("binding %s: started the webhook Run its lost task owed", binding_id)
            created.append(outcome.run_id)
    return created


# -- local repositories' hooks ----------------------------------------------------------


def install_hooks(
    ctx: ServiceContext, locator: str, command: Sequence[str], environment: Mapping[str, str]
) -> list[str]:
    """Have a repository report its changes: its hooks run ``command`` (which ends in
    ``receive_local``) with ``environment``. Returns the files written."""
    spec = parse_locator(locator)
    refusal = UsageError(
        f"{spec.provider}: repositories report changes through webhooks, not hooks "
        f"reposync installs: point the forge's webhook at "
        f"/api/ext/v1/sync/webhooks/{spec.provider}"
    )
    if not issubclass(provider_class(spec.provider), ChangeHooks):  # before any network
        raise refusal
    assert ctx.open_provider is not None
    provider = ctx.open_provider(spec)
    try:
        if not isinstance(provider, ChangeHooks):
            raise refusal
        return provider.install_change_hooks(command, environment)
    finally:
        provider.close()
