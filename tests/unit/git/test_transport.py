"""Native push with per-ref leases against real repositories."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reposync.errors import GitTransportError, LeaseLost
from reposync.git import procfs
from reposync.git.process import run_git
from reposync.git.progress import TransferProgress
from reposync.git.transport import RefUpdate, _argv_of, _groups, ref_updates_limit
from reposync.git.transport import push as push_from
from reposync.git.workspace import PushWorkspace
from reposync.guards import guarded
from tests.gitrepo import bad_tree_commit, commit_on, generate, init_bare, refs


def push(source: str, target: str, updates: list[RefUpdate], **options: Any):
    """Push from a workspace that borrows ``source``'s objects (as the applier does)."""
    workspace = PushWorkspace(Path(source).parent / "workspace.git", f"{source}/objects")
    return push_from(workspace, target, updates, **options)


@pytest.fixture
def pair(tmp_path):
    source = generate(tmp_path / "src.git", commits=6, branches=3, tags=2)
    target = init_bare(tmp_path / "dst.git")
    return source, target


def test_creates_never_overwrite_what_the_target_has(pair):
    """A create lands when the name is free; an unrelated existing value is refused."""
    source, target = pair
    src = refs(source)
    updates = [RefUpdate(name, oid, None) for name, oid in src.items()]
    outcome = push(str(source), str(target), updates)
    assert outcome.accepted == set(src)
    assert refs(target) == src
    # Already holding the desired value is "up to date", not a conflict ...
    again = push(str(source), str(target), updates[:1])
    assert again.accepted == {updates[0].name}
    # ... but creating over a value that is not an ancestor of the new one is refused.
    unrelated = commit_on(target, "refs/heads/branch-00000", "standby-only work")
    clash = push(
        str(source), str(target), [RefUpdate(updates[0].name, src["refs/heads/main"], None)]
    )
    assert set(clash.rejected) == {updates[0].name}
    assert refs(target)["refs/heads/branch-00000"] == unrelated
    tag = "refs/tags/v00001"
    tag_clash = push(str(source), str(target), [RefUpdate(tag, src["refs/heads/main"], None)])
    assert set(tag_clash.rejected) == {tag}
    assert refs(target)[tag] == src[tag]


def _synced_then_two_moved(source: Path, target: Path) -> list[RefUpdate]:
    """Every ref pushed, then ``branch-00001`` and ``branch-00002`` moved on the source:
    their updates, leased on the values pushed."""
    src = refs(source)
    push(str(source), str(target), [RefUpdate(n, o, None) for n, o in src.items()])
    names = ("refs/heads/branch-00001", "refs/heads/branch-00002")
    return [
        RefUpdate(name, commit_on(source, name, f"authority edit of {name}"), src[name])
        for name in names
    ]


def test_a_stale_lease_refuses_its_ref_and_the_rest_lands_in_a_second_atomic_push(pair):
    """One ref moved on the target: git refuses the atomic group; the moved ref is
    rejected for its stale lease and the ref refused only with it is pushed again, alone
    (it was rejected with the group)."""
    source, target = pair
    updates = _synced_then_two_moved(source, target)
    human = commit_on(target, "refs/heads/branch-00001", "standby edit")
    outcome = push(str(source), str(target), updates)
    moved2 = updates[1].new
    assert set(outcome.rejected) == {"refs/heads/branch-00001"}
    assert "stale info" in outcome.rejected["refs/heads/branch-00001"]
    assert (outcome.accepted, outcome.groups) == ({"refs/heads/branch-00002"}, 2)
    assert refs(target)["refs/heads/branch-00001"] == human
    assert refs(target)["refs/heads/branch-00002"] == moved2


def test_a_ref_whose_lock_another_git_holds_is_locked_and_the_rest_lands(pair):
    """A ref's lock file on the target (another git's, or one a killed git left): that
    ref is ``locked``, to push again later, and the refs refused only with it in the
    atomic push land in a second push."""
    source, target = pair
    updates = _synced_then_two_moved(source, target)
    lock = target / "refs" / "heads" / "branch-00001.lock"
    lock.write_text("0" * 40 + "\n")
    outcome = push(str(source), str(target), updates)
    assert set(outcome.locked) == {"refs/heads/branch-00001"}
    assert "File exists" in outcome.locked["refs/heads/branch-00001"]
    assert (outcome.refused, outcome.rejected) == ({}, {})
    assert (outcome.accepted, outcome.groups) == ({"refs/heads/branch-00002"}, 2)
    assert refs(target)["refs/heads/branch-00001"] == updates[0].expected_old


def _hook(target: Path, name: str, script: str) -> None:
    hook = target / "hooks" / name
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\n" + script)
    hook.chmod(0o755)


def test_a_target_that_refuses_every_ref_is_asked_once(pair):
    """A refusal of every ref for the target's own reason (a declining pre-receive hook)
    is no conflict and no reason to push again: each ref is refused, in one push, with
    the cause and the hook's own words."""
    source, target = pair
    _hook(target, "pre-receive", "echo 'frozen for maintenance' >&2\nexit 1\n")
    src = refs(source)
    outcome = push(str(source), str(target), [RefUpdate(n, o, None) for n, o in src.items()])
    assert set(outcome.refused) == set(src)
    assert outcome.rejected == {}
    for why in outcome.refused.values():
        assert why.startswith("a hook on the target declined it")
        assert "pre-receive hook declined" in why
        assert "frozen for maintenance" in why
    assert (outcome.accepted, outcome.groups, refs(target)) == (set(), 1, {})


@pytest.mark.parametrize("progress", [False, True], ids=["quiet", "with-progress"])
def test_an_update_hook_declining_one_ref_holds_back_only_that_ref(pair, progress):
    """An update hook refuses one ref of an atomic push: receive-pack refuses the others
    as "atomic push failure"; they are pushed again without it and land; the declined
    ref is the target's refusal, not a conflict (its words quoted, never git's progress
    lines when progress is read)."""
    source, target = pair
    heard: list[TransferProgress] = []
    options = {"on_progress": heard.append} if progress else {}
    _hook(
        target,
        "update",
        'if [ "$1" = refs/heads/branch-00001 ]; then echo "branch-00001 is frozen" >&2; '
        "exit 1; fi\n",
    )
    src = refs(source)
    outcome = push(
        str(source), str(target), [RefUpdate(n, o, None) for n, o in src.items()], **options
    )
    assert set(outcome.refused) == {"refs/heads/branch-00001"}
    assert "branch-00001 is frozen" in outcome.refused["refs/heads/branch-00001"]
    assert "%" not in outcome.refused["refs/heads/branch-00001"]
    assert bool(heard) is progress
    assert outcome.rejected == {}
    assert outcome.accepted == set(src) - {"refs/heads/branch-00001"}
    assert outcome.groups == 2
    assert refs(target) == {n: o for n, o in src.items() if n != "refs/heads/branch-00001"}


def test_an_object_the_target_s_fsck_refuses_is_its_refusal_with_its_words(pair):
    """receive.fsckObjects on the target and a tree with a duplicate entry: git reports
    an unpacker error; the ref is refused (not a conflict), quoting the fsck message."""
    source, target = pair
    subprocess.run(
        ["git", "--git-dir", str(target), "config", "receive.fsckObjects", "true"], check=True
    )
    bad = bad_tree_commit(source, "refs/heads/bad")
    outcome = push(str(source), str(target), [RefUpdate("refs/heads/bad", bad, None)])
    (why,) = outcome.refused.values()
    assert why.startswith("the target's object check (fsck) refused an object")
    assert "unpacker error" in why
    assert "duplicateEntries" in why
    assert outcome.rejected == {}
    assert refs(target) == {}


def test_delete_with_lease(pair):
    """A delete carries the value it expects to remove."""
    source, target = pair
    src = refs(source)
    push(str(source), str(target), [RefUpdate(n, o, None) for n, o in src.items()])
    name = "refs/tags/v00001"
    outcome = push(str(source), str(target), [RefUpdate(name, None, src[name])])
    assert outcome.accepted == {name}
    assert name not in refs(target)


def test_the_source_repository_is_never_written(pair):
    """Pushing stages refs in a workspace; the source's refs and config stay as they were."""
    source, target = pair
    before = (refs(source), (source / "config").read_text())
    push(str(source), str(target), [RefUpdate(n, o, None) for n, o in refs(source).items()])
    assert (refs(source), (source / "config").read_text()) == before


def test_unreachable_target_is_a_transport_error(pair, tmp_path):
    """git cannot talk to the target at all: GitTransportError with git's own words."""
    source, _ = pair
    with pytest.raises(GitTransportError, match="does not appear to be a git repository"):
        push(
            str(source),
            str(tmp_path / "nowhere"),
            [RefUpdate("refs/heads/x", refs(source)["refs/heads/main"], None)],
        )


def test_groups_respect_the_argument_budget():
    """Thousands of leased updates and deletes are split into several git invocations
    under the budget; creates, staged in the workspace, put nothing on the command line
    and are never split for it."""
    oid, old = "a" * 40, "b" * 40
    updates = [RefUpdate(f"refs/heads/b{n:05d}", oid, old) for n in range(1500)]
    updates += [RefUpdate(f"refs/heads/d{n:05d}", None, old) for n in range(1500)]
    groups = list(_groups(updates, budget=50_000))
    assert sum(len(g) for g in groups) == 3000
    assert len(groups) > 1
    assert all(sum(len(a) + 9 for u in g for a in _argv_of(u)) <= 50_000 for g in groups)

    creates = [RefUpdate(f"refs/heads/c{n:05d}", oid, None) for n in range(3000)]
    assert [len(g) for g in _groups(creates, budget=50_000)] == [3000]


def alive(pid: int) -> bool:
    """Running or stopped; a zombie (killed, not reaped yet) is not alive."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in "ZX"


def lease_lost_once(ready):
    """A guard that raises, as ``Lease.check`` does, once ``ready()`` holds."""

    def check() -> None:
        if ready():
            raise LeaseLost("lease generation 1 of binding 1 lost")

    return check


@pytest.mark.skipif(not procfs.available(), reason="needs Linux /proc")
def test_a_guarded_git_dies_with_every_process_it_started(tmp_path):
    """When the guard raises, the child and its descendants are killed (a grandchild
    would otherwise be re-parented to init and live on)."""
    marker = tmp_path / "grandchild"
    argv = ["sh", "-c", f'sleep 60 & echo $! > "{marker}"; wait']
    with pytest.raises(LeaseLost), guarded(lease_lost_once(marker.exists)):
        run_git(argv)
    grandchild = int(marker.read_text())
    deadline = time.monotonic() + 5
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not alive(grandchild)


@pytest.mark.skipif(not procfs.available(), reason="needs Linux /proc")
def test_a_tree_ended_gently_lets_each_process_clean_up(tmp_path):
    """``kill_tree(sig=SIGTERM)`` reaches every process of the tree, stopped while it was
    gathered and continued after, so each one's handler runs (a receive-pack removes its
    quarantine so)."""
    cleaned = tmp_path / "cleaned"
    ready = tmp_path / "ready"
    child = subprocess.Popen(
        [
            "sh",
            "-c",
            f'sh -c \'trap "touch {cleaned}; exit 0" TERM; touch {ready}; '
            "while :; do sleep 0.05; done' & wait",
        ]
    )
    deadline = time.monotonic() + 5
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    procfs.kill_tree(child.pid, sig=signal.SIGTERM)
    child.wait(timeout=5)
    while not cleaned.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert cleaned.exists()


def test_a_lost_guard_starts_no_git(tmp_path):
    with pytest.raises(LeaseLost), guarded(lease_lost_once(lambda: True)):
        run_git(["git", "init", "-q", "--bare", str(tmp_path / "never.git")])
    assert not (tmp_path / "never.git").exists()


@pytest.mark.skipif(not procfs.available(), reason="needs Linux /proc")
def test_a_push_whose_lease_is_lost_mid_transaction_never_completes(pair, tmp_path):
    """The chaos finding's other half: over the local transport ``git push`` runs a
    ``receive-pack`` that holds the target's ref locks; killing ``git push`` alone let
    it commit the refs after the lease was gone. The guard kills the whole tree."""
    source, target = pair
    holding = tmp_path / "receive-pack-holds-the-locks"
    hook = target / "hooks" / "reference-transaction"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = prepared ]; then\n'
        f'  cat >/dev/null; echo $PPID > "{holding}"; sleep 1\n'
        "else\n"
        "  cat >/dev/null\n"
        "fi\n"
    )
    hook.chmod(0o755)
    updates = [RefUpdate(name, oid, None) for name, oid in refs(source).items()]
    with pytest.raises(LeaseLost), guarded(lease_lost_once(holding.exists)):
        push(str(source), str(target), updates)
    receive_pack = int(holding.read_text())
    time.sleep(1.5)  # the hook would be done by now, and its transaction committed
    assert not alive(receive_pack)
    assert refs(target) == {}
    # What it leaves are locks whose writer is gone: ``remove_stale_locks``' business.
    assert list((target / "refs").rglob("*.lock"))


def test_a_push_reports_git_s_progress_while_it_runs(tmp_path):
    """``on_progress`` hears git's phases as they happen, in order; the objects written
    go up, and the bytes sent add up over the groups of one call (never back to 0)."""
    source = generate(tmp_path / "src.git", commits=400, branches=20, tags=20, file_bytes=400)
    target = init_bare(tmp_path / "dst.git")
    heard: list[TransferProgress] = []
    updates = [RefUpdate(name, oid, None) for name, oid in refs(source).items()]
    outcome = push(
        str(source), str(target), updates, on_progress=heard.append, max_refs_per_push=20
    )
    assert outcome.accepted == set(refs(source))
    assert outcome.groups == 3
    assert refs(target) == refs(source)
    writing = [u for u in heard if u.phase == "writing objects"]
    assert len(writing) > 1
    assert any(b.objects_done > a.objects_done for a, b in itertools.pairwise(writing))
    sent = [u.bytes_done for u in heard]
    assert sent == sorted(sent)
    assert sent[-1] > 0


@pytest.mark.skipif(not procfs.available(), reason="needs Linux /proc")
def test_a_push_read_as_it_runs_still_dies_whole_when_its_guard_raises(pair, tmp_path):
    """Reading git's progress does not loosen the guard: a lost lease mid-transaction
    kills receive-pack too, and no ref lands."""
    source, target = pair
    holding = tmp_path / "receive-pack-holds-the-locks"
    hook = target / "hooks" / "reference-transaction"
    hook.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = prepared ]; then\n'
        f'  cat >/dev/null; echo $PPID > "{holding}"; sleep 1\n'
        "else\n"
        "  cat >/dev/null\n"
        "fi\n"
    )
    hook.chmod(0o755)
    updates = [RefUpdate(name, oid, None) for name, oid in refs(source).items()]
    heard: list[TransferProgress] = []
    with pytest.raises(LeaseLost), guarded(lease_lost_once(holding.exists)):
        push(str(source), str(target), updates, on_progress=heard.append)
    receive_pack = int(holding.read_text())
    time.sleep(1.5)  # the hook would be done by now, and its transaction committed
    assert not alive(receive_pack)
    assert refs(target) == {}
    assert heard


def test_an_error_of_the_stderr_handler_kills_git(tmp_path):
    """A handler that raises (a progress write that finds its lease gone) stops git
    like a guard does: nothing of the command lands."""

    class Stop(Exception):
        pass

    def handler(line: str) -> None:
        raise Stop(line)

    argv = ["sh", "-c", f'echo started >&2; sleep 1; touch "{tmp_path / "finished"}"']
    with pytest.raises(Stop):
        run_git(argv, on_stderr=handler)
    time.sleep(1.5)
    assert not (tmp_path / "finished").exists()


def test_run_git_hands_stderr_lines_over_as_they_come_and_keeps_them_all():
    """Lines split at ``\\r`` as at ``\\n``, stdin and stdout as without a handler."""
    heard: list[str] = []
    script = "printf 'a 1%%\\ra 2%%\\rdone\\n' >&2; cat"
    result = run_git(["sh", "-c", script], input_text="in\n" * 10000, on_stderr=heard.append)
    assert heard == ["a 1%", "a 2%", "done"]
    assert result.stdout == "in\n" * 10000
    assert result.stderr == "a 1%\na 2%\ndone\n"


NO_HOOKS = f"git -c core.hooksPath={os.devnull} receive-pack"


def _answer_after(seconds: float, answer: bool, asked: list[float]) -> Callable[[], bool]:
    def gate() -> bool:
        asked.append(time.monotonic())
        time.sleep(seconds)
        return answer

    return gate


def test_a_gated_push_sends_while_the_gate_thinks_and_lands_once_it_says_yes(pair, tmp_path):
    """Into a local target whose hooks are off, the pack goes over while the gate is
    still thinking; the refs land after its yes, not before."""
    source, target = pair
    reached = tmp_path / "pack-received"
    asked: list[float] = []
    updates = [RefUpdate(name, oid, None) for name, oid in refs(source).items()]

    def gate() -> bool:
        asked.append(time.monotonic())
        deadline = time.monotonic() + 10
        # The push's objects are in the target's quarantine before the gate answers.
        while not [f for f in target.glob("objects/*incoming-*/**/*") if f.is_file()]:
            assert time.monotonic() < deadline, "the push did not run beside the gate"
            time.sleep(0.01)
        assert refs(target) == {}
        reached.touch()
        return True

    outcome = push(str(source), str(target), updates, receive_pack=NO_HOOKS, gate=gate)
    assert reached.exists()
    assert not outcome.gate_closed
    assert outcome.accepted == set(refs(source))
    assert refs(target) == refs(source)
    assert not list((source.parent / "workspace.git").glob("reposync-gate-*"))


@pytest.mark.parametrize("answer_after", [0.0, 1.5])
def test_a_gate_that_says_no_lands_no_ref_and_leaves_nothing_behind(pair, answer_after):
    """A no, early (mid-transfer) or late (the pack received), lands no ref; the push is
    ended gently, so the target keeps none of its objects (no quarantine left)."""
    source, target = pair
    asked: list[float] = []
    updates = [RefUpdate(name, oid, None) for name, oid in refs(source).items()]

    outcome = push(
        str(source),
        str(target),
        updates,
        receive_pack=NO_HOOKS,
        gate=_answer_after(answer_after, False, asked),
    )
    assert outcome.gate_closed
    assert not outcome.accepted
    assert refs(target) == {}
    assert not list(target.glob("objects/*incoming-*"))
    assert not list(target.glob("objects/pack/*.pack"))
    # Nothing is refused either: every ref is still to push, and then lands.
    assert not outcome.rejected
    assert not outcome.refused
    again = push(str(source), str(target), updates, receive_pack=NO_HOOKS)
    assert again.accepted == set(refs(source))


def test_a_gate_that_fails_is_a_no(pair):
    """An answer that raises keeps the refs out, as a no does."""
    source, target = pair
    updates = [RefUpdate(name, oid, None) for name, oid in refs(source).items()]

    def gate() -> bool:
        raise RuntimeError("the proof broke")

    outcome = push(str(source), str(target), updates, receive_pack=NO_HOOKS, gate=gate)
    assert outcome.gate_closed
    assert refs(target) == {}


@pytest.mark.parametrize("receive_pack", [None, "git receive-pack"])
def test_where_the_target_s_hooks_run_the_push_waits_for_the_gate_first(pair, receive_pack):
    """The gate never takes the place of the target's own hooks: with them on (or a
    remote's receive-pack) git starts only after the answer, and a no starts nothing."""
    source, target = pair
    declined = target / "hooks" / "pre-receive"
    declined.parent.mkdir(exist_ok=True)
    declined.write_text("#!/bin/sh\ncat >/dev/null\nexit 0\n")
    declined.chmod(0o755)
    asked: list[float] = []
    updates = [RefUpdate(name, oid, None) for name, oid in refs(source).items()]
    started: list[str] = []

    def spy(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        started.append(" ".join(argv))
        return run_git(argv, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("reposync.git.transport.run_git", spy)
        closed = push(
            str(source),
            str(target),
            updates,
            receive_pack=receive_pack,
            gate=_answer_after(0.2, False, asked),
        )
        assert closed.gate_closed
        assert started == []
        opened = push(
            str(source),
            str(target),
            updates,
            receive_pack=receive_pack,
            gate=_answer_after(0.2, True, asked),
        )
    assert opened.accepted == set(refs(source))
    assert all("core.hooksPath" not in argv for argv in started)


def test_where_the_gate_s_hook_cannot_run_the_push_waits_for_the_gate_first(pair, monkeypatch):
    """git passes over a hook it may not execute (a data directory on a ``noexec``
    mount), so the refs would land unheld: there the push starts only after the answer,
    and a no starts nothing."""
    import reposync.git.push_gate as push_gate
    import reposync.git.transport as transport

    source, target = pair
    updates = [RefUpdate(name, oid, None) for name, oid in refs(source).items()]
    started: list[str] = []
    real_access, real_run_git = os.access, run_git

    def no_exec(path: Any, mode: int, **kwargs: Any) -> bool:
        if str(path).endswith("pre-receive") and mode & os.X_OK:
            return False
        return real_access(path, mode, **kwargs)

    def spy(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        started.append(" ".join(argv))
        return real_run_git(argv, **kwargs)

    monkeypatch.setattr(push_gate.os, "access", no_exec)
    monkeypatch.setattr(transport, "run_git", spy)
    closed = push(
        str(source), str(target), updates, receive_pack=NO_HOOKS, gate=_answer_after(0.2, False, [])
    )
    assert closed.gate_closed
    assert started == []
    assert refs(target) == {}
    opened = push(
        str(source), str(target), updates, receive_pack=NO_HOOKS, gate=_answer_after(0.2, True, [])
    )
    assert opened.accepted == set(refs(source))
    assert all("reposync-gate-" not in argv for argv in started)


@pytest.mark.timeout(60)  # the bug this guards against was a hang, not a slow answer
def test_a_guarded_git_gets_the_whole_of_a_large_input(tmp_path: Path, monkeypatch):
    """A guarded git whose input outlasts the guard's interval still reads all of it and
    ends. ``Popen.communicate`` cannot go on sending input after a timeout (a retry
    without the input never writes the rest, nor closes stdin): a 1M-object bootstrap's
    peel of its refs' commits waited for the rest of its input forever."""
    import reposync.git.process as process

    monkeypatch.setattr(process, "GUARD_INTERVAL", 0.001)
    repo = init_bare(tmp_path / "repo.git")
    names = [f"{n:040x}" for n in range(200_000)]  # ~8 MB: far past a pipe's buffer
    checks = 0

    def check() -> None:
        nonlocal checks
        checks += 1

    with guarded(check):
        result = run_git(
            ["git", "--git-dir", str(repo), "cat-file", "--batch-check"],
            input_text="".join(f"{name}\n" for name in names),
        )
    assert result.stdout.splitlines() == [f"{name} missing" for name in names]
    assert checks > 1  # the guard was asked while git read


def test_the_ref_updates_setting_replaces_the_forge_limit_up_or_down():
    """0 keeps the forge's own limit (None: it has none); a setting replaces it either way:
    GitHub's is not published, and GitHub Enterprise sets its own."""
    assert ref_updates_limit(500, 0) == 500
    assert ref_updates_limit(500, 5000) == 5000
    assert ref_updates_limit(500, 100) == 100
    assert ref_updates_limit(None, 0) is None
    assert ref_updates_limit(None, 300) == 300
