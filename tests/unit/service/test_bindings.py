"""Making a Binding: one place writes the row, and it judges visibility there."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

import reposync
from reposync.errors import VisibilityUnconfirmed
from reposync.models import Binding
from reposync.service.bindings import Visibilities, judge_visibility
from reposync.service.pipeline.stages.visibility import RANK, confirmation_hash

PACKAGE = Path(reposync.__file__).parent
VISIBILITIES = (None, "private", "internal", "public")


def _new_binding() -> Binding:
    return Binding(
        a_provider="local",
        a_repository_id="src-id",
        a_locator="/srv/src.git",
        b_provider="github",
        b_repository_id="42",
        b_locator="acme/mirror",
        authority_side="a",
    )


@pytest.mark.parametrize(
    ("source", "target", "confirm"),
    list(itertools.product(VISIBILITIES, VISIBILITIES, (False, True))),
)
def test_a_new_binding_is_refused_exactly_when_it_would_publish_unconfirmed(
    source, target, confirm
):
    """Refused iff both sides say and the target ranks above the source, unconfirmed; an
    admitted Binding keeps both visibilities and, confirmed, the access stage's hash."""
    binding = _new_binding()
    exposed = source is not None and target is not None and RANK[target] > RANK[source]

    if exposed and not confirm:
        with pytest.raises(VisibilityUnconfirmed):
            judge_visibility(binding, Visibilities(source, target), confirm)
        return
    judge_visibility(binding, Visibilities(source, target), confirm)

    assert (binding.a_visibility, binding.b_visibility) == (source, target)
    expected = confirmation_hash(binding, binding.authority, source or "", target or "")
    assert binding.visibility_confirmation == (expected if confirm else None)


def _makes_binding_rows(node: ast.AST) -> bool:
    """``Binding(...)`` or ``insert(Binding)``: a statement that writes a new row."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name) and func.id == "Binding":
        return True
    return (
        isinstance(func, ast.Name)
        and func.id == "insert"
        and any(isinstance(arg, ast.Name) and arg.id == "Binding" for arg in node.args)
    )


def test_only_get_or_create_binding_makes_a_binding_row():
    """Every entry point (API, page, CLI, handoff) binds through one function, so the
    visibility rule at creation cannot be bypassed by a new caller."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if any(_makes_binding_rows(node) for node in ast.walk(function)):
                found.append(f"{path.relative_to(PACKAGE).as_posix()}:{function.name}")

    assert found == ["service/bindings.py:get_or_create_binding"]
