"""Pagination as GitHub does it: ``page``/``per_page`` (default 30, max 100) and ``link``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeVar
from urllib.parse import urlencode

T = TypeVar("T")
DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def page_of(
    items: Sequence[T], query: list[tuple[str, str]], url: str
) -> tuple[list[T], str | None]:
    """The requested page of ``items`` and the ``link`` header (None for a single page).

    ``url`` is the request's URL without its query; links repeat every query parameter
    with ``page`` replaced, in GitHub's order: prev, next, last, first.
    """
    params = dict(query)
    per_page = _int(params.get("per_page"), DEFAULT_PER_PAGE)
    per_page = DEFAULT_PER_PAGE if per_page < 1 else min(per_page, MAX_PER_PAGE)
    page = max(_int(params.get("page"), 1), 1)
    last = max(math.ceil(len(items) / per_page), 1)
    chosen = list(items[(page - 1) * per_page : page * per_page])
    if last == 1:
        return chosen, None

    def link(number: int, rel: str) -> str:
        kept = [(k, v) for k, v in query if k != "page"] + [("page", str(number))]
        return f'<{url}?{urlencode(kept)}>; rel="{rel}"'

    links = []
    if page > 1:
        links.append(link(min(page - 1, last), "prev"))
    if page < last:
        links.append(link(page + 1, "next"))
        links.append(link(last, "last"))
    if page > 1:
        links.append(link(1, "first"))
    return chosen, ", ".join(links)
