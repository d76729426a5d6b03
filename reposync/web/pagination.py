"""Cursor pagination: ``after_id`` + ``limit`` in, ``next_after_id`` out.

A page that came back full may have a successor; its last id is the next cursor. A page
shorter than ``limit`` is the last one (``next_after_id`` is null).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from marshmallow import Schema

from reposync.web.schemas.common import limit, record_id

T = TypeVar("T")


class PageArgsSchema(Schema):
    after_id = record_id(metadata={"description": "continue after this id (the last one seen)"})
    limit = limit()


def next_cursor(rows: Sequence[T], limit: int, key: Callable[[T], int]) -> int | None:
    """The cursor of the next page, or ``None`` when ``rows`` is the last page."""
    return key(rows[-1]) if rows and len(rows) >= limit else None


def page(rows: Sequence[Any], limit: int) -> dict[str, Any]:
    """The response body of one page of records keyed by ``id``."""
    return {"items": rows, "next_after_id": next_cursor(rows, limit, lambda row: row.id)}
