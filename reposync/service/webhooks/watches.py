"""Branch watches: a user's watch on one branch, and the revision cursor each one keeps.

A watch names a repository as a Binding's side does (resolved once to the provider's
immutable repository id; the locator follows renames) and a branch. Every movement the
service learns of (a push delivered by a webhook, the local forge's post-receive hook)
is handed to ``observe_branch_moves`` in the transaction that records the delivery: it
moves the cursor of each matching watch by the rules of ``reposync.sync.cursors`` (never
backwards; late and replayed deliveries change nothing) and emits ``branch.moved`` for
each watch whose cursor moved, through the outbox, in the same transaction.

A delivery may be lost; a Run reads the source anyway. Where a Run read each watched
branch of its source is handed to ``observe_sightings`` in the Run's finalizing
transaction (``stages/watched_branches.py``): the same cursors, by ``cursors.sight``, and
the same event, so a delivery and a Run seeing one movement announce it once, in either
order. ``branch.moved`` lists the files the movement changed (``git/diffs.py``) when a
repository on this machine holds both revisions (``files_of``).

Who sees a watch: admins every one, a member the watches it made, while it holds a grant
on the repository (``queries.watch_visible``). Operations here take no user; the entry
point authorizes first (``authorization.authorize_watch`` / ``authorize_repository``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import and_, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from reposync.errors import NotARepository, RecordNotFound, RepositoryNotFound, UsageError
from reposync.git.diffs import CHANGES, MAX_CHANGED_FILES, ChangedFiles, changed_files
from reposync.models import Binding, BranchWatch, utcnow
from reposync.providers.base import EndpointInfo, GitRemoteSource, Provider
from reposync.providers.registry import parse_locator
from reposync.service.context import ServiceContext
from reposync.service.webhooks import outbox
from reposync.sync.canonical import BRANCH_PREFIX, ref_name_problem
from reposync.sync.cursors import Cursor, Move, Sighting, advance, moved, sight

#: The event a moved cursor emits (a subscription's event name).
BRANCH_MOVED = outbox.BRANCH_MOVED
#: Longest branch name a watch takes (the column; far above any branch seen in practice).
MAX_BRANCH = 255

#: ``(ref, before, after)`` as a push reports it: ``refs/heads/main``, two commit ids.
RefMove = tuple[str, str, str]
#: The files a movement ``before -> after`` changed, when a repository here can say.
FilesOf = Callable[[str, str], ChangedFiles | None]
#: What ``branch.moved`` says of each file (``files[].change``), and how many at most.
CHANGE_KINDS = tuple(dict.fromkeys(CHANGES.values()))
FILES_LISTED = MAX_CHANGED_FILES
#: How reposync learned of a movement (``branch.moved``'s ``observed_by``).
Observer = Literal["delivery", "run"]


def local_git_dir(provider: Provider) -> str | None:
    """The Git directory of a repository on this machine (None: a remote one), where
    native git can compare two of its revisions."""
    if not isinstance(provider, GitRemoteSource):
        return None
    remote = provider.git_remote(write=False)
    return remote.url if remote.is_local else None


def files_in(git_dirs: Sequence[str]) -> FilesOf:
    """``FilesOf`` asking each repository in turn (the first that holds both revisions
    answers), remembering each answer: the watches of one branch share a movement."""
    known: dict[tuple[str, str], ChangedFiles | None] = {}

    def files_of(before: str, after: str) -> ChangedFiles | None:
        if (before, after) not in known:
            found = None
            for git_dir in git_dirs:
                found = changed_files(git_dir, before, after)
                if found is not None:
                    break
            known[(before, after)] = found
        return known[(before, after)]

    return files_of


def branch_name(value: str) -> str:
    """``main`` from ``main`` or ``refs/heads/main``; refused unless Git could name it."""
    name = value.strip().removeprefix(BRANCH_PREFIX)
    if not name or len(name) > MAX_BRANCH or ref_name_problem(BRANCH_PREFIX + name):
        raise UsageError(f"{value!r} is not a branch name Git accepts (at most {MAX_BRANCH})")
    return name


def resolve_repository(ctx: ServiceContext, locator: str) -> EndpointInfo:
    """The repository ``locator`` leads to now, with its immutable id (as ``bind`` finds it).

    A repository that is not there answers as one the caller may not see
    (``RepositoryNotFound.or_hidden``): the API must not tell the two apart.
    """
    spec = parse_locator(locator)
    assert ctx.open_provider is not None
    try:
        provider = ctx.open_provider(spec)
    except (RepositoryNotFound, NotARepository):
        raise RepositoryNotFound.or_hidden(spec.display) from None
    try:
        return provider.endpoint()
    finally:
        provider.close()


def create_watch(
    ctx: ServiceContext, repository: EndpointInfo, branch: str, *, created_by: int
) -> tuple[BranchWatch, bool]:
    """The user's watch on ``branch`` of ``repository``, made now (True) or found (False).

    Finding it refreshes its locator: the repository may have been renamed since.
    """
    name = branch_name(branch)
    for _ in range(2):  # a concurrent creator may win the unique constraint once
        with ctx.db.transaction() as session:
            watch = session.execute(
                select(BranchWatch).where(
                    BranchWatch.created_by == created_by,
                    BranchWatch.provider == repository.provider,
                    BranchWatch.repository_id == repository.repository_id,
                    BranchWatch.branch == name,
                )
            ).scalar_one_or_none()
            if watch is not None:
                if watch.locator != repository.locator:
                    watch.locator = repository.locator
                    session.flush()
                session.expunge(watch)
                return watch, False
            try:
                with session.begin_nested():
                    watch = BranchWatch(
                        provider=repository.provider,
                        repository_id=repository.repository_id,
                        locator=repository.locator,
                        branch=name,
                        created_by=created_by,
                    )
                    session.add(watch)
                    session.flush()
            except IntegrityError:
                continue
            session.expunge(watch)
            return watch, True
    raise RuntimeError("watch creation raced twice")  # pragma: no cover


def delete_watch(ctx: ServiceContext, watch_id: int) -> None:
    with ctx.db.transaction() as session:
        watch = session.get(BranchWatch, watch_id)
        if watch is None:
            raise RecordNotFound(f"watch {watch_id} does not exist")
        session.delete(watch)


def cursor_of(watch: BranchWatch) -> Cursor:
    return Cursor(
        watch.before,
        watch.after,
        watch.moved_at,
        tuple((str(before), str(after)) for before, after in watch.tied or ()),
    )


def observe_branch_moves(
    session: Session,
    provider: str,
    repository_id: str,
    moves: Sequence[RefMove],
    occurred_at: datetime,
    *,
    now: datetime | None = None,
    files_of: FilesOf | None = None,
) -> list[int]:
    """Move the cursors of the watches on these refs; returns the ids of those that moved.

    Called in the transaction that records the delivery (and it locks the watches' rows
    until then, so two deliveries for one branch take turns). ``occurred_at`` is when
    the movements happened at the forge (timezone-aware); refs other than branches are
    not watched. Each watch whose cursor moved emits ``branch.moved`` in this
    transaction; a delivery older than a cursor changes nothing and emits nothing.
    ``files_of`` lists what a movement changed (a local repository's hook has it).
    """
    if occurred_at.tzinfo is None:
        raise ValueError("occurred_at must be timezone-aware")
    by_branch: dict[str, list[Move]] = {}
    for ref, before, after in moves:
        if ref.startswith(BRANCH_PREFIX):
            name = ref[len(BRANCH_PREFIX) :]
            by_branch.setdefault(name, []).append(Move(before, after, occurred_at))
    if not by_branch:
        return []

    def follow(watch: BranchWatch, cursor: Cursor) -> Cursor:
        for move in by_branch[watch.branch]:
            cursor = advance(cursor, move)
        return cursor

    return _move_cursors(
        session,
        provider,
        repository_id,
        sorted(by_branch),
        follow,
        observed_at=now or utcnow(),
        observer=("delivery", None),
        files_of=files_of,
    )


def observe_sightings(
    session: Session,
    provider: str,
    repository_id: str,
    sightings: Mapping[str, Sighting],
    *,
    run_id: int,
    now: datetime | None = None,
    files_of: FilesOf | None = None,
) -> list[int]:
    """Move the cursors of the watches on branches a Run read (``sightings``: branch
    name -> where it stood); returns the ids of those that moved.

    Called in the Run's finalizing transaction, locking the watches' rows as a delivery
    does; each watch whose cursor moved emits ``branch.moved`` (``observed_by: run``).
    """
    if not sightings:
        return []
    return _move_cursors(
        session,
        provider,
        repository_id,
        sorted(sightings),
        lambda watch, cursor: sight(cursor, sightings[watch.branch]),
        observed_at=now or utcnow(),
        observer=("run", run_id),
        files_of=files_of,
    )


def _move_cursors(
    session: Session,
    provider: str,
    repository_id: str,
    branches: Sequence[str],
    step: Callable[[BranchWatch, Cursor], Cursor],
    *,
    observed_at: datetime,
    observer: tuple[Observer, int | None],
    files_of: FilesOf | None,
) -> list[int]:
    """Each watch on ``branches``, locked in id order, takes ``step``'s cursor; one that
    shows another movement emits ``branch.moved``."""
    watches = (
        session.execute(
            select(BranchWatch)
            .where(
                BranchWatch.provider == provider,
                BranchWatch.repository_id == repository_id,
                BranchWatch.branch.in_(branches),
            )
            .order_by(BranchWatch.id)
            .with_for_update()
        )
        .scalars()
        .all()
    )
    moved_ids: list[int] = []
    bindings: list[int] | None = None
    for watch in watches:
        old = cursor_of(watch)
        new = step(watch, old)
        if new is old:
            continue
        watch.tied = [list(pair) for pair in new.tied]
        watch.moved_at = new.moved_at  # a later time of the movement it shows, at least
        if not moved(old, new):
            continue
        watch.before, watch.after = new.before, new.after
        watch.observed_at = observed_at
        watch.movements += 1
        moved_ids.append(watch.id)
        if bindings is None:
            bindings = authority_bindings(session, provider, repository_id)
        files = files_of(new.before, new.after) if files_of and new.before and new.after else None
        _notify(
            session,
            BRANCH_MOVED,
            moved_payload(watch, bindings, files=files, observer=observer),
            binding_id=None,
            branch=watch.branch,
            repositories=[(provider, repository_id)],
        )
    session.flush()
    return moved_ids


def authority_bindings(session: Session, provider: str, repository_id: str) -> list[int]:
    """The Bindings whose authority is this repository (where a movement will be synced)."""

    def side(name: str) -> Any:
        return and_(
            Binding.authority_side == name,
            getattr(Binding, f"{name}_provider") == provider,
            getattr(Binding, f"{name}_repository_id") == repository_id,
        )

    rows = session.execute(select(Binding.id).where(or_(side("a"), side("b"))).order_by(Binding.id))
    return list(rows.scalars())


def moved_payload(
    watch: BranchWatch,
    binding_ids: list[int],
    *,
    files: ChangedFiles | None = None,
    observer: tuple[Observer, int | None] = ("delivery", None),
) -> dict[str, Any]:
    """What ``branch.moved`` says: the watch, where its branch went, when, who saw it, and
    the files it changed (``files`` null: no repository here holds both revisions, or
    the branch was created or deleted)."""
    assert watch.moved_at is not None
    assert watch.observed_at is not None
    return {
        "watch_id": watch.id,
        "repository": {
            "provider": watch.provider,
            "repository_id": watch.repository_id,
            "locator": watch.locator,
        },
        "branch": watch.branch,
        "ref": BRANCH_PREFIX + watch.branch,
        "before": watch.before,
        "after": watch.after,
        "moved_at": watch.moved_at.isoformat(),
        "observed_at": watch.observed_at.isoformat(),
        "binding_ids": binding_ids,
        "observed_by": observer[0],
        "run_id": observer[1],
        "files": None if files is None else [f.to_dict() for f in files.files],
        "files_truncated": files is not None and files.truncated,
    }


def _notify(
    session: Session,
    event: str,
    payload: dict[str, Any],
    *,
    binding_id: int | None,
    branch: str | None,
    repositories: Sequence[tuple[str, str]] = (),
) -> list[int]:
    """Hand an event to the outbox, in the caller's transaction (its delivery rows commit
    with the cursor that moved; the caller's commit is followed by the tick's dispatch,
    or by ``outbox.dispatch_deliveries`` with the ids).

    ``branch.moved`` concerns a repository, not one Binding: ``binding_id`` is None, the
    repository goes in ``repositories`` (subscriptions filtered on a Binding of it, and
    members with a grant on it, receive it), and the payload lists the Bindings whose
    authority the repository is (``binding_ids``).
    """
    return outbox.notify(
        session, event, payload, binding_id=binding_id, branch=branch, repositories=repositories
    )
