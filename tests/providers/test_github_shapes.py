"""GitHub's rewritten values (asset names, due days, lock reasons) read back as the
source's, and only when GitHub's value was made of it."""

from __future__ import annotations

import pytest

from reposync.providers.github import objects as gh
from reposync.providers.github import shapes
from reposync.sync import objects
from reposync.sync.objects import MalformedObject
from tests.fakes.github.routes_releases import safe_asset_name

NAMES = [
    "checksums file.txt",
    "ünïcode.bin",
    "a~b (c).deb",
    "..hidden..",
    "😀.pdf",
    "plain_name-1.0.tar.gz",
    "x",
]


@pytest.mark.parametrize("name", NAMES)
def test_the_provider_and_the_test_server_rename_alike(name):
    assert shapes.asset_name(name) == safe_asset_name(name)


@pytest.mark.parametrize("name", NAMES)
def test_a_renamed_asset_reads_back_under_its_label(name):
    shown = shapes.asset_name(name)
    label = name if shown != name else None
    assert shapes.original_asset_name(shown, label) == name


@pytest.mark.parametrize(
    ("name", "label", "read"),
    [
        ("app-linux.tar.gz", "Linux binary", "app-linux.tar.gz"),  # a description
        ("app.tar.gz", None, "app.tar.gz"),
        ("app.tar.gz", "", "app.tar.gz"),
        ("n.code.bin", "ünïcode.bin", "ünïcode.bin"),
        # GitHub's rule differing in a detail: same significant characters, same order.
        ("a.b.c", "a/b\\c", "a/b\\c"),
        ("default.pdf", "Handbook.pdf", "default.pdf"),
    ],
)
def test_only_a_label_github_made_the_name_of_is_taken_for_the_name(name, label, read):
    assert shapes.original_asset_name(name, label) == read


@pytest.mark.parametrize(
    ("due", "day"),
    [
        ("2026-03-01T12:34:56Z", "2026-03-01T08:00:00Z"),
        ("2026-07-15T03:00:00Z", "2026-07-14T07:00:00Z"),
        ("2026-07-15T07:00:00Z", "2026-07-15T07:00:00Z"),
    ],
)
def test_a_due_time_is_kept_as_its_pacific_day(due, day):
    assert shapes.due_day(due) == day
    assert shapes.keeps_due(due) is (due == day)
    assert shapes.keeps_due(None)


def _milestone(due_on: str | None, description: str) -> dict[str, object]:
    return {
        "number": 1,
        "title": "v1",
        "state": "open",
        "description": description,
        "due_on": due_on,
        "updated_at": "2026-01-01T00:00:00Z",
    }


def test_a_milestone_takes_the_headers_time_only_while_github_keeps_its_day():
    header = '<!-- reposync:attribution {"due_on": "2026-03-01T12:34:56Z"} -->\n> Due\n\nfirst'
    kept = gh.milestone(_milestone("2026-03-01T08:00:00Z", header))
    assert kept.payload["due_on"] == "2026-03-01T12:34:56Z"
    assert kept.payload["description"] == "first"
    moved = gh.milestone(_milestone("2026-03-05T08:00:00Z", header))  # edited on GitHub
    assert moved.payload["due_on"] == "2026-03-05T08:00:00Z"
    cleared = gh.milestone(_milestone(None, header))
    assert cleared.payload["due_on"] is None


def test_lock_reasons_are_githubs_four_and_need_a_lock():
    common = {"number": 1, "title": "t", "author": "a", "created_at": "2026-01-01T00:00:00Z"}
    locked = objects.issue("1", "", locked=True, active_lock_reason="spam", **common)
    assert locked.payload["active_lock_reason"] == "spam"
    # No reason: the payload is as before the field existed (hashes unchanged).
    assert "active_lock_reason" not in objects.issue("1", "", locked=True, **common).payload
    with pytest.raises(MalformedObject):
        objects.issue("1", "", locked=False, active_lock_reason="spam", **common)
    with pytest.raises(MalformedObject):
        objects.issue("1", "", locked=True, active_lock_reason="boring", **common)
