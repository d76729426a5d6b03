"""One authorization convention (issue 11 #7): changes are authorized by the entry point
through ``service.authorization``; the operations take no user; reads take the user and
filter. Two conventions had grown: views looking a record up only so the lookup raised,
and ``retry_run`` checking the user inside."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from reposync.models import User

OPERATIONS = [
    "bindings",
    "runs",
    "handoff",
    "recovery",
    "scheduling.schedules",
    "embedded",
    "reconcile",
    "webhooks.watches",
    "webhooks.subscriptions",
    "webhooks.deliveries",
    "webhooks.outbox",
    "webhooks.intake",
]
WEB = Path(__file__).resolve().parents[3] / "reposync" / "web"


@pytest.mark.parametrize("module", OPERATIONS)
def test_operations_take_no_user(module):
    """An operation that took a user would be a second place where authorization lives."""
    loaded = importlib.import_module(f"reposync.service.{module}")
    for name, function in inspect.getmembers(loaded, inspect.isfunction):
        if function.__module__ != loaded.__name__:
            continue
        hints = inspect.get_annotations(function, eval_str=True)
        assert User not in hints.values(), f"{module}.{name} takes a user"


def test_views_never_look_a_record_up_only_to_raise():
    """A lookup whose result is thrown away is an authorization in disguise: say it."""
    for path in WEB.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                called = node.value.func
                name = called.id if isinstance(called, ast.Name) else getattr(called, "attr", "")
                assert not name.startswith("get_"), f"{path.name}:{node.lineno} {name}()"
