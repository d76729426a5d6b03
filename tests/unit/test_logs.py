"""``reposync.logs``: JSON lines with the context's fields; the text format by default."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reposync import logs
from reposync.config import Settings
from reposync.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[2]


def record(message: str, **extra: object) -> logging.LogRecord:
    rec = logging.LogRecord("reposync.test", logging.INFO, __file__, 1, message, (), None)
    rec.__dict__.update(extra)
    return rec


def test_json_carries_the_context_and_nothing_outside_it():
    formatter = logs.JsonFormatter()
    assert set(json.loads(formatter.format(record("plain")))) == {
        "time",
        "level",
        "logger",
        "message",
        "process",
    }
    with logs.log_context(run_id=7, stage="planning"):
        with logs.log_context(binding_id=3, generation=12, stage="applying", task_id=None):
            inner = json.loads(formatter.format(record("inner %s", args_ignored=1)))
        outer = json.loads(formatter.format(record("outer", task_id="t-1")))
    after = json.loads(formatter.format(record("after")))
    assert inner["run_id"] == 7
    assert inner["binding_id"] == 3
    assert inner["generation"] == 12
    assert inner["stage"] == "applying"  # the inner binding wins, None is no value
    assert "task_id" not in inner
    assert outer == {**outer, "run_id": 7, "stage": "planning", "task_id": "t-1"}
    assert "binding_id" not in outer
    assert "run_id" not in after


def test_json_keeps_the_traceback_on_one_line():
    try:
        raise ValueError("boom\nsecond line")
    except ValueError:
        rec = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    line = logs.JsonFormatter().format(rec)
    assert "\n" not in line
    assert "ValueError: boom" in json.loads(line)["exc_info"]


def test_log_format_is_text_or_json():
    assert Settings.from_env({}).log_format == "text"
    assert Settings.from_env({"REPOSYNC_LOG_FORMAT": "JSON"}).log_format == "json"
    with pytest.raises(ConfigurationError, match="REPOSYNC_LOG_FORMAT"):
        Settings.from_env({"REPOSYNC_LOG_FORMAT": "xml"})


def test_configure_leaves_a_root_logger_it_did_not_set_up_alone():
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        root.handlers[:] = []
        stream = io.StringIO()
        logs.configure("text", logging.INFO, stream)
        logs.configure("json", logging.INFO, stream)  # replaces its own handler
        assert len(root.handlers) == 1
        logging.getLogger("reposync.t").info("hello")
        assert json.loads(stream.getvalue())["message"] == "hello"
        foreign = logging.StreamHandler(io.StringIO())
        root.handlers[:] = [foreign]
        logs.configure("json", logging.DEBUG, stream)
        assert root.handlers == [foreign]
    finally:
        root.handlers[:], root.level = saved


@pytest.mark.parametrize("log_format", ["", "json"])
def test_the_cli_logs_in_the_format_asked_for(tmp_path: Path, log_format: str):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REPOSYNC_DATA_DIR": str(tmp_path / "d")}
    env.pop("REPOSYNC_LOG_FORMAT", None)
    if log_format:
        env["REPOSYNC_LOG_FORMAT"] = log_format
    done = subprocess.run(
        [sys.executable, "-m", "reposync.cli", "-v", "runs", "list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "database" in line]
    assert lines, done.stderr
    if log_format == "json":
        entry = json.loads(lines[0])
        assert entry["logger"] == "reposync.cli"
        assert entry["level"] == "INFO"
    else:
        assert lines[0].split(" ", 3)[2] == "INFO"  # "date time LEVEL name: message"
        assert " reposync.cli: database " in lines[0]
