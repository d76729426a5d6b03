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
import os
import queue
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from reposync.errors import GitTransportError
from reposync.git import procfs
from reposync.git.environment import git_env
from reposync.git.packsize import PackEstimator, advertised_oids, store_bytes
from reposync.git.progress import ProgressReader, TransferProgress, without_progress
from reposync.git.push_report import Refusal, describe, parse_porcelain, refusal, remote_words
from reposync.git.workspace import PushWorkspace, set_alternates

#: Stay far below ARG_MAX (2 MiB here) and MAX_ARG_STRLEN: one group = one git process.
ARGV_BUDGET_BYTES = 512 * 1024

ZERO_OID = "0" * 40

#: Seconds between two checks of a guarded git child (see ``guarded``).
GUARD_INTERVAL = 0.2

_guard: ContextVar[Callable[[], None] | None] = ContextVar("reposync_git_guard", default=None)

log = logging.getLogger(__name__)


@contextmanager
def guarded(check: Callable[[], None]) -> Iterator[None]:
    """Run every git child started in this context under ``check`` (``Lease.check``, or
    a write's guard that also stops for a cancelled Run); the innermost context's.

    ``check`` is called before the child starts and every ``GUARD_INTERVAL`` seconds
    while it runs; when it raises, the child and all its descendants are killed and the
    error propagates. A worker frozen mid-push notices the moment it is continued that
    its lease ran out, and ends its ``receive-pack`` instead of letting it finish (a
    race it can lose: ``reposync.git.locks`` is what keeps a takeover from writing
    under the same locks).
    """
    token = _guard.set(check)
    try:
        yield
    finally:
        _guard.reset(token)


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


@dataclass(slots=True)
class PushOutcome:
    """What ``git push --porcelain`` said, per ref (``reposync.git.push_report``).
    Read-back still decides the truth."""

    groups: int = 0
    accepted: set[str] = field(default_factory=set)
    #: Refs refused because the target's ref is not what the plan expected (ref -> git's
    #: summary): conflicts.
    rejected: dict[str, str] = field(default_factory=dict)
    #: Refs the target refused for its own reasons (a full disk, a declining hook, an
    #: object its fsck refused), ref -> the cause and the target's own words.
    refused: dict[str, str] = field(default_factory=dict)
    #: Refs not pushed because their own pack exceeds the target's limit (ref -> why).
    too_large: dict[str, str] = field(default_factory=dict)
    #: The gate answered no: no ref was pushed (every ref is still to push).
    gate_closed: bool = False


#: What git's receive-pack (GitHub's too) says when a pack is over its size limit.
PACK_TOO_LARGE = "pack exceeds maximum allowed size"


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

    Raises ``GitTransportError`` when git cannot talk to the target at all; refused refs
    are reported, not raised: ``rejected`` (conflicts) apart from ``refused`` (the
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
    gated = _PushGate(workspace.path, gate)
    try:
        gated_receive_pack = gated.receive_pack(receive_pack)
        if gated_receive_pack is None and not gated.wait():
            return PushOutcome(gate_closed=True)
        outer = _guard.get()

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
        with contextlib.suppress(_GateClosed):
            gated.check()
            return outcome
        raise _GateClosed
    except _GateClosed:
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
    target_has: set[str] | None = None
    progress = _Progress(on_progress) if on_progress is not None else None
    for argv_group in _groups(updates, argv_budget, max_refs_per_push):
        groups: list[list[RefUpdate]] = [argv_group]
        if limit is not None:
            if target_has is None:
                target_has = advertised_oids(run_git, target_url, env)
            workspace.stage({u.name: u.new for u in argv_group if u.new is not None})
            split = PackEstimator(workspace.path, run_git, env).split(argv_group, limit, target_has)
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
    return outcome


class _GateClosed(Exception):
    """A gated push's gate answered no: the push is ended gently (SIGTERM, so that the
    target's ``receive-pack`` removes what it received), never completed."""


#: The gate's ``pre-receive`` hook: the refs land only when the answer is yes, and never
#: once the gate, or the reposync process that made it, is gone.
_GATE_HOOK = """#!/bin/sh
# reposync's push gate (reposync.git.transport): exit 0 lets every ref land.
cat >/dev/null
while [ ! -e {open} ]; do
    if [ -e {closed} ] || [ ! -d {gate} ] || ! kill -0 {pid} 2>/dev/null; then
        echo "reposync: push gate closed" >&2
        exit 1
    fi
    sleep 0.02
done
"""


class _PushGate:
    """One gated push's gate: the answer, asked in a thread, becomes a file (``open`` or
    ``closed``) in a directory of its own that the ``pre-receive`` hook watches."""

    def __init__(self, parent: Path, answer: Callable[[], bool]) -> None:
        parent.mkdir(parents=True, exist_ok=True)
        self.path = Path(tempfile.mkdtemp(prefix="reposync-gate-", dir=parent))
        hook = self.path / "hooks" / "pre-receive"
        hook.parent.mkdir()
        hook.write_text(
            _GATE_HOOK.format(
                open=shlex.quote(str(self.path / "open")),
                closed=shlex.quote(str(self.path / "closed")),
                gate=shlex.quote(str(self.path)),
                pid=os.getpid(),
            )
        )
        hook.chmod(0o755)
        self._answered = threading.Event()
        self._yes = False
        self._thread = threading.Thread(
            target=self._ask, args=(answer,), name="push-gate", daemon=True
        )
        self._thread.start()

    def _ask(self, answer: Callable[[], bool]) -> None:
        try:
            self._yes = bool(answer())
        except Exception:  # a thread's error has nowhere else to go: the gate stays shut
            log.exception("a push gate's answer failed")
            self._yes = False
        with contextlib.suppress(OSError):  # removed already: the hook refuses anyway
            (self.path / ("open" if self._yes else "closed")).touch()
        self._answered.set()

    def receive_pack(self, receive_pack: str | None) -> str | None:
        """``receive_pack`` running the gate's hook in place of none; None where the
        target's own hooks are not off (their place is not the gate's to take), or where
        the hook could not run: git passes over a hook it may not execute (a data
        directory on a ``noexec`` mount) and the refs would land unheld."""
        if receive_pack is None or not os.access(self.path / "hooks" / "pre-receive", os.X_OK):
            return None
        words = shlex.split(receive_pack)
        if (
            words[:1] != ["git"]
            or words[-1:] != ["receive-pack"]
            or f"core.hooksPath={os.devnull}" not in words
        ):
            return None
        return shlex.join([*words[:-1], "-c", f"core.hooksPath={self.path / 'hooks'}", words[-1]])

    def wait(self) -> bool:
        """The answer, once given."""
        self._answered.wait()
        return self._yes

    def check(self) -> None:
        """Raise ``_GateClosed`` once the answer is no (a ``guarded`` check)."""
        if self._answered.is_set() and not self._yes:
            raise _GateClosed

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


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
    """
    remaining = list(group)
    while remaining:
        outcome.groups += 1
        parsed, words, too_large = _push_once(
            workspace, target_url, remaining, env, receive_pack, progress
        )
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
            if refusal(name, summary, words) is Refusal.TARGET:
                outcome.refused[name] = describe(summary, words)
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
    own words (``remote_words``), and its "pack too large" refusal when that is why it
    failed. With ``progress``, git reports its progress (``--progress``: stderr is not a
    terminal) and it is read as it comes; it is no part of what the target said."""
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
    if result.returncode != 0 and not parsed:
        raise GitTransportError(f"git push to {target_url} failed: {last_line(said)}")
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


def run_git(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    input_text: str | None = None,
    on_stderr: Callable[[str], None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run git; on any interruption (time limit, signal, a ``guarded`` check, an error
    of ``on_stderr``) kill it and every process it started rather than orphan them.

    ``on_stderr`` is handed each line of git's stderr as git writes it (a ``\r`` ends
    a line, as it ends a progress update), in this thread; the result still holds the
    whole of it.
    """
    guard = _guard.get()
    if guard is not None:
        guard()
    log.debug("%s", " ".join(argv[:6]))
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ref names are bytes, not always UTF-8: kept as surrogates, never a crash.
        errors="surrogateescape",
        env=git_env(env),
    )
    try:
        if on_stderr is None:
            stdout, stderr = _communicate(proc, input_text, guard)
        else:
            stdout, stderr = _stream(proc, input_text, guard, on_stderr)
    except BaseException as error:
        if proc.returncode is None:  # not reaped yet, so its pid is still its own
            gently = isinstance(error, _GateClosed)
            procfs.kill_tree(proc.pid, sig=signal.SIGTERM if gently else signal.SIGKILL)
        proc.wait()
        raise
    result = subprocess.CompletedProcess(list(argv), proc.returncode, stdout, stderr)
    if check and result.returncode != 0:
        raise GitTransportError(f"{' '.join(argv[:4])} failed: {last_line(stderr)}")
    return result


def _communicate(
    proc: subprocess.Popen[str], input_text: str | None, guard: Callable[[], None] | None
) -> tuple[str, str]:
    """``proc.communicate``, calling ``guard`` every ``GUARD_INTERVAL`` seconds.

    With input, the waits go through ``_stream``'s threads: ``Popen.communicate`` cannot
    go on sending input after a timeout (a retry without it never writes the rest nor
    closes stdin; with it, it refuses), so git would wait for the rest of a large input
    forever.
    """
    if input_text and guard is not None:
        return _stream(proc, input_text, guard, lambda _line: None)
    while True:
        try:
            stdout, stderr = proc.communicate(
                input_text, timeout=None if guard is None else GUARD_INTERVAL
            )
        except subprocess.TimeoutExpired:  # nothing is lost: communicate() resumes
            assert guard is not None
            guard()
            continue
        return stdout, stderr


def _stream(
    proc: subprocess.Popen[str],
    input_text: str | None,
    guard: Callable[[], None] | None,
    on_stderr: Callable[[str], None],
) -> tuple[str, str]:
    """Like ``_communicate``, handing each stderr line to ``on_stderr`` as it comes.

    Threads only move bytes (stdin in, stdout and stderr out); the lines are handled and
    ``guard`` is called in this thread, so what either raises kills the child in
    ``run_git`` as any interruption does (the threads then end at the pipes' end).
    """
    assert proc.stdout is not None
    assert proc.stderr is not None
    stdout_pipe, stderr_pipe = proc.stdout, proc.stderr
    lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()
    out: list[str] = []

    def read_stdout() -> None:
        out.append(stdout_pipe.read())

    def read_stderr() -> None:
        try:
            for line in stderr_pipe:  # universal newlines: "\r" ends a line too
                lines.put(line)
        finally:
            lines.put(None)

    def write_stdin() -> None:
        assert proc.stdin is not None
        assert input_text is not None
        with contextlib.suppress(BrokenPipeError, OSError):
            proc.stdin.write(input_text)
            proc.stdin.close()

    workers = [read_stdout, read_stderr, *([write_stdin] if input_text is not None else [])]
    threads = [threading.Thread(target=work, daemon=True) for work in workers]
    for thread in threads:
        thread.start()
    err: list[str] = []
    next_check = time.monotonic() + GUARD_INTERVAL
    while True:
        try:
            line = lines.get(timeout=max(0.0, next_check - time.monotonic()))
        except queue.Empty:
            pass
        else:
            if line is None:
                break
            err.append(line)
            on_stderr(line.rstrip("\n"))
        if guard is not None and time.monotonic() >= next_check:
            guard()
            next_check = time.monotonic() + GUARD_INTERVAL
    while True:  # stderr is closed: git is ending (or closed it and goes on)
        try:
            proc.wait(timeout=GUARD_INTERVAL)
            break
        except subprocess.TimeoutExpired:
            if guard is not None:
                guard()
    for thread in threads:
        thread.join()
    stdout_pipe.close()
    stderr_pipe.close()
    return "".join(out), "".join(err)


def last_line(text: str) -> str:
    """The line of git's stderr that says what went wrong (its first fatal/error line)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("fatal:", "error:")):
            return line
    return lines[-1] if lines else "no output"
