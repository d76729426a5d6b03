"""Native Git transport: ``git push`` with per-ref expectations, in atomic groups.

Git data never goes through Python: the ``git`` binary negotiates and packs objects
exactly as ``git push --mirror`` would. Every update and delete carries
``--force-with-lease`` with the value the plan expects on the target, so a push is a
compare-and-swap on the remote: a stale worker, or a human who moved a branch on the
standby, makes the push fail instead of overwriting anything.

When the step running git is interrupted, or (inside ``guarded``) its lease is lost or
its Run is cancelled, the git child is killed together with everything it started. Over
the local transport that includes the ``receive-pack`` holding the target's ref locks,
which would otherwise complete the push after another execution took over.

A forge answering a push of several refs with a server error (GitHub's answer to more
ref updates than it takes at once is an HTTP 500, whose words git does not show) gets
the same refs again in pushes half as large, down to one ref; the pushes after it in the
same call start at the smaller size (``PushOutcome.refs_per_push``). Only a push of one
ref that fails so is the transport's failure. A push answered HTTP 413 (the request too
large for the forge or a proxy before it) is no transport failure either: its refs fail
``push_too_large``, naming the setting that cuts pushes by size.

A push reports its progress as git does (``--progress``, ``reposync.git.progress``),
read from its stderr as it is written.

A push can be gated (``push(gate=...)``): its refs land only once the gate answered yes
(the LFS proof that no pointer needs moving first). Into a local target whose hooks are
off, git sends the pack while the gate thinks: the target's ``receive-pack`` runs only
the gate's ``pre-receive`` hook, which holds the refs after the pack and its
connectivity check until the answer. Elsewhere (a remote's receive-pack is not ours to
configure) the push waits for the answer before it starts.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from reposync.errors import GitCredentialsRefused, GitRateLimited, GitTransportError
from reposync.git.packsize import PackEstimator, advertised_oids, store_bytes
from reposync.git.process import git_failure, last_line, run_git
from reposync.git.progress import ProgressReader, TransferProgress, without_progress
from reposync.git.push_gate import GateClosed, PushGate
from reposync.git.push_report import (
    PushOutcome,
    Refusal,
    describe,
    parse_porcelain,
    refusal,
    remote_words,
)
from reposync.git.workspace import PushWorkspace, set_alternates
from reposync.guards import current_guard, guarded

#: Stay far below ARG_MAX (2 MiB here) and MAX_ARG_STRLEN: one group = one git process.
ARGV_BUDGET_BYTES = 512 * 1024

ZERO_OID = "0" * 40

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RefUpdate:
    name: str
    #: Object id to set, or ``None`` to delete the ref.
    new: str | None
    #: Object id the target must hold now, or ``None`` when it must not exist.
    expected_old: str | None

    def argv(self) -> tuple[str, str]:
        """(lease, refspec). Never a "+" refspec: forcing overrides the lease (measured
        with git 2.39); a matching explicit lease alone allows a non-fast-forward update."""
        lease = f"--force-with-lease={self.name}:{self.expected_old or ''}"
        refspec = f"{self.new}:{self.name}" if self.new is not None else f":{self.name}"
        return lease, refspec


#: What git's receive-pack (GitHub's too) says when a pack is over its size limit.
PACK_TOO_LARGE = "pack exceeds maximum allowed size"

#: Why the refs of a push the forge answered HTTP 413 did not land (``_push_once``).
_WHY_REQUEST_TOO_LARGE = (
    "HTTP 413 from the target or a proxy before it: its request was larger than it takes; "
    "set REPOSYNC_GIT_MAX_PUSH_PACK_BYTES below that size and pushes are cut to stay under it"
)

#: What git says when the forge answered the push's request with an HTTP error, so that
#: no porcelain line follows: a server error (GitHub refusing more ref updates than it
#: takes per push: "RPC failed; HTTP 500 curl 22 ..."), or the request too large for the
#: forge or a proxy before it (nginx's ``client_max_body_size``).
_HTTP_5XX = re.compile(r"RPC failed; HTTP 5\d\d")
_HTTP_413 = re.compile(r"RPC failed; HTTP 413")


class _ServerError(Exception):
    """A push the forge answered with a server error: ``_push_group`` halves it."""


def ref_updates_limit(declared: int | None, configured: int) -> int | None:
    """The most ref updates one push to a target carries: the forge's own limit
    (``declared``, None when it has none), replaced by the
    ``git_max_ref_updates_per_push`` setting when that is > 0 (GitHub's limit is not
    published, and GitHub Enterprise sets its own)."""
    return configured if configured > 0 else declared


def _groups(
    updates: Sequence[RefUpdate], budget: int, max_refs: int | None = None
) -> Iterator[list[RefUpdate]]:
    """``updates`` cut, in their order, into groups one ``git push`` can take: within the
    argv budget and, with ``max_refs`` (the target's limit), at most that many refs."""
    group: list[RefUpdate] = []
    size = 0
    for update in updates:
        cost = sum(len(arg) + 1 + 8 for arg in _argv_of(update))
        if group and (size + cost > budget or (max_refs is not None and len(group) >= max_refs)):
            yield group
            group, size = [], 0
        group.append(update)
        size += cost
    if group:
        yield group


def _argv_of(update: RefUpdate) -> list[str]:
    """What ``update`` adds to a push's command line (``_push_once``): its lease, and a
    delete's refspec. A create or update goes through the workspace's staged refs, not
    the argv: counting its refspec cut a 5,000-ref bootstrap batch into two pushes
    (4,443 + 557 refs), each paying a push's fixed costs again."""
    lease, _ = update.argv()
    return [
        *([lease] if update.expected_old is not None else []),
        *([f":{update.name}"] if update.new is None else []),
    ]


#: What a staged workspace pushes: every branch and tag it holds, never forced.
STAGED_REFSPECS = ("refs/heads/*:refs/heads/*", "refs/tags/*:refs/tags/*")


def push(
    workspace: PushWorkspace,
    target_url: str,
    updates: Sequence[RefUpdate],
    *,
    env: Mapping[str, str] | None = None,
    argv_budget: int = ARGV_BUDGET_BYTES,
    receive_pack: str | None = None,
    max_pack_bytes: int | None = None,
    max_refs_per_push: int | None = None,
    on_push: Callable[[int, int], None] | None = None,
    on_progress: Callable[[TransferProgress], None] | None = None,
    gate: Callable[[], bool] | None = None,
) -> PushOutcome:
    """Push ``updates`` to ``target_url`` from a staged workspace, in atomic groups.

    The groups follow the order of ``updates`` and hold at most ``max_refs_per_push``
    refs (the target's limit, e.g. GitHub's 500), so one applying batch of thousands of
    refs is several pushes under one source read, one LFS scan and one read-back: the
    per-batch costs are paid once, not once per 500 refs (measured: ~0.1 s per batch on
    a 3,001-ref bootstrap to the GitHub test server).

    Expectations are enforced on the target, per ref:

    * an update or delete carries ``--force-with-lease=<ref>:<expected>``: it lands only
      if the target still holds exactly what the plan read (and may then rewrite history);
    * a create is pushed unforced: Git refuses it when the name exists with anything that
      is not an ancestor of the new value (tags: with anything at all), so nothing on the
      target is ever lost. Not leasing creates keeps a bootstrap as fast as
      ``push --mirror`` (5,000 leases cost git 6 s of matching).

    With ``max_pack_bytes`` (the target's pack-size limit) a group whose pack would be
    larger is split by history (``reposync.git.packsize``); a ref whose own pack is larger
    is not pushed and lands in ``too_large``, as do the refs of a group the target refused
    for its size all the same.

    ``on_push`` is told, after each group, how many of the refs have been pushed (or
    refused) and how many there are: a batch of several pushes says how far it is.
    ``on_progress`` is told, while each push runs, what git reports of it
    (``reposync.git.progress``: phase, objects, bytes); the bytes add up over the
    groups of one call, so they only ever grow.

    ``gate`` (called once, in a thread of its own) decides whether any ref may land: no
    ref does before it answered, none when it answers no (or raises). Into a local target
    whose hooks are off (``receive_pack`` sets ``core.hooksPath`` to the null device)
    the push runs while it answers; an early no ends the push (SIGTERM: the target drops
    what it received). Elsewhere the push starts once it answered yes. After a no,
    ``gate_closed`` is set and nothing else: every ref is still to push.

    Raises ``GitTransportError`` when git cannot talk to the target at all, and
    ``GitCredentialsRefused`` when the target refused its credentials or
    ``GitRateLimited`` when it answered 429, each naming the refs no push carried past
    it (``unsent_refs``: they did not land, whatever the pushes before did). Refused
    refs are reported, not raised: ``rejected`` (conflicts) apart from ``refused`` (the
    target's own reasons).
    """
    if gate is None:
        return _push(
            workspace,
            target_url,
            updates,
            env,
            argv_budget,
            receive_pack,
            max_pack_bytes,
            max_refs_per_push,
            on_push,
            on_progress,
        )
    gated = PushGate(workspace.path, gate)
    try:
        gated_receive_pack = gated.receive_pack(receive_pack)
        if gated_receive_pack is None and not gated.wait():
            return PushOutcome(gate_closed=True)
        outer = current_guard()

        def check() -> None:
            if outer is not None:
                outer()
            gated.check()

        with guarded(check):
            outcome = _push(
                workspace,
                target_url,
                updates,
                env,
                argv_budget,
                gated_receive_pack or receive_pack,
                max_pack_bytes,
                max_refs_per_push,
                on_push,
                on_progress,
            )
        # A push that ended before the guard heard the no: its hook refused every ref.
        with contextlib.suppress(GateClosed):
            gated.check()
            return outcome
        raise GateClosed
    except GateClosed:
        log.info("push to %s stopped: its gate answered no", target_url)
        return PushOutcome(gate_closed=True)
    finally:
        gated.remove()


def _push(
    workspace: PushWorkspace,
    target_url: str,
    updates: Sequence[RefUpdate],
    env: Mapping[str, str] | None,
    argv_budget: int,
    receive_pack: str | None,
    max_pack_bytes: int | None,
    max_refs_per_push: int | None,
    on_push: Callable[[int, int], None] | None,
    on_progress: Callable[[TransferProgress], None] | None,
) -> PushOutcome:
    """``push`` without a gate."""
    outcome = PushOutcome()
    limit = max_pack_bytes
    if limit is not None:
        workspace.prepare()
        if store_bytes([str(workspace.path / "objects"), workspace.objects_dir]) <= limit:
            limit = None  # no pack can be larger than everything there is
    try:
        target_has: set[str] | None = None
        progress = _Progress(on_progress) if on_progress is not None else None
        for argv_group in _groups(updates, argv_budget, max_refs_per_push):
            groups: list[list[RefUpdate]] = [argv_group]
            if limit is not None:
                if target_has is None:
                    target_has = advertised_oids(run_git, target_url, env)
                workspace.stage({u.name: u.new for u in argv_group if u.new is not None})
                split = PackEstimator(workspace.path, run_git, env).split(
                    argv_group, limit, target_has
                )
                groups = split.groups
                for name, size in split.too_large.items():
                    outcome.too_large[name] = (
                        f"its own pack is about {size:,} bytes, over the target's limit of "
                        f"{limit:,} bytes for one push"
                    )
            for group in groups:
                _push_group(workspace, target_url, group, outcome, env, receive_pack, progress)
                if limit is not None and target_has is not None:
                    target_has.update(u.new for u in group if u.new and u.name in outcome.accepted)
                if on_push is not None:
                    settled = (
                        len(outcome.accepted)
                        + len(outcome.rejected)
                        + len(outcome.refused)
                        + len(outcome.too_large)
                    )
                    on_push(settled, len(updates))
    except (GitCredentialsRefused, GitRateLimited) as refused:
        # Refused before any ref of its request was written: pushes before it may have
        # landed (read-back proves them); the rest did not.
        unsent = frozenset(u.name for u in updates if u.name not in outcome.sent)
        raise type(refused)(refused.message, unsent_refs=unsent) from None
    return outcome


class _Progress:
    """One ``push`` call's progress: each git process read by its own reader, the bytes
    of the pushes before it added (a batch of several pushes never goes back to 0)."""

    def __init__(self, report: Callable[[TransferProgress], None]) -> None:
        self._report = report
        self._sent_before = 0
        self._sent = 0

    def reader(self) -> Callable[[str], None]:
        """A line handler for the next git process."""
        self._sent_before += self._sent
        self._sent = 0
        reader = ProgressReader()

        def heard(line: str) -> None:
            update = reader.feed(line)
            if update is not None:
                self._sent = update.bytes_done
                total = self._sent_before + update.bytes_done
                self._report(
                    TransferProgress(update.phase, update.objects_done, update.objects_total, total)
                )

        return heard


def _push_group(
    workspace: PushWorkspace,
    target_url: str,
    group: Sequence[RefUpdate],
    outcome: PushOutcome,
    env: Mapping[str, str] | None,
    receive_pack: str | None,
    progress: _Progress | None = None,
) -> None:
    """An atomic ``git push`` of ``group``; what it said, per ref, into ``outcome``.

    An atomic push that git refuses for some refs (a lease that no longer holds, a
    create whose name is taken, an update hook declining one ref) refuses the others
    with them ("atomic push failed", "atomic push failure", or not a word about them).
    Those others are pushed again, atomically, without the refs refused for their own
    reasons: one moved branch is a conflict, not the failure of the 499 refs beside it.
    Each retry has fewer refs, so this ends.

    A push the forge answered with a server error is pushed again in two halves (each
    under the same leases), and what follows in this call in pushes no larger
    (``outcome.refs_per_push``); a push of one ref that fails so raises
    ``GitTransportError``. Whatever a refused push may have landed is harmless: a create
    of the same value is "up to date", and read-back decides the truth.
    """
    cap = outcome.refs_per_push
    if cap is not None and len(group) > cap:
        for start in range(0, len(group), cap):
            _push_group(
                workspace,
                target_url,
                group[start : start + cap],
                outcome,
                env,
                receive_pack,
                progress,
            )
        return
    remaining = list(group)
    while remaining:
        outcome.groups += 1
        try:
            parsed, words, too_large = _push_once(
                workspace, target_url, remaining, env, receive_pack, progress
            )
        except _ServerError as error:
            outcome.sent.update(u.name for u in remaining)  # the forge may have written
            if len(remaining) == 1:
                raise GitTransportError(str(error)) from None
            outcome.refused_sizes.append(len(remaining))
            outcome.refs_per_push = (len(remaining) + 1) // 2
            outcome.server_error = str(error)
            log.warning(
                "a push of %d refs: %s; its refs go again in pushes of at most %d",
                len(remaining),
                error,
                outcome.refs_per_push,
            )
            _push_group(workspace, target_url, remaining, outcome, env, receive_pack, progress)
            return
        outcome.sent.update(u.name for u in remaining)
        held_back: list[RefUpdate] = []
        own: dict[str, str] = {}
        for update in remaining:
            ok, summary = parsed.get(update.name, (False, ""))
            if ok:
                outcome.accepted.add(update.name)
            elif too_large is not None:
                outcome.too_large[update.name] = (
                    f"the target refused the push of {len(remaining)} ref(s) as too large "
                    f"({too_large})"
                )
            elif not summary or refusal(update.name, summary, words) is Refusal.SIBLING:
                held_back.append(update)
            else:
                own[update.name] = summary
        if len(held_back) == len(remaining):  # none refused for its own sake: no retry
            # What git said stands; a ref it said nothing about is read-back's to judge.
            own = {u.name: parsed[u.name][1] for u in held_back if u.name in parsed}
            held_back = []
        for name, summary in own.items():
            kind = refusal(name, summary, words)
            if kind is Refusal.TARGET:
                outcome.refused[name] = describe(summary, words)
            elif kind is Refusal.LOCKED:
                outcome.locked[name] = describe(summary, words)
            else:
                outcome.rejected[name] = summary
        remaining = held_back


def _push_once(
    workspace: PushWorkspace,
    target_url: str,
    group: Sequence[RefUpdate],
    env: Mapping[str, str] | None,
    receive_pack: str | None,
    progress: _Progress | None = None,
) -> tuple[dict[str, tuple[bool, str]], list[str], str | None]:
    """One ``git push --atomic`` of ``group``: its porcelain lines per ref, the target's
    own words (``remote_words``), and its "too large" refusal when that is why it failed
    (the target's "pack exceeds maximum allowed size", or an HTTP 413). With
    ``progress``, git reports its progress (``--progress``: stderr is not a terminal) and
    it is read as it comes; it is no part of what the target said."""
    workspace.stage({u.name: u.new for u in group if u.new is not None})
    leases = [u.argv()[0] for u in group if u.expected_old is not None]
    deletes = [f":{u.name}" for u in group if u.new is None]  # as ``_argv_of`` counts
    argv = [
        "git",
        "-C",
        str(workspace.path),
        "push",
        "--porcelain",
        "--atomic",
        "--no-verify",
        *(["--progress"] if progress is not None else []),
        *([f"--receive-pack={receive_pack}"] if receive_pack else []),
        *leases,
        target_url,
        *STAGED_REFSPECS,
        *deletes,
    ]
    started = time.monotonic()
    result = run_git(
        argv, env=env, check=False, on_stderr=progress.reader() if progress is not None else None
    )
    parsed = parse_porcelain(result.stdout)
    said = without_progress(result.stderr)
    log.info(
        "git push to %s: %d ref(s), %d accepted, in %.2fs",
        target_url,
        len(group),
        sum(ok for ok, _ in parsed.values()),
        time.monotonic() - started,
    )
    if result.returncode != 0 and not parsed:  # no ref says how it fared
        if _HTTP_413.search(said):
            # Every ref of the push is too large together: each fails ``push_too_large``
            # with what to set, rather than the same request retried as a transport error.
            return {}, remote_words(said), _WHY_REQUEST_TOO_LARGE
        if _HTTP_5XX.search(said):
            raise _ServerError(f"git push to {target_url} failed: {last_line(said)}")
        raise git_failure(f"git push to {target_url}", said)
    too_large = next((line.strip() for line in said.splitlines() if PACK_TOO_LARGE in line), None)
    return parsed, remote_words(said), too_large


def fetch_refs(
    mirror: Path,
    url: str,
    wanted: Mapping[str, str | None],
    *,
    env: Mapping[str, str] | None = None,
    borrow: str | None = None,
) -> FetchResult:
    """Bring into ``mirror`` exactly the objects of ``wanted`` (ref -> object id, None to
    forget the ref), from the remote at ``url``: O(change), never a fetch of every branch.

    Object ids the mirror already sees cost nothing; the others are fetched by id in one
    ``git fetch`` (no ref listing), negotiated against what the mirror knows, so only the
    history they add crosses the wire.

    * ``borrow`` (the object store of a target on this machine): the mirror is a small
      transfer repository. It borrows the target's objects (``objects/info/alternates``),
      so what the target holds is never fetched and the target's refs are the fetch's
      "haves": a one-commit change fetches one commit even on a worker that never synced
      this Binding before. It keeps no refs (they could name objects only the target has,
      which the target may drop); its objects only have to live until the push.
    * without: the mirror's refs are set to ``wanted``, what the next fetch negotiates
      with and what keeps the objects alive.

    The object ids are the ones the plan read and the applier has just re-read on the
    source; one that vanished since is not fetched (git says so, and the batch is tried
    again), and a ref planned from a stale copy is never pushed.

    Fetched packs are always kept whole (``fetch.unpackLimit=1``): a fetch killed half way
    leaves no loose tip without its history for the next check to trust. A transfer
    repository's objects are only needed until the push: ``discard_objects`` after it.
    """
    if not (mirror / "HEAD").exists():
        mirror.parent.mkdir(parents=True, exist_ok=True)
        run_git(["git", "init", "-q", "--bare", str(mirror)], env=env)
    set_alternates(mirror, [borrow] if borrow else [])
    oids = sorted({oid for oid in wanted.values() if oid})
    missing = _missing_objects(mirror, oids, env)
    before = stored_objects(mirror, env) if missing else 0
    if missing:
        run_git(
            [
                "git",
                "--git-dir",
                str(mirror),
                "-c",
                "fetch.unpackLimit=1",
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-write-fetch-head",
                "--stdin",
                url,
            ],
            env=env,
            input_text="".join(f"{oid}\n" for oid in missing),
        )
    commands = "".join(
        f"update {name} {oid}\n" if oid else f"delete {name}\n"
        for name, oid in sorted(wanted.items())
    )
    if commands and borrow is None:
        run_git(
            ["git", "--git-dir", str(mirror), "update-ref", "--stdin"],
            env=env,
            input_text=commands,
        )
    received = stored_objects(mirror, env) - before if missing else 0
    return FetchResult(objects_dir=mirror / "objects", fetched=len(missing), received=received)


@dataclass(frozen=True, slots=True)
class FetchResult:
    objects_dir: Path
    #: Object ids fetched (the others were in the mirror already).
    fetched: int
    #: Git objects the fetch brought (commits, trees, blobs, tags): what crossed the wire.
    received: int = 0


def stored_objects(git_dir: Path, env: Mapping[str, str] | None = None) -> int:
    """Objects stored in ``git_dir`` itself, loose and packed (not its alternates')."""
    out = run_git(["git", "--git-dir", str(git_dir), "count-objects", "-v"], env=env).stdout
    counts = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    return int(counts.get("count", 0)) + int(counts.get("in-pack", 0))


def discard_objects(git_dir: Path) -> None:
    """Empty a transfer repository's own object store (its alternates stay).

    Once a batch is pushed into the local target the transfer repository borrows from,
    what it fetched lives in the target; kept, it would grow by every byte ever synced (a
    second copy of the repository after a bootstrap). A later batch that needs an object
    again (its push was refused and is retried) fetches it again, negotiated against the
    target's refs: bounded by that batch.
    """
    objects = git_dir / "objects"
    for directory in [objects / "pack", *objects.glob("[0-9a-f][0-9a-f]")]:
        if directory.is_dir():
            for path in directory.iterdir():
                path.unlink(missing_ok=True)


def _missing_objects(
    git_dir: Path, oids: Sequence[str], env: Mapping[str, str] | None
) -> list[str]:
    if not oids:
        return []
    result = run_git(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch-check=%(objectname)"],
        env=env,
        input_text="".join(f"{oid}\n" for oid in oids),
    )
    return [line.split()[0] for line in result.stdout.splitlines() if line.endswith(" missing")]
