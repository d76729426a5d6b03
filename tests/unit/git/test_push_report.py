"""Reading ``git push --porcelain``: a conflict, the target's refusal, or a sibling.

The outputs are git 2.39's, recorded from real pushes (a full tmpfs, hooks, a target
with ``receive.fsckObjects``, a lease that no longer holds).
"""

from __future__ import annotations

import pytest

from reposync.git.push_report import (
    MAX_REMOTE_LINE_CHARS,
    MAX_REMOTE_LINES,
    Refusal,
    describe,
    parse_porcelain,
    refusal,
    remote_words,
)

FULL_DISK = (
    "remote: fatal: unable to write loose object file: No space left on device        \n"
    "error: remote unpack failed: unpack-objects abnormal exit\n"
    "error: failed to push some refs to '/srv/dst.git'\n"
)
FULL_DISK_PACK = (
    "remote: fatal: write error: No space left on device        \n"
    "error: remote unpack failed: index-pack abnormal exit\n"
)
FSCK = (
    "remote: error: object 59a23ae8: duplicateEntries: contains duplicate file entries   \n"
    "remote: fatal: fsck error in packed object        \n"
    "error: remote unpack failed: unpack-objects abnormal exit\n"
)
HOOK = "remote: this standby is locked: push to the authority        \n"
MOVED = "remote: error: cannot lock ref 'refs/heads/a': is at 1111111 but expected 2222222   \n"
#: git 2.39's receive-pack when another git process holds (or a killed one left) the
#: ref's lock file.
LOCKED = (
    "remote: error: cannot lock ref 'refs/heads/a': Unable to create "
    "'/srv/dst.git/./refs/heads/a.lock': File exists.        \n"
    "remote: \n"
    "remote: Another git process seems to be running in this repository, e.g.        \n"
    "error: failed to push some refs to '/srv/dst.git'\n"
)


def test_parse_porcelain():
    """Accepted and rejected lines are told apart by their flag."""
    out = (
        "To /tmp/x\n"
        "*\tabc:refs/heads/a\t[new branch]\n"
        "!\tdef:refs/heads/b\t[rejected] (stale info)\n"
        "Done\n"
    )
    assert parse_porcelain(out) == {
        "refs/heads/a": (True, "[new branch]"),
        "refs/heads/b": (False, "[rejected] (stale info)"),
    }


@pytest.mark.parametrize(
    ("summary", "stderr", "expected"),
    [
        ("[rejected] (stale info)", "", Refusal.CONFLICT),
        ("[rejected] (non-fast-forward)", "", Refusal.CONFLICT),
        ("[rejected] (already exists)", "", Refusal.CONFLICT),
        ("[rejected] (fetch first)", "", Refusal.CONFLICT),
        ("[rejected] (atomic push failed)", "", Refusal.SIBLING),
        ("[remote rejected] (atomic push failure)", HOOK, Refusal.SIBLING),
        ("[remote rejected] (unpacker error)", FULL_DISK, Refusal.TARGET),
        ("[remote rejected] (unpacker error)", FULL_DISK_PACK, Refusal.TARGET),
        ("[remote rejected] (unpacker error)", FSCK, Refusal.TARGET),
        ("[remote rejected] (pre-receive hook declined)", HOOK, Refusal.TARGET),
        ("[remote rejected] (hook declined)", HOOK, Refusal.TARGET),
        ("[remote rejected] (protected branch hook declined)", "", Refusal.TARGET),
        ("[remote rejected] (failed to update ref)", FULL_DISK, Refusal.TARGET),
        ("[remote rejected] (deletion prohibited)", "", Refusal.TARGET),
        ("[remote failure] (remote failed to report status)", "", Refusal.TARGET),
        ("[remote rejected] (atomic transaction failed)", MOVED, Refusal.CONFLICT),
    ],
)
def test_who_refused_is_read_from_the_summary_and_the_target_s_words(summary, stderr, expected):
    """``[rejected]`` is git's own ref check (a conflict); ``[remote rejected]`` is the
    target's, unless its words say this very ref moved; siblings are told apart."""
    assert refusal("refs/heads/a", summary, remote_words(stderr)) is expected


def test_an_atomic_transaction_failed_for_another_ref_s_move_is_a_sibling():
    """receive-pack names the ref that moved; the others of its atomic push were only
    refused with it (pushed again), and without such words it is the target's."""
    summary = "[remote rejected] (atomic transaction failed)"
    assert refusal("refs/heads/b", summary, remote_words(MOVED)) is Refusal.SIBLING
    assert refusal("refs/heads/b", summary, remote_words(FULL_DISK)) is Refusal.TARGET


@pytest.mark.parametrize(
    ("summary", "stderr", "cause"),
    [
        ("[remote rejected] (unpacker error)", FULL_DISK, "the target's disk is full"),
        ("[remote rejected] (unpacker error)", FULL_DISK_PACK, "the target's disk is full"),
        (
            "[remote rejected] (unpacker error)",
            FSCK,
            "the target's object check (fsck) refused an object",
        ),
        ("[remote rejected] (pre-receive hook declined)", HOOK, "a hook on the target declined"),
        (
            "[remote rejected] (unpacker error)",
            "remote: fatal: cannot write: Disk quota exceeded\n",
            "the target is over its disk quota",
        ),
        (
            "[remote rejected] (unpacker error)",
            "error: remote unpack failed: unable to create temporary object directory\n",
            "the target could not store the objects sent",
        ),
        ("[remote rejected] (deletion prohibited)", "", "the target refused it"),
    ],
)
def test_a_refusal_names_its_cause_then_the_target_s_own_words(summary, stderr, cause):
    """The cause first, then git's summary, then what the target said, without git's
    own closing line about failing to push."""
    text = describe(summary, remote_words(stderr))
    assert text.startswith(cause)
    assert summary in text
    for line in remote_words(stderr):
        assert line in text
    assert "failed to push some refs" not in text


def test_the_target_s_words_are_printable_and_bounded():
    """Terminal escapes, control characters and undecodable bytes are dropped; long
    lines are cut, and only the first lines are quoted (the rest counted)."""
    stderr = (
        "remote: \x1b[31mred\x1b[0m alert\x07\n"
        "remote: bytes \udcff\udcfe here\n"
        f"remote: {'x' * 1000}\n"
        + "".join(f"remote: line {n}\n" for n in range(20))
        + "remote:        \n"
        "To /srv/dst.git\n"
    )
    words = remote_words(stderr)
    assert words[:2] == ["red alert", "bytes  here"]
    assert len(words[2]) == MAX_REMOTE_LINE_CHARS
    assert len(words) == 3 + 20  # blank remote lines and git's own lines are not words
    text = describe("[remote rejected] (hook declined)", words)
    assert f"{len(words) - MAX_REMOTE_LINES} more line(s)" in text
    assert "line 19" not in text
    text.encode("utf-8")  # storable: no surrogate is left


def test_a_ref_whose_lock_another_git_holds_is_locked_and_its_atomic_siblings_go_again():
    """Nothing is wrong with a locked ref (a concurrent push, or one killed moments ago):
    no conflict and no refusal of the target's, but a ref to push again later; the
    others of its atomic push were refused only with it."""
    words = remote_words(LOCKED)
    assert refusal("refs/heads/a", "[remote rejected] (failed to update ref)", words) is (
        Refusal.LOCKED
    )
    atomic = "[remote rejected] (atomic transaction failed)"
    assert refusal("refs/heads/a", atomic, words) is Refusal.LOCKED
    assert refusal("refs/heads/b", atomic, words) is Refusal.SIBLING
