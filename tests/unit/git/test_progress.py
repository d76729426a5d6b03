"""git's progress lines, read from the stderr of real git 2.39 pushes (``recorded/``:
a local push of 480,250 objects and 1,000 refs, a push over smart HTTP to the Forgejo
test server, and a push a ``pre-receive`` hook refused), ``\\r``-separated as git wrote
them."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from reposync.git.progress import (
    ProgressReader,
    TransferProgress,
    human_bytes,
    is_progress,
    without_progress,
)
from reposync.git.push_report import remote_words

RECORDED = Path(__file__).parent / "recorded"


def recorded(name: str) -> str:
    return (RECORDED / name).read_bytes().decode()


def updates(stderr: str) -> list[TransferProgress]:
    """What a reader makes of ``stderr``, fed as Python's universal newlines split it."""
    reader = ProgressReader()
    found = [reader.feed(line) for line in stderr.replace("\r", "\n").splitlines()]
    return [update for update in found if update is not None]


def test_a_local_push_reports_every_phase_in_order_with_bytes_once_measured():
    """Enumerating, counting, compressing, writing, then the target's delta resolution
    and connectivity check; bytes appear while writing and stay through the target's
    phases."""
    seen = updates(recorded("push_local_git2.39.stderr"))
    phases = list(dict.fromkeys(update.phase for update in seen))
    assert phases == [
        "enumerating objects",
        "counting objects",
        "compressing objects",
        "writing objects",
        "target: resolving deltas",
        "target: checking connectivity",
    ]
    enumerating = [u for u in seen if u.phase == "enumerating objects"]
    assert all(u.objects_total is None for u in enumerating)
    assert enumerating[-1].objects_done == 480250
    writing = [u for u in seen if u.phase == "writing objects"]
    assert writing[0].bytes_done == 0
    assert writing[0].objects_total == 480250
    assert writing[-1] == TransferProgress("writing objects", 480250, 480250, int(107.02 * 2**20))
    sent = [u.bytes_done for u in writing if u.bytes_done]
    assert sent
    assert sent == sorted(sent)
    assert sent[0] < sent[-1]
    after = [u for u in seen if u.phase.startswith("target:")]
    assert {u.bytes_done for u in after} == {writing[-1].bytes_done}
    assert after[-1] == TransferProgress(
        "target: checking connectivity", 480250, None, writing[-1].bytes_done
    )


@pytest.mark.parametrize("name", ["push_local_git2.39.stderr", "push_http_git2.39.stderr"])
def test_objects_only_go_up_within_a_phase_and_no_update_repeats(name):
    """A figure never goes back inside one phase, and a line that repeats the previous
    update (git redraws ``100%`` before ``, done.``) is not a new update."""
    seen = updates(recorded(name))
    assert len(seen) > 100
    for before, after in itertools.pairwise(seen):
        assert before != after
        if before.phase == after.phase:
            assert after.objects_done >= before.objects_done


def test_a_push_over_smart_http_reads_as_a_local_one():
    """``git http-backend``'s sideband carries the target's phases as ``remote:`` lines."""
    seen = updates(recorded("push_http_git2.39.stderr"))
    assert seen[-1] == TransferProgress("target: resolving deltas", 8823, 8823, int(21.73 * 2**20))
    assert any(u.phase == "writing objects" for u in seen)


def test_the_targets_own_words_survive_without_its_progress():
    """A refused push's stderr keeps the hook's message, git's error and the summary
    line; every progress update (the target's too) is gone."""
    stderr = recorded("push_refused_git2.39.stderr")
    kept = without_progress(stderr).splitlines()
    assert remote_words("\n".join(kept)) == ["disk quota exceeded for acme"]
    assert "error: failed to push some refs to '/tmp/i25p/hooked.git'" in kept
    assert not any(is_progress(line) for line in kept)
    assert len(kept) < 6
    # Without the filter the target's words would be buried under its progress.
    assert len(remote_words(stderr)) > 50


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Writing objects:  37% (3/8), 1.20 MiB | 2.30 MiB/s", ("writing objects", 3, 8, 1258291)),
        (
            "Writing objects: 100% (8/8), 512 bytes | 512.00 KiB/s, done.",
            ("writing objects", 8, 8, 512),
        ),
        (
            "remote: Resolving deltas: 100% (3/3), completed with 2 local objects.",
            ("target: resolving deltas", 3, 3, 0),
        ),
        ("Enumerating objects: 12, done.", ("enumerating objects", 12, None, 0)),
    ],
)
def test_single_updates(line, expected):
    """The forms git and forges print: throughput, bytes in each unit, GitHub's
    ``completed with`` tail, a count without a total."""
    update = ProgressReader().feed(line)
    assert update is not None
    assert (update.phase, update.objects_done, update.objects_total, update.bytes_done) == expected


@pytest.mark.parametrize(
    "line",
    [
        "remote: Error: 5",
        "Total 440 (delta 159), reused 440 (delta 159), pack-reused 0",
        "Delta compression using up to 2 threads",
        "remote: disk quota exceeded for acme",
        "error: failed to push some refs to 'x'",
        "To /tmp/target.git",
    ],
)
def test_what_is_not_an_update(line):
    """Git's summaries and a target's messages (even one shaped like ``Word: N``) are
    not progress."""
    assert ProgressReader().feed(line) is None
    assert not is_progress(line)


def test_description_and_dict_round_trip():
    """What an event or a log line says, and the API's shape read back."""
    update = TransferProgress("writing objects", 177693, 480250, 74 * 2**20 + 2**19)
    assert update.describe() == "writing objects 37% (177,693/480,250), 74.5 MiB"
    assert TransferProgress.from_dict(update.to_dict()) == update
    counting = TransferProgress("enumerating objects", 1200, None, 0)
    assert counting.describe() == "enumerating objects 1,200"
    assert [human_bytes(n) for n in (12, 2048, 3 * 2**30)] == ["12 bytes", "2.0 KiB", "3.0 GiB"]


def test_recordings_hold_carriage_return_updates():
    """The recordings are git's raw bytes: updates separated by ``\\r``, phases by
    ``\\n`` (what the reader must split on)."""
    raw = recorded("push_local_git2.39.stderr")
    assert raw.count("\r") > 300
    assert re.search(r"Writing objects: +\d+% \(\d+/480250\)\r", raw)
