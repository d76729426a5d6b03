"""Finding records named in a request, and reading list parameters, as GitHub does."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from tests.fakes.forge_server.clock import parse_iso
from tests.fakes.github.errors import ApiError, not_found, validation_failed
from tests.fakes.github.models import Issue
from tests.fakes.github.routing import Ctx

T = TypeVar("T")


def number(ctx: Ctx, name: str) -> int:
    """A numeric path parameter; anything else is a 404, as on GitHub."""
    try:
        return int(ctx.params[name])
    except ValueError as exc:
        raise not_found() from exc


def issue(ctx: Ctx, name: str = "issue_number") -> Issue:
    found = ctx.the_repo().issues.get(number(ctx, name))
    if found is None:
        raise not_found()
    return found


def pull(ctx: Ctx) -> Issue:
    found = ctx.the_repo().issues.get(number(ctx, "pull_number"))
    if found is None or found.pull is None:
        raise not_found()
    return found


def by_id(table: dict[int, T], ctx: Ctx, name: str) -> T:
    found = table.get(number(ctx, name))
    if found is None:
        raise not_found()
    return found


def since(ctx: Ctx, resource: str) -> datetime | None:
    value = ctx.arg("since")
    if value is None:
        return None
    try:
        return parse_iso(value)
    except ValueError as exc:
        raise validation_failed(resource, "since", "invalid", value=value) from exc


def choice(ctx: Ctx, name: str, allowed: tuple[str, ...], default: str, resource: str) -> str:
    value = ctx.arg(name, default) or default
    if value not in allowed:
        raise validation_failed(resource, name, "invalid", value=value)
    return value


def ordered(
    items: list[T], key: Callable[[T], Any], direction: str, tiebreak: Callable[[T], int]
) -> list[T]:
    return sorted(items, key=lambda i: (key(i), tiebreak(i)), reverse=direction == "desc")


def location(url: str) -> dict[str, str]:
    return {"location": url}


def text_field(body: dict[str, Any], name: str, resource: str, *, limit: int = 65536) -> None:
    """GitHub refuses bodies over 65,536 characters."""
    value = body.get(name)
    if isinstance(value, str) and len(value) > limit:
        raise ApiError(
            422,
            "Validation Failed",
            errors=[
                {
                    "resource": resource,
                    "field": name,
                    "code": "custom",
                    "message": f"{name} is too long (maximum is {limit} characters)",
                }
            ],
        )
