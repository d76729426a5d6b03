"""Terminal output: which progress a stream gets, the log's lines, tables."""

from __future__ import annotations

import io
import threading
import time
from dataclasses import replace

from reposync.console import (
    ProgressLine,
    ProgressLog,
    event_line,
    progress_reporter,
    render_table,
)
from reposync.service.embedded import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_terminal_gets_a_redrawn_line_and_a_log_gets_lines():
    terminal = progress_reporter(Terminal())
    log = progress_reporter(io.StringIO(), interval=60)
    try:
        assert isinstance(terminal, ProgressLine)
        assert isinstance(log, ProgressLog)
    finally:
        terminal.close()
        log.close()


def test_log_lines_say_stage_counts_rate_and_time():
    """Nothing before the first report; the rate is items since the previous line per
    second, and starts again with a follow-up Run."""
    stream, clock = io.StringIO(), Clock()
    log = ProgressLog(stream, interval=5, clock=clock, start=False)
    log.emit()
    assert stream.getvalue() == ""
    log(Progress(run_id=7, stage="inventory_source", items_total=0, items_done=0))
    clock.now += 3
    log.emit()
    log(Progress(run_id=7, stage="applying", items_total=1000, items_done=200))
    clock.now += 4
    log.emit()
    log(Progress(run_id=7, stage="applying", items_total=1000, items_done=600))
    clock.now += 2
    log.emit()
    log(Progress(run_id=8, stage="applying", items_total=10, items_done=5))
    clock.now += 1
    log.emit()
    assert stream.getvalue().splitlines() == [
        "reposync: run 7 inventory_source, 3s elapsed",
        "reposync: run 7 applying, 200/1000 items (20%), 50 items/s, 7s elapsed",
        "reposync: run 7 applying, 600/1000 items (60%), 200 items/s, 9s elapsed",
        "reposync: run 8 applying, 5/10 items (50%), 10s elapsed",
    ]


def test_the_log_writes_on_time_while_the_run_reports_nothing():
    """The thread writes every interval even when no new report arrives (one long
    batch), and stops when closed."""

    class Lines(io.StringIO):
        def __init__(self) -> None:
            super().__init__()
            self.count = 0
            self.enough = threading.Event()

        def write(self, text: str) -> int:
            self.count += text.count("\n")
            if self.count >= 3:
                self.enough.set()
            return super().write(text)

    stream = Lines()
    log = ProgressLog(stream, interval=0.02)
    log(Progress(run_id=1, stage="applying", items_total=4, items_done=1))
    assert stream.enough.wait(10)
    log.close()
    written = stream.count
    time.sleep(0.1)
    assert stream.count == written
    assert set(stream.getvalue().splitlines()[1:]) <= {
        f"reposync: run 1 applying, 1/4 items (25%), 0 items/s, {n}s elapsed" for n in range(3)
    }


def test_tables_align_their_columns_and_keep_one_line_per_row():
    rows = [{"id": 1, "name": "a", "note": None}, {"id": 200, "name": "long name", "note": "x\ny"}]
    columns = [
        ("ID", lambda r: r["id"]),
        ("NAME", lambda r: r["name"]),
        ("NOTE", lambda r: r["note"]),
    ]
    assert render_table(columns, rows).splitlines() == [
        "ID   NAME       NOTE",
        "1    a          -",
        "200  long name  x y",
    ]


def test_an_event_line_carries_its_message_and_counts():
    event = {
        "seq": 12,
        "created_at": "2026-12-04T07:35:48.123456",
        "stage": "applying",
        "type": "batch_settled",
        "message": "batch 1",
        "counts": {"settled": 3, "completed": 3},
    }
    assert event_line(event) == (
        "   12  2026-12-04 07:35:48  applying          batch_settled     batch 1 "
        "completed=3 settled=3"
    )


def test_a_push_moves_the_log_line_and_the_terminal_bar():
    """While a push runs the batch's items stay put; git's phase, objects and bytes are
    what moves, in the log's line and in the terminal's bar."""
    from reposync.git.progress import TransferProgress

    stream, clock = io.StringIO(), Clock()
    log = ProgressLog(stream, interval=5, clock=clock, start=False)
    terminal = Terminal()
    line = ProgressLine(terminal)
    items = Progress(run_id=3, stage="applying", items_total=1017, items_done=0)
    for done in (1000, 240_125):
        pushed = TransferProgress("writing objects", done, 480_250, done * 100)
        log(replace(items, transfer=pushed))
        line(replace(items, transfer=pushed))
        clock.now += 5
        log.emit()
    first, second = stream.getvalue().splitlines()
    assert first.startswith("reposync: run 3 applying, 0/1017 items (0%), git writing objects 0%")
    assert "git writing objects 50% (240,125/480,250), 22.9 MiB" in second
    drawn = [frame for frame in terminal.getvalue().split("\r") if frame]
    assert drawn[0].count("#") == 0
    assert drawn[1].count("#") > 0
    assert "0/1017 items, git writing objects 50%" in drawn[1]
