"""Issue 10: the round-trip matrix. Every object type in its notable states goes
A -> GitHub test server -> B and A -> B -> A (a handoff back), and is compared with its
structure: each object with its parent's anchor (an issue's number, a release's tag, a
review's content), a reply with what it answers. The only differences allowed are the
documented representations, and the report's ``data_gaps`` count exactly those.

Prints the per-type table (equal / represented / lost) with ``pytest -s``.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reposync.providers.base import EndpointSpec
from reposync.providers.local import LocalProvider
from reposync.service.bindings import SyncRequest, bind
from reposync.service.embedded import sync
from reposync.service.handoff import handoff
from reposync.sync.vocabulary import ObjectType
from tests.github_env import embedded_world
from tests.gitrepo import generate, refs
from tests.integration.test_forge_sync import populate
from tests.integration.test_issue_release_fidelity import family_forge
from tests.integration.test_review_fidelity import review_forge

#: Kept in links and reports only, never written (counted ``archive_only``).
ARCHIVED = {ObjectType.REACTION}


def everything(path: Path) -> None:
    """One of every type, with cross references, replies, a review request, a reaction."""
    generate(path, commits=5, branches=1, tags=1)
    populate(path)


def reviews(path: Path) -> None:
    review_forge(path)


def issues_and_releases(path: Path) -> None:
    family_forge(path)


FAMILIES: dict[str, Callable[[Path], None]] = {
    "everything": everything,
    "reviews": reviews,
    "issues_and_releases": issues_and_releases,
}


def with_main_head(path: Path) -> None:
    """A source whose HEAD names its main branch (``generate`` leaves ``master``)."""
    subprocess.run(
        ["git", f"--git-dir={path}", "symbolic-ref", "HEAD", "refs/heads/main"], check=True
    )


def anchors(path: Path) -> dict[ObjectType, Counter[str]]:
    """Every object of a local forge as a string naming its content and its place."""
    provider = LocalProvider.open(EndpointSpec("local", str(path)))
    try:
        forge = provider.forge
        objects = {
            t: {o.identity: o for o in forge.reader.objects_of(t)} for t in ObjectType if _listed(t)
        }
    finally:
        provider.close()
    by_identity = {(t, i): o for t, found in objects.items() for i, o in found.items()}

    def anchor(object_type: ObjectType, identity: str) -> str:
        obj = by_identity.get((object_type, identity))
        if obj is None:
            return "gone"
        if object_type in (ObjectType.ISSUE, ObjectType.PULL_REQUEST):
            return f"#{obj.number}"
        if object_type in (ObjectType.LABEL, ObjectType.MILESTONE, ObjectType.RELEASE):
            return f"{object_type.value}:{obj.unique_key}"
        parent = obj.refs.get("parent")
        place = anchor(parent.object_type, parent.identity) if parent else ""
        return f"{place}/{object_type.value}:{obj.content_hash}"

    table: dict[ObjectType, Counter[str]] = {}
    for object_type, found in objects.items():
        keys: Counter[str] = Counter()
        for obj in found.values():
            key = f"{anchor(object_type, obj.identity)} {obj.content_hash}"
            reply = obj.refs.get("in_reply_to")
            if reply is not None:
                key += f" answers {anchor(reply.object_type, reply.identity)}"
            keys[key] += 1
        table[object_type] = keys
    table[ObjectType.GIT_REF] = Counter(f"{n} {c}" for n, c in refs(path).items())
    return table


def _listed(object_type: ObjectType) -> bool:
    return object_type not in (ObjectType.GIT_REF, ObjectType.DEFAULT_BRANCH)


def compare(
    a: dict[ObjectType, Counter[str]],
    b: dict[ObjectType, Counter[str]],
    gaps: dict[str, Any],
) -> list[tuple[str, int, int, int, int]]:
    """Per type: objects of A, equal in B, represented (data_gaps), lost."""
    represented: Counter[str] = Counter()
    for per_type in gaps.values():
        if isinstance(per_type, dict):
            for object_type, count in per_type.items():
                represented[object_type] += count
    rows = []
    for object_type in sorted(a, key=str):
        mine, theirs = a[object_type], b.get(object_type, Counter())
        equal = sum((mine & theirs).values())
        missing = sum((mine - theirs).values())
        archived = missing if object_type in ARCHIVED else 0
        rows.append(
            (
                object_type.value,
                sum(mine.values()),
                equal,
                represented[object_type.value],
                missing - archived,
            )
        )
    return rows


def render(title: str, rows: list[tuple[str, int, int, int, int]]) -> str:
    lines = [title, f"{'type':16} {'A':>4} {'equal':>6} {'represented':>12} {'lost':>5}"]
    lines += [f"{t:16} {n:4} {eq:6} {rep:12} {lost:5}" for t, n, eq, rep, lost in rows if n]
    return "\n".join(lines)


@pytest.fixture
def world(tmp_path: Path, github_fake):
    with embedded_world(github_fake, tmp_path) as (ctx, recorder):
        yield ctx, recorder, github_fake


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_to_github_to_b_loses_nothing_and_counts_every_representation(tmp_path, world, name):
    ctx, _, fake = world
    repo = f"acme/{name.replace('_', '-')}"
    fake.state.create_repo(repo, private=True)
    a = tmp_path / "a.git"
    FAMILIES[name](a)
    with_main_head(a)

    forward = sync(ctx, SyncRequest(f"local:{a}", f"github:{repo}"))
    assert forward.status == "completed", forward.report["problems"]
    b = tmp_path / "b.git"
    back = sync(ctx, SyncRequest(f"github:{repo}", f"local:{b}"))
    assert back.status == "completed", back.report["problems"]

    gaps = forward.report["data_gaps"]
    rows = compare(anchors(a), anchors(b), gaps)
    table = render(f"{name}: A -> GitHub -> B", rows)
    print(table)
    assert all(lost == 0 for *_, lost in rows), table
    archived = sum(n - eq for t, n, eq, _, _ in rows if ObjectType(t) in ARCHIVED)
    assert archived == sum((gaps.get("archive_only") or {}).values()), table
    # Every represented object came back as the source's: equality is total but for
    # what is archived, and GitHub's own additions (a release's tag) are refs only.
    assert all(eq == n for t, n, eq, _, _ in rows if ObjectType(t) not in ARCHIVED), table
    audit = sync(ctx, SyncRequest(f"local:{a}", f"github:{repo}", full_audit=True))
    assert audit.report["planned_actions"] == {}, audit.report["planned_actions"]


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_to_b_and_a_handoff_back_keeps_everything(tmp_path, ctx, name):
    a = tmp_path / "a.git"
    FAMILIES[name](a)
    with_main_head(a)
    b = tmp_path / "b.git"
    request = SyncRequest(f"local:{a}", f"local:{b}")
    forward = sync(ctx, request)
    assert forward.status == "completed", forward.report["problems"]

    outcome = handoff(ctx, bind(ctx, request).id)

    assert outcome.switched, outcome.reason
    rows = compare(anchors(a), anchors(b), forward.report["data_gaps"])
    table = render(f"{name}: A -> B, handed back", rows)
    print(table)
    assert all(lost == 0 for *_, lost in rows), table
    assert all(eq == n for t, n, eq, _, _ in rows if ObjectType(t) not in ARCHIVED), table
