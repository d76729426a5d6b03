"""Authority handoff between two local forges (and from GitHub), the standby's lock, and
the block of an unknown write outcome."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sqlalchemy import select

from reposync.errors import (
    NotAllowedNow,
    PermissionDenied,
    ResultUnknownUnresolved,
    WritesNotStopped,
)
from reposync.models import Binding, Run, RunItem
from reposync.service import handoff as handoff_module
from reposync.service import standby as standby_module
from reposync.service.bindings import SyncRequest, bind, delete_binding
from reposync.service.context import ServiceContext
from reposync.service.embedded import sync
from reposync.service.handoff import handoff
from reposync.service.recovery import recover_run, redispatch_stalled
from reposync.service.runs import create_run
from tests.github_env import embedded_world
from tests.gitrepo import commit_on, generate, refs, set_ref
from tests.integration.forges.test_forge_sync import WHEN, forge
from tests.unknown_writes import plant_unknown


@pytest.fixture
def pair(tmp_path, ctx):
    a = generate(tmp_path / "a.git", commits=5, branches=2, tags=1)
    b = tmp_path / "b.git"
    with forge(a) as f:
        f.create_label("bug", color="d73a4a")
        issue = f.create_issue("Handed over", author="ann", created_at=WHEN)
        f.add_comment("issue", issue, "still here", author="bob", created_at=WHEN)
    request = SyncRequest(f"local:{a}", f"local:{b}")
    assert sync(ctx, request).status == "completed"
    return a, b, bind(ctx, request).id


def binding_row(ctx, binding_id) -> Binding:
    with ctx.db.session() as session:
        binding = session.get(Binding, binding_id)
        assert binding is not None
        return binding


def test_handoff_switches_authority_then_syncs_the_other_way(ctx, pair):
    """Forward full sync, empty reverse dry-run, stable digest, one switch; then B -> A."""
    a, b, binding_id = pair
    outcome = handoff(ctx, binding_id)

    assert outcome.switched, outcome.reason
    binding = binding_row(ctx, binding_id)
    assert (binding.authority_side, binding.authority_epoch, binding.sync_enabled) == (
        "b",
        2,
        False,
    )
    with forge(b) as f:  # the new authority takes edits; the old one is now the standby
        f.create_label("after-handoff", color="0e8a16")
    commit_on(b, "refs/heads/main", "work on the new authority")
    with forge(a) as f, pytest.raises(Exception, match="is the standby of"):
        f.create_label("too-late", color="000000")

    back = sync(ctx, SyncRequest(f"local:{b}", f"local:{a}"))
    assert back.status == "completed", back.report["problems"]
    assert back.source_side == "b"
    assert refs(a)["refs/heads/main"] == refs(b)["refs/heads/main"]
    with forge(a) as f:
        assert {lb.payload["name"] for lb in f.reader.objects_of("label")} == {
            "bug",
            "after-handoff",
        }


def test_a_source_change_during_handoff_aborts_and_keeps_the_authority(ctx, pair, monkeypatch):
    """The authority moves while the handoff checks it: no switch, a clear reason."""
    a, _, binding_id = pair
    freeze = standby_module.freeze

    def freeze_and_change(ctx_, binding, side, *, authority):
        freeze(ctx_, binding, side, authority=authority)
        # right after the freeze, a write that no lock stops (git run on the files)
        commit_on(a, "refs/heads/main", "a push nobody expected")

    monkeypatch.setattr(standby_module, "freeze", freeze_and_change)
    outcome = handoff(ctx, binding_id)

    assert not outcome.switched
    assert "reverse dry-run was not empty" in outcome.reason or "digest" in outcome.reason
    binding = binding_row(ctx, binding_id)
    assert (binding.authority_side, binding.authority_epoch) == ("a", 1)
    with ctx.db.session() as session:
        forward = session.get(Run, outcome.forward_run_id)
        assert forward is not None
        assert forward.report["handoff"]["switched"] is False
    with forge(a) as f:  # thawed again: the authority stays writable
        f.create_label("still-authority", color="000000")


def test_a_duplicate_delivery_of_the_handoff_changes_nothing(ctx, pair):
    """The handoff task delivered twice: the second execution sees the switch and stops,
    neither flipping the authority back nor freezing the new authority."""
    a, b, binding_id = pair
    first = handoff(ctx, binding_id)
    assert first.switched, first.reason

    again = handoff(ctx, binding_id, forward_run_id=first.forward_run_id)

    assert again.switched
    assert again.reason.startswith("already settled")
    binding = binding_row(ctx, binding_id)
    assert (binding.authority_side, binding.authority_epoch) == ("b", 2)
    with forge(b) as f:  # still writable: the duplicate did not mark it standby
        f.create_label("new-authority-edit", color="0e8a16")
    with forge(a) as f, pytest.raises(Exception, match="is the standby of"):
        f.create_label("old-authority-edit", color="000000")


class RecordingDispatcher:
    def __init__(self) -> None:
        self.sent: list[tuple[str, int]] = []

    def dispatch(self, step) -> None:
        self.sent.append(("step", step.run_id))

    def dispatch_handoff(self, binding_id: int, run_id: int) -> None:
        self.sent.append(("handoff", run_id))

    def dispatch_delivery(self, delivery_id: int, delay: float = 0.0) -> None:
        self.sent.append(("delivery", delivery_id))


def test_a_lost_handoff_message_goes_back_to_the_handoff_task(ctx, pair):
    """The tick re-dispatches a never-claimed handoff Run as a handoff, not as a plain Run
    (which would sync forward and never switch)."""
    _, _, binding_id = pair
    dispatcher = RecordingDispatcher()
    ticking = ServiceContext(
        settings=ctx.settings.with_overrides(dispatch_grace=0.0), db=ctx.db, dispatcher=dispatcher
    )
    run = handoff_module.start_handoff(ticking, binding_id)
    dispatcher.sent.clear()  # ... and that message was lost

    assert redispatch_stalled(ticking) == 1
    assert dispatcher.sent == [("handoff", run.id)]


def test_an_unknown_write_blocks_the_binding_until_recovery_proves_it(ctx, pair):
    """No new Run, no handoff while an outcome is unknown; read-back lifts the block."""
    _, b, binding_id = pair
    main = refs(b)["refs/heads/main"]
    run_id = plant_unknown(ctx, binding_id, "refs/heads/main", main)

    with pytest.raises(ResultUnknownUnresolved):
        create_run(ctx, binding_id)
    with pytest.raises(ResultUnknownUnresolved):
        handoff_module.start_handoff(ctx, binding_id)

    result = recover_run(ctx, run_id)

    assert result == {"proven_written": 1, "proven_absent": 0, "still_unknown": 0}
    with ctx.db.session() as session:
        item = session.execute(select(RunItem).where(RunItem.run_id == run_id)).scalar_one()
        run = session.get(Run, run_id)
        assert run is not None
    assert item.state == "completed"
    assert run.status == "completed"
    assert create_run(ctx, binding_id).status == "queued"  # the block is lifted


def test_recovery_proves_absence_on_an_exhaustive_target_and_never_writes(ctx, pair):
    """Not on the target: ``not_applied`` (the next Run plans it); nothing is written."""
    a, b, binding_id = pair
    before = refs(b)
    run_id = plant_unknown(ctx, binding_id, "refs/heads/never", refs(a)["refs/heads/main"])

    result = recover_run(ctx, run_id)

    assert result == {"proven_written": 0, "proven_absent": 1, "still_unknown": 0}
    assert refs(b) == before
    with ctx.db.session() as session:
        item = session.execute(select(RunItem).where(RunItem.run_id == run_id)).scalar_one()
    assert (item.state, item.error_code) == ("failed", "not_applied")


def test_an_active_run_is_not_recovered(ctx, pair):
    """Recovery is for finished Runs; an active one is still the pipeline's."""
    _, _, binding_id = pair
    with pytest.raises(NotAllowedNow, match="still queued"):
        recover_run(ctx, create_run(ctx, binding_id).id)


def test_handoff_with_a_shadow_branch_sees_no_difference(ctx, tmp_path):
    """An open pull request whose head is no branch: the standby gets a real shadow
    branch, the authority only derives it, the reverse dry-run finds them equal, and once
    switched the old authority holds it as a branch: a full audit the new way plans
    nothing (it planned the shadow as a branch to create)."""
    a = generate(tmp_path / "sa.git", commits=3, branches=0, tags=0)
    main = refs(a)["refs/heads/main"]
    head = commit_on(a, "refs/heads/main", "reviewed work")
    set_ref(a, "refs/heads/main", main)  # the head commit is on no branch any more
    with forge(a) as f:
        f.create_pull_request(
            "Orphaned head",
            author="bob",
            created_at=WHEN,
            base_ref="main",
            base_sha=main,
            head_ref="gone",
            head_sha=head,
        )
    b = tmp_path / "sb.git"
    request = SyncRequest(f"local:{a}", f"local:{b}")
    assert sync(ctx, request).status == "completed"
    assert refs(b)["refs/heads/reposync/pr/1/head"] == head
    assert "refs/heads/reposync/pr/1/head" not in refs(a)

    outcome = handoff(ctx, bind(ctx, request).id)

    assert outcome.switched, outcome.reason
    assert refs(a)["refs/heads/reposync/pr/1/head"] == head  # a standby's real branch
    audit = sync(ctx, SyncRequest(f"local:{b}", f"local:{a}", full_audit=True, dry_run=True))
    assert (audit.status, audit.report["planned_actions"]) == ("completed", {})


def plain_push(repository: Path, work: Path, branch: str) -> subprocess.CompletedProcess[str]:
    """What a person does: clone, commit, ``git push`` (no reposync environment)."""
    if not work.exists():
        subprocess.run(["git", "clone", "-q", "-b", "main", str(repository), str(work)], check=True)
    (work / f"{branch}.txt").write_text(branch)
    subprocess.run(["git", "add", "-A"], cwd=work, check=True)
    subprocess.run(
        ["git", "-c", "user.name=P", "-c", "user.email=p@e", "commit", "-qm", branch],
        cwd=work,
        check=True,
    )
    return subprocess.run(
        ["git", "push", "origin", f"HEAD:refs/heads/{branch}"],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("target_hooks", [False, True])
def test_after_a_handoff_the_old_authority_refuses_a_plain_push(ctx, pair, tmp_path, target_hooks):
    """The old authority, a standby now, refuses ``git push`` naming the new authority;
    the new one takes it, and reposync's own push carries it over (with the target's
    hooks run too: reposync passes its own lock)."""
    a, b, binding_id = pair
    assert handoff(ctx, binding_id).switched

    refused = plain_push(a, tmp_path / "wa", "late")
    assert refused.returncode != 0
    assert f"standby of local:{b}" in refused.stderr
    assert "refs/heads/late" not in refs(a)
    assert plain_push(b, tmp_path / "wb", "new-work").returncode == 0

    hooks_ctx = ServiceContext(
        settings=ctx.settings.with_overrides(local_target_hooks=target_hooks), db=ctx.db
    )
    back = sync(hooks_ctx, SyncRequest(f"local:{b}", f"local:{a}"))

    assert back.status == "completed", back.report["problems"]
    assert refs(a)["refs/heads/new-work"] == refs(b)["refs/heads/new-work"]


def test_a_new_binding_locks_its_standby_at_once_and_deleting_it_unlocks(ctx, tmp_path):
    """No Run needed: the Binding's creation freezes a local standby (pushes and forge
    edits); deleting the Binding thaws it. A dry run's Binding freezes nothing yet."""
    a = generate(tmp_path / "a.git", commits=2, branches=0, tags=0)
    b = generate(tmp_path / "b.git", commits=2, branches=0, tags=0)
    dry = bind(ctx, SyncRequest(f"local:{a}", f"local:{b}", dry_run=True))
    assert plain_push(b, tmp_path / "w0", "free").returncode == 0
    delete_binding(ctx, dry.id)

    binding = bind(ctx, SyncRequest(f"local:{a}", f"local:{b}"))

    refused = plain_push(b, tmp_path / "w1", "locked")
    assert f"standby of local:{a}" in refused.stderr
    with forge(b) as f, pytest.raises(PermissionDenied, match=f"standby of local:{a}"):
        f.create_label("late", color="000000")
    delete_binding(ctx, binding.id)
    assert plain_push(b, tmp_path / "w2", "unlocked").returncode == 0
    with forge(b) as f:
        f.create_label("mine again", color="000000")


def test_a_repository_standby_of_two_bindings_stays_locked_while_one_remains(ctx, tmp_path):
    """Deleting one Binding does not thaw a standby another Binding still keeps."""
    a, b, c = (generate(tmp_path / f"{n}.git", commits=2, branches=0, tags=0) for n in "abc")
    first = bind(ctx, SyncRequest(f"local:{a}", f"local:{b}"))
    bind(ctx, SyncRequest(f"local:{c}", f"local:{b}"))

    delete_binding(ctx, first.id)

    refused = plain_push(b, tmp_path / "wb", "locked")
    assert f"standby of local:{c}" in refused.stderr


def test_a_handoff_from_github_needs_the_word_that_writes_stopped(tmp_path, github_fake):
    """GitHub cannot be frozen: its handoff (queued or in-process) is refused until the
    operator confirms writes stopped, before any Run; a local authority needs no word."""
    github_fake.state.create_repo("acme/app", private=True, auto_init=True)
    with embedded_world(github_fake, tmp_path) as (ctx, _):
        request = SyncRequest("github:acme/app", f"local:{tmp_path / 'b.git'}")
        assert sync(ctx, request).status == "completed"
        binding_id = bind(ctx, request).id

        with pytest.raises(WritesNotStopped, match="--confirm-writes-stopped"):
            handoff(ctx, binding_id)
        with pytest.raises(WritesNotStopped, match="github:acme/app"):
            handoff_module.start_handoff(ctx, binding_id)
        with ctx.db.session() as session:
            assert session.execute(select(Run.id).where(Run.kind == "handoff")).first() is None

        assert handoff(ctx, binding_id, writes_stopped=True).switched
        assert handoff(ctx, binding_id).switched  # local -> GitHub: the local side freezes


def test_an_authority_that_cannot_be_locked_is_not_handed_off(ctx, pair):
    """The freeze fails (a user's pre-receive hook and one moved aside earlier both
    exist): the handoff aborts with that reason, touching neither hook."""
    a, _, binding_id = pair
    hooks = a / "hooks"
    (hooks / "pre-receive").write_text("#!/bin/sh\nexit 0\n")
    (hooks / "pre-receive.reposync-chained").write_text("#!/bin/sh\nexit 0\n")

    outcome = handoff(ctx, binding_id)

    assert not outcome.switched
    assert outcome.reason.startswith("the authority could not be frozen")
    assert (outcome.authority_side, outcome.authority_epoch) == ("a", 1)
    assert (hooks / "pre-receive").read_text() == "#!/bin/sh\nexit 0\n"
    with forge(a) as f:  # still the authority: writable
        f.create_label("still-mine", color="000000")
