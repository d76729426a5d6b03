"""Webhooks in through the API, for the tests: a dispatcher that records, Binding rows
on a GitHub repository, and deliveries signed as GitHub signs them."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from reposync.lifecycle import Side
from reposync.models import Binding
from reposync.service.context import ServiceContext, Step
from tests import webhooks
from tests.integration.web.conftest import WEBHOOK_SECRET, url

PATH = url("/webhooks/github")
_locals = itertools.count()


class Recorder:
    """A dispatcher that remembers instead of sending."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.event_runs: list[tuple[int, float]] = []

    def dispatch(self, step: Step) -> None:
        self.steps.append(step)

    def dispatch_handoff(self, binding_id: int, run_id: int) -> None:
        raise AssertionError("no handoff here")

    def dispatch_event_run(self, binding_id: int, countdown: float) -> None:
        self.event_runs.append((binding_id, countdown))


def add_binding(
    ctx: ServiceContext,
    github_id: int,
    *,
    github_side: Side = Side.A,
    sync_enabled: bool = True,
    name: str = "acme/app",
    connection_id: str | None = None,
) -> int:
    """A Binding between GitHub repository ``github_id`` and a new local one (rows only)."""
    github = {
        "provider": "github",
        "repository_id": str(github_id),
        "locator": name,
        "connection_id": connection_id,
    }
    local_id = f"local-{next(_locals)}"
    local = {"provider": "local", "repository_id": local_id, "locator": f"/{local_id}.git"}
    sides = (github, local) if github_side is Side.A else (local, github)
    return binding_row(ctx, *sides, sync_enabled=sync_enabled)


def binding_row(
    ctx: ServiceContext,
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    *,
    authority_side: str = "a",
    sync_enabled: bool = True,
) -> int:
    """A Binding's row between side ``a`` and side ``b`` (each its ``provider``,
    ``repository_id``, ``locator``...), nothing checked or made on either forge."""
    with ctx.db.transaction() as session:
        binding = Binding(
            **{f"a_{k}": v for k, v in a.items()},
            **{f"b_{k}": v for k, v in b.items()},
            authority_side=authority_side,
            sync_enabled=sync_enabled,
        )
        session.add(binding)
        session.flush()
        return binding.id


def deliver(client, event: str, body: Any, *, secret: str | None = WEBHOOK_SECRET, **kw):
    raw = body if isinstance(body, bytes) else webhooks.encode(body)
    headers = webhooks.headers(event, raw, secret, kw.pop("delivery_id", None))
    headers.update(kw.pop("headers", {}))
    return client.post(PATH, data=raw, headers=headers, **kw)
