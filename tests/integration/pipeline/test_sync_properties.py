"""Property-based: random forge histories on both sides, synced through the real pipeline.

Each example builds a source forge and a standby that may already hold unmanaged objects
(some with the same names), syncs, edits the source, syncs again, and checks what
must hold whatever the history: managed objects equal the source's; a Run after
convergence reads and writes nothing on the target; unmanaged target objects are never
modified or deleted; name collisions are reported and never overwritten.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from reposync.config import Settings
from reposync.models import ObjectLink, RunItem
from reposync.models.db import Database
from reposync.providers.base import EndpointSpec
from reposync.providers.local import LocalProvider
from reposync.providers.local.authoring import ForgeAuthoring
from reposync.service.bindings import SyncRequest
from reposync.service.context import ServiceContext
from reposync.service.embedded import sync
from reposync.sync.vocabulary import ObjectType
from tests.gitrepo import generate, init_bare

NAMES = ["bug", "docs", "ui", "perf", "good first issue"]
COLORS = ["d73a4a", "0075ca", "a2eeef", "000000"]

label_spec = st.tuples(st.sampled_from(NAMES), st.sampled_from(COLORS))
issue_spec = st.tuples(
    st.text(alphabet="abcdefgh #1234", min_size=1, max_size=12).filter(str.strip),
    st.lists(st.sampled_from(NAMES), max_size=2, unique=True),
    st.integers(0, 3),  # comments
)
edit_spec = st.one_of(
    st.tuples(st.just("retitle"), st.integers(0, 20), st.text("xyz", min_size=1, max_size=5)),
    st.tuples(st.just("recolor"), st.sampled_from(NAMES), st.sampled_from(COLORS)),
    st.tuples(st.just("comment"), st.integers(0, 20), st.text("pq ", min_size=1, max_size=8)),
    st.tuples(st.just("delete_label"), st.sampled_from(NAMES), st.just("")),
)


@dataclass
class History:
    source_labels: dict[str, str]
    issues: list[tuple[str, list[str], int]]
    target_labels: dict[str, str]
    target_issues: int
    edits: list[tuple[str, Any, Any]]


histories = st.builds(
    History,
    source_labels=st.dictionaries(st.sampled_from(NAMES), st.sampled_from(COLORS), max_size=4),
    issues=st.lists(issue_spec, max_size=5),
    target_labels=st.dictionaries(st.sampled_from(NAMES), st.sampled_from(COLORS), max_size=3),
    target_issues=st.integers(0, 2),
    edits=st.lists(edit_spec, max_size=4),
)


def open_forge(path: Path) -> LocalProvider:
    return LocalProvider.open(EndpointSpec("local", str(path)))


def state(path: Path) -> dict[tuple[str, str], str]:
    """(type, identity) -> content hash of every forge object of a repository."""
    provider = open_forge(path)
    try:
        return {
            (t.value, obj.identity): obj.content_hash
            for t in ObjectType
            if t is not ObjectType.GIT_REF
            for obj in provider.forge.reader.objects_of(t)
        }
    finally:
        provider.close()


class World:
    """One example's repositories and embedded database (fresh per example)."""

    template: Path | None = None

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="reposync-prop-"))
        data = self.root / "data"
        data.mkdir()
        if World.template is None:  # migrate once, copy the file for every example
            World.template = Path(tempfile.mkdtemp(prefix="reposync-prop-db-")) / "t.db"
            db = Database(f"sqlite:///{World.template}")
            db.upgrade()
            db.dispose()
        shutil.copy(World.template, data / "reposync.db")
        settings = Settings(data_dir=data, lease_ttl=30)
        self.db = Database(settings.effective_database_url)
        self.ctx = ServiceContext(settings=settings, db=self.db)
        self.source = generate(self.root / "src.git", commits=2, branches=0, tags=0)
        self.target = init_bare(self.root / "dst.git")
        self.request = SyncRequest(f"local:{self.source}", f"local:{self.target}")

    def close(self) -> None:
        self.db.dispose()
        shutil.rmtree(self.root, ignore_errors=True)

    def links(self) -> dict[tuple[str, str], str]:
        with self.db.session() as session:
            rows = session.execute(
                select(
                    ObjectLink.object_type,
                    ObjectLink.a_identity,
                    ObjectLink.b_identity,
                    ObjectLink.representation,
                )
            ).all()
        return {(t, a): b for t, a, b, rep in rows if rep == "native"}

    def items(self, run_id: int) -> list[RunItem]:
        with self.db.session() as session:
            return list(session.execute(select(RunItem).where(RunItem.run_id == run_id)).scalars())


def populate(world: World, history: History) -> list[str]:
    source = open_forge(world.source)
    try:
        forge = ForgeAuthoring(source.forge)
        for name, color in history.source_labels.items():
            forge.create_label(name, color=color)
        issue_ids = []
        for title, labels, comments in history.issues:
            usable = [name for name in labels if name in history.source_labels]
            issue = forge.create_issue(title, author="ann", labels=usable)
            issue_ids.append(issue)
            for c in range(comments):
                forge.add_comment("issue", issue, f"comment {c}", author="bob")
    finally:
        source.close()
    target = open_forge(world.target)
    try:
        standby = ForgeAuthoring(target.forge)
        for name, color in history.target_labels.items():
            standby.create_label(name, color=color)
        for n in range(history.target_issues):  # numbers far from the source's
            standby.create_issue(f"standby issue {n}", author="zed", number=900 + n)
    finally:
        target.close()
    return issue_ids


def edit(world: World, history: History, issue_ids: list[str]) -> None:
    source = open_forge(world.source)
    try:
        forge = ForgeAuthoring(source.forge)
        labels = {obj.payload["name"]: obj.identity for obj in forge.reader.objects_of("label")}
        for kind, what, value in history.edits:
            if kind == "retitle" and issue_ids:
                forge.update("issue", issue_ids[what % len(issue_ids)], title=value)
            elif kind == "comment" and issue_ids:
                forge.add_comment("issue", issue_ids[what % len(issue_ids)], value, author="cy")
            elif kind == "recolor" and what in labels:
                forge.update("label", labels[what], color=value)
            elif kind == "delete_label" and what in labels:
                in_use = any(
                    what in obj.payload["labels"] for obj in forge.reader.objects_of("issue")
                )
                if not in_use:
                    forge.delete("label", labels.pop(what))
    finally:
        source.close()


def source_labels(world: World) -> dict[str, str]:
    provider = open_forge(world.source)
    try:
        return {
            obj.payload["name"]: obj.payload["color"]
            for obj in provider.forge.reader.objects_of("label")
        }
    finally:
        provider.close()


def check_invariants(
    world: World,
    unmanaged_before: dict[tuple[str, str], str],
    history: History,
    run_id: int,
    adopted: set[tuple[str, str]],
) -> None:
    """``adopted`` collects every target object a link ever claimed (then it is managed:
    a deletion on the source may delete it)."""
    source, target = state(world.source), state(world.target)
    links = world.links()
    adopted.update((t, b) for (t, _), b in links.items())
    # Managed objects equal the source's.
    for (object_type, source_id), target_id in links.items():
        if (object_type, source_id) in source:
            assert target[(object_type, target_id)] == source[(object_type, source_id)]
    # Unmanaged target objects are never modified or deleted.
    for key, digest in unmanaged_before.items():
        if key not in adopted:
            assert target.get(key) == digest, f"unmanaged {key} was touched"
    # Collisions: same label name, different color -> reported, never overwritten.
    conflicts = {
        i.object_key
        for i in world.items(run_id)
        if i.action == "conflict" or i.error_code == "conflict"  # planned, or met on write
    }
    if run_id == 1:  # the baseline: every differing same-named label is a collision
        current = source_labels(world)
        for name, color in history.target_labels.items():
            if name in current and current[name] != color:
                assert f"label {name}" in conflicts


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(history=histories)
def test_random_histories_converge_and_never_touch_unmanaged_objects(history: History):
    """Converged Runs mirror the source; nothing unmanaged changes; reruns are silent."""
    world = World()
    try:
        issue_ids = populate(world, history)
        unmanaged = state(world.target)
        adopted: set[tuple[str, str]] = set()
        first = sync(world.ctx, world.request)
        check_invariants(world, unmanaged, history, first.id, adopted)

        edit(world, history, issue_ids)
        second = sync(world.ctx, world.request)
        check_invariants(world, unmanaged, history, second.id, adopted)

        third = sync(world.ctx, world.request)  # nothing changed since
        if second.status == "completed":  # converged: the next Run is silent
            assert world.items(third.id) == []
            assert "target" not in third.report["io"]
            assert third.counters["checkpoint_skipped"] == third.counters["scanned"]
        else:  # unresolved collisions are reported again, and still nothing is written
            assert third.status == "requires_attention"
            assert third.report["io"].get("target", {}).get("writes", 0) == 0
            assert {i.error_code for i in world.items(third.id)} == {"conflict"}
    finally:
        world.close()
