"""Cursor pagination: a full page points at its last id, a short one ends the listing."""

from __future__ import annotations

from types import SimpleNamespace

from reposync.web.pagination import next_cursor, page


def rows(*ids: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(id=i) for i in ids]


def test_a_full_page_has_a_next_cursor():
    """limit rows came back: continue after the last one."""
    assert page(rows(4, 7), 2)["next_after_id"] == 7


def test_a_short_or_empty_page_is_the_last():
    """Fewer rows than the limit, or none: no next cursor."""
    assert page(rows(4), 2)["next_after_id"] is None
    assert page([], 2) == {"items": [], "next_after_id": None}


def test_descending_listings_use_the_same_rule():
    """Newest-first pages continue below their last (smallest) id."""
    assert next_cursor(rows(9, 8, 5), 3, lambda r: r.id) == 5
