"""The data of a chaos soak: a real repository with a forge, its mutations, and the checks.

The source is a generated Git repository (``tests.gitrepo.generate``) plus a local forge
of hundreds of objects (labels, milestones, issues with comments, pull requests with
reviews and review comments, releases with assets). Between rounds it is mutated with a
seeded RNG: edits, new objects, several deletes at once (comments of one issue, whole
issues, releases), new commits, new and deleted branches and tags.

Writes are counted where they land. The target repository logs every ref update
(``core.logAllRefUpdates=always``), so a ref's reflog length is the number of times it
was written since it was last created. The local forge keeps a ``revision`` per row,
1 on insert and +1 on every update, and each row a sync created carries a marker naming
its source object. The ``Ledger`` knows, from the source states every Run was given,
how many writes each ref and object needed: more than that is "written twice".

The target also gets a ``reference-transaction`` hook that holds every push's ref locks
for a moment, so faults can land while a push is mid-transaction.
"""

from __future__ import annotations

import hashlib
import random
import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from reposync.providers.base import EndpointSpec
from reposync.providers.local import LocalProvider
from reposync.providers.local.authoring import ForgeAuthoring
from reposync.sync.vocabulary import ObjectType
from tests.gitrepo import (
    commit_on,
    delete_refs,
    enable_reflog,
    generate,
    init_bare,
    reflog_lengths,
    refs,
    set_ref,
)

#: Forge types the suite creates; every one of them is written natively on the target.
SYNCED_TYPES = (
    ObjectType.LABEL,
    ObjectType.MILESTONE,
    ObjectType.ISSUE,
    ObjectType.PULL_REQUEST,
    ObjectType.RELEASE,
    ObjectType.ISSUE_COMMENT,
    ObjectType.REVIEW,
    ObjectType.REVIEW_COMMENT,
    ObjectType.RELEASE_ASSET,
)
SYNCED = frozenset(t.value for t in SYNCED_TYPES)
WHEN = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
AUTHORS = ("ann", "bob", "carol", "dave", "erin")
REVIEW_STATES = ("APPROVED", "CHANGES_REQUESTED", "COMMENTED")
#: Seconds the target's reference-transaction hook holds a push's ref locks.
PUSH_SLEEP = 1.0


@contextmanager
def open_forge(path: Path) -> Iterator[Any]:
    provider = LocalProvider.open(EndpointSpec("local", str(path)))
    try:
        yield ForgeAuthoring(provider.forge)
    finally:
        provider.close()


def repository_id(path: Path) -> str:
    provider = LocalProvider.open(EndpointSpec("local", str(path)))
    try:
        return provider.endpoint().repository_id
    finally:
        provider.close()


# -- reading a side -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    object_type: str
    id: str
    number: int | None
    unique_key: str | None
    content_hash: str
    revision: int
    marker: str | None

    @property
    def canonical(self) -> tuple[str, int, str, str]:
        """What must be equal on both sides (identities differ across forges)."""
        return (self.object_type, self.number or 0, self.unique_key or "", self.content_hash)


def forge_rows(git_dir: Path) -> list[Row]:
    """Every row of a local forge, read straight from its SQLite file (read-only)."""
    db = git_dir / "reposync" / "forge.db"
    if not db.exists():
        return []
    conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute(
            "SELECT object_type, id, number, unique_key, content_hash, revision, marker "
            "FROM objects"
        ).fetchall()
    finally:
        conn.close()
    return [Row(*row) for row in rows]


def write_locked(git_dir: Path) -> bool:
    """Whether a writer is inside a transaction of the forge right now.

    Tries ``BEGIN IMMEDIATE`` without waiting and rolls back at once, so it holds the
    lock for microseconds at most when nobody else does.
    """
    db = git_dir / "reposync" / "forge.db"
    if not db.exists():
        return False
    try:
        conn = sqlite3.connect(
            f"{db.absolute().as_uri()}?mode=rw", uri=True, timeout=0, isolation_level=None
        )
    except sqlite3.Error:
        return False
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError as exc:
        return "locked" in str(exc) or "busy" in str(exc)
    finally:
        conn.close()


def missing_assets(git_dir: Path) -> list[str]:
    """Release assets whose bytes are not in the forge's content-addressed store (or do
    not hash to their name): data the row promises and the target does not have."""
    db = git_dir / "reposync" / "forge.db"
    if not db.exists():
        return []
    conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute(
            "SELECT id, asset_sha256 FROM objects WHERE object_type = 'release_asset'"
        ).fetchall()
    finally:
        conn.close()
    missing = []
    for identity, sha256 in rows:
        path = git_dir / "reposync" / "assets" / sha256
        try:
            intact = hashlib.sha256(path.read_bytes()).hexdigest() == sha256
        except OSError:
            intact = False
        if not intact:
            missing.append(f"release_asset {identity} bytes ({sha256[:12]})")
    return missing


@dataclass
class SourceState:
    refs: dict[str, str]  # synced refs (heads, tags, pull request shadows) -> object id
    objects: dict[tuple[str, str], Row]


@dataclass
class TargetState:
    refs: dict[str, str]
    reflogs: dict[str, int]
    rows: list[Row]

    def fingerprint(self) -> tuple[Any, ...]:
        return (
            sorted(self.refs.items()),
            sorted(self.reflogs.items()),
            sorted((r.object_type, r.id, r.revision, r.content_hash) for r in self.rows),
        )


def source_state(path: Path) -> SourceState:
    provider = LocalProvider.open(EndpointSpec("local", str(path)))
    try:
        listing = provider.inventory_index([ObjectType.GIT_REF])
        source_refs = {entry.identity: entry.revision for entry in listing.entries}
    finally:
        provider.close()
    objects = {
        (row.object_type, row.id): row for row in forge_rows(path) if row.object_type in SYNCED
    }
    return SourceState(source_refs, objects)


def target_state(path: Path) -> TargetState:
    return TargetState(
        {k: v for k, v in refs(path).items() if k.startswith("refs/")},
        {k: v for k, v in reflog_lengths(path).items() if k.startswith("refs/")},
        forge_rows(path),
    )


# -- what each write should have happened ---------------------------------------------------


@dataclass
class Ledger:
    """Writes each ref and object needed, from the source states the Runs were given."""

    refs: dict[str, tuple[str, int]] = field(default_factory=dict)
    objects: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)

    def observe(self, state: SourceState) -> None:
        """A Run is about to sync ``state``: a new value needs one more write."""
        self.refs = {name: _advance(self.refs.get(name), sha) for name, sha in state.refs.items()}
        self.objects = {
            key: _advance(self.objects.get(key), row.content_hash)
            for key, row in state.objects.items()
        }

    def rebase(self, target: TargetState, paired: dict[tuple[str, str], Row]) -> None:
        """After a failed round: take the writes that are there as the new baseline, so
        later rounds count only their own."""
        for name, (sha, writes) in list(self.refs.items()):
            self.refs[name] = (sha, max(writes, target.reflogs.get(name, 0)))
        for key, (chash, writes) in list(self.objects.items()):
            row = paired.get(key)
            self.objects[key] = (chash, max(writes, row.revision if row else 0))


def _advance(previous: tuple[str, int] | None, value: str) -> tuple[str, int]:
    if previous is None:
        return value, 1
    if previous[0] != value:
        return value, previous[1] + 1
    return previous


# -- the checks -----------------------------------------------------------------------------


@dataclass
class Verdict:
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    undeleted: list[str] = field(default_factory=list)
    diverged: list[str] = field(default_factory=list)
    written_twice: list[str] = field(default_factory=list)
    canonical_equal: bool = True
    paired: dict[tuple[str, str], Row] = field(default_factory=dict)

    def problems(self) -> list[str]:
        found = []
        for name in ("lost", "duplicated", "undeleted", "diverged", "written_twice"):
            entries = getattr(self, name)
            if entries:
                shown = ", ".join(entries[:8]) + (" …" if len(entries) > 8 else "")
                found.append(f"{len(entries)} {name.replace('_', ' ')}: {shown}")
        if not self.canonical_equal:
            found.append("target != source canonically (per-type snapshots differ)")
        return found


def verify(
    source: SourceState, target: TargetState, ledger: Ledger, repo_id: str, target_dir: Path
) -> Verdict:
    """Target against source: refs by value, forge objects by marker and by content."""
    verdict = Verdict()
    for name, sha in sorted(source.refs.items()):
        got = target.refs.get(name)
        if got is None:
            verdict.lost.append(name)
        elif got != sha:
            verdict.diverged.append(f"{name} is {got[:10]}, source {sha[:10]}")
        expected = ledger.refs.get(name, (sha, 1))[1]
        if target.reflogs.get(name, 0) > expected:
            verdict.written_twice.append(
                f"{name} written {target.reflogs[name]}x, needed {expected}"
            )
    for name in sorted(set(target.refs) - set(source.refs)):
        verdict.undeleted.append(name)

    prefix = f"reposync:{repo_id}:"
    by_marker: dict[tuple[str, str], list[Row]] = {}
    unpaired: list[Row] = []
    for row in target.rows:
        if row.marker and row.marker.startswith(prefix):
            source_type, _, identity = row.marker[len(prefix) :].partition(":")
            by_marker.setdefault((source_type, identity), []).append(row)
        else:
            unpaired.append(row)
    for key, rows in by_marker.items():
        if key not in source.objects:
            unpaired.extend(rows)
    for key, row in sorted(source.objects.items()):
        name = f"{key[0]} {key[1]}"
        found = by_marker.get(key, [])
        if not found:
            verdict.lost.append(name)
            continue
        if len(found) > 1:
            verdict.duplicated.append(f"{name} x{len(found)}")
        counterpart = found[0]
        verdict.paired[key] = counterpart
        if counterpart.content_hash != row.content_hash:
            verdict.diverged.append(f"{name} (target {counterpart.object_type} {counterpart.id})")
        expected = ledger.objects.get(key, (row.content_hash, 1))[1]
        if counterpart.revision > expected:
            verdict.written_twice.append(
                f"{name} (target id {counterpart.id}) revision {counterpart.revision}, "
                f"needed {expected}"
            )
    verdict.lost.extend(missing_assets(target_dir))
    copies = Counter(row.canonical for row in source.objects.values())
    for row in unpaired:
        name = f"{row.object_type} {row.id} (marker {row.marker})"
        if copies.get(row.canonical):
            verdict.duplicated.append(name)
        else:
            verdict.undeleted.append(name)
    source_canonical = sorted(row.canonical for row in source.objects.values())
    target_canonical = sorted(row.canonical for row in target.rows)
    verdict.canonical_equal = source_canonical == target_canonical
    return verdict


# -- the repository and its forge -----------------------------------------------------------


class World:
    """The source (repository + forge) and the target, and the seeded edits between rounds."""

    def __init__(self, root: Path, rng: random.Random, scale: float = 1.0) -> None:
        self.root = root
        self.rng = rng
        self.scale = scale
        self.source = root / "source.git"
        self.target = root / "target.git"
        self._tick = 0
        self._names = 0
        #: Pull requests' head branches: never deleted (their heads move on, though).
        self.pr_branches: list[str] = []

    def n(self, base: int) -> int:
        return max(1, round(base * self.scale))

    def when(self) -> datetime:
        self._tick += 1
        return WHEN + timedelta(minutes=self._tick)

    def name(self, prefix: str) -> str:
        self._names += 1
        return f"{prefix}-{self._names:05d}"

    # -- building ----------------------------------------------------------------------

    def build(self) -> None:
        branches, tags = self.n(30), self.n(20)
        generate(self.source, commits=self.n(150), branches=branches, tags=tags)
        self.pr_branches = [f"branch-{b:05d}" for b in range(min(8, branches))]
        init_bare(self.target)
        enable_reflog(self.target)
        self.install_push_hook()
        heads = refs(self.source)
        rng = self.rng
        with open_forge(self.source) as f:
            labels = [f.create_label(f"area/{i:02d}", color=_color(rng)) for i in range(16)]
            label_names = [f"area/{i:02d}" for i in range(len(labels))]
            for i in range(4):
                f.create_label(f"spare/{i:02d}", color=_color(rng), description="unused")
            milestones = [f"m{i}" for i in range(5)]
            for title in milestones:
                f.create_milestone(title, description=f"milestone {title}", due_on=self.when())
            for _ in range(self.n(50)):
                self._new_issue(f, label_names, milestones, comments=rng.randint(0, 6))
            for _ in range(self.n(12)):
                self._new_pull_request(f, heads, label_names)
            for t in range(min(8, tags)):
                self._new_release(f, f"v{t:05d}", assets=rng.randint(1, 2))

    def _new_issue(self, f: Any, labels: list[str], milestones: list[str], comments: int) -> str:
        rng = self.rng
        closed = rng.random() < 0.2
        issue = f.create_issue(
            f"Issue {self.name('i')}",
            author=rng.choice(AUTHORS),
            body=f"body {rng.getrandbits(32):08x}",
            created_at=self.when(),
            labels=rng.sample(labels, rng.randint(0, 2)),
            milestone=rng.choice([None, *milestones]),
            state="closed" if closed else "open",
            state_reason="completed" if closed else None,
            closed_at=self.when() if closed else None,
        )
        for _ in range(comments):
            self._new_comment(f, "issue", issue)
        return issue

    def _new_comment(self, f: Any, parent_type: str, parent: str) -> str:
        rng = self.rng
        return f.add_comment(
            parent_type,
            parent,
            f"comment {self.name('c')} {rng.getrandbits(24):06x}",
            author=rng.choice(AUTHORS),
            created_at=self.when(),
        )

    def _new_pull_request(self, f: Any, heads: dict[str, str], labels: list[str]) -> str:
        rng = self.rng
        branch = rng.choice(self.pr_branches)
        head_sha = heads[f"refs/heads/{branch}"]
        pr = f.create_pull_request(
            f"Change {self.name('p')}",
            author=rng.choice(AUTHORS),
            base_ref="main",
            base_sha=heads["refs/heads/main"],
            head_ref=branch,
            head_sha=head_sha,
            body="please review",
            created_at=self.when(),
            labels=rng.sample(labels, rng.randint(0, 1)),
        )
        review = f.add_review(
            pr,
            state=rng.choice(REVIEW_STATES),
            body=f"review {self.name('r')}",
            commit_id=head_sha,
            author=rng.choice(AUTHORS),
            submitted_at=self.when(),
        )
        first = f.add_review_comment(
            review,
            path=f"dir{rng.randint(0, 9)}/file.txt",
            line=rng.randint(1, 40),
            body=f"why {self.name('rc')}?",
            commit_id=head_sha,
            author=rng.choice(AUTHORS),
            created_at=self.when(),
        )
        if rng.random() < 0.5:
            f.add_review_comment(
                review,
                path="dir0/file.txt",
                line=3,
                body=f"because {self.name('rc')}",
                commit_id=head_sha,
                author=rng.choice(AUTHORS),
                created_at=self.when(),
                in_reply_to=first,
            )
        for _ in range(rng.randint(0, 2)):
            self._new_comment(f, "pull_request", pr)
        return pr

    def _new_release(self, f: Any, tag: str, assets: int) -> str:
        rng = self.rng
        release = f.create_release(
            tag,
            author=rng.choice(AUTHORS),
            name=f"Release {tag}",
            body=f"notes {rng.getrandbits(32):08x}",
            created_at=self.when(),
            published_at=self.when(),
        )
        for a in range(assets):
            content = rng.randbytes(rng.randint(100, 4000))
            f.upload_asset(release, f"{tag}-{a}.tar.gz", content, content_type="application/gzip")
        return release

    @property
    def push_marker(self) -> Path:
        return self.root / "push-holds-ref-locks"

    def install_push_hook(self) -> None:
        """A ``reference-transaction`` hook on the target that holds every push's ref
        locks for a moment (a slow disk, a big transaction), and says so in a marker
        file: the window in which a killed or frozen push leaves its ``.lock`` files."""
        hook = self.target / "hooks" / "reference-transaction"
        hook.parent.mkdir(exist_ok=True)
        hook.write_text(
            "#!/bin/sh\n"
            "# chaos suite: hold the locks of a prepared ref transaction for a moment\n"
            'if [ "$1" = prepared ]; then\n'
            "  cat >/dev/null\n"
            f'  echo $$ > "{self.push_marker}"\n'
            f"  sleep {PUSH_SLEEP}\n"
            f'  rm -f "{self.push_marker}"\n'
            "else\n"
            "  cat >/dev/null\n"
            "fi\n"
        )
        hook.chmod(0o755)

    def push_holds_locks(self) -> bool:
        """Whether a push to the target is inside its prepared ref transaction now."""
        try:
            pid = int(self.push_marker.read_text().strip())
            stat = Path(f"/proc/{pid}/stat").read_text()  # gone: not holding them
        except (OSError, ValueError):
            return False
        state = stat.rsplit(")", 1)[-1].split()[0]
        return state != "T"  # not a frozen one

    # -- mutating ----------------------------------------------------------------------

    def mutate(self, round_no: int) -> list[str]:
        """Seeded edits between two rounds; returns what was done, for the report."""
        rng = self.rng
        done: list[str] = []
        heads = refs(self.source)
        with open_forge(self.source) as f:
            issues = f.reader.objects_of("issue")
            comments = f.reader.objects_of("issue_comment")
            labels = f.reader.objects_of("label")
            milestones = f.reader.objects_of("milestone")
            releases = f.reader.objects_of("release")
            pulls = f.reader.objects_of("pull_request")
            reviews = f.reader.objects_of("review")
            label_names = [
                o.payload["name"] for o in labels if o.payload["name"].startswith("area")
            ]
            milestone_titles = [o.payload["title"] for o in milestones]

            # A milestone changes every round: its batch is where the target transaction
            # of the "SIGSTOP inside a target transaction" fault is caught.
            ms = rng.choice(milestones)
            f.update("milestone", ms.identity, description=f"round {round_no} {rng.random():.6f}")
            done.append(f"edit milestone {ms.identity}")

            by_parent: dict[str, list[Any]] = {}
            for comment in comments:
                by_parent.setdefault(comment.refs["parent"].identity, []).append(comment)
            crowded = [i for i in issues if len(by_parent.get(i.identity, [])) >= 3]
            if crowded:  # several deletes at once: comments of one issue
                issue = rng.choice(crowded)
                victims = rng.sample(
                    by_parent[issue.identity],
                    rng.randint(2, min(5, len(by_parent[issue.identity]))),
                )
                for comment in victims:
                    f.delete("issue_comment", comment.identity)
                done.append(f"delete {len(victims)} comments of issue {issue.identity}")
            gone = {c.identity for c in comments} - {
                c.identity for c in f.reader.objects_of("issue_comment")
            }

            for issue in rng.sample(issues, min(len(issues), rng.randint(1, 4))):
                change: dict[str, Any] = {"title": f"{issue.payload['title']} ({round_no})"}
                if rng.random() < 0.3:
                    if issue.payload["state"] == "open":
                        change.update(
                            state="closed", state_reason="completed", closed_at=self.when()
                        )
                    else:
                        change.update(state="open", state_reason="reopened", closed_at=None)
                f.update("issue", issue.identity, **change)
                done.append(f"edit issue {issue.identity}")
            alive = [c for c in comments if c.identity not in gone]
            for comment in rng.sample(alive, min(len(alive), rng.randint(1, 4))):
                f.update("issue_comment", comment.identity, body=f"edited in round {round_no}")
                done.append(f"edit comment {comment.identity}")
            for _ in range(rng.randint(1, 3)):
                issue = self._new_issue(f, label_names, milestone_titles, rng.randint(0, 4))
                done.append(f"new issue {issue}")
            for issue in rng.sample(issues, min(len(issues), rng.randint(1, 3))):
                comment = self._new_comment(f, "issue", issue.identity)
                done.append(f"new comment {comment} on issue {issue.identity}")
            if rng.random() < 0.35 and len(issues) > 10:  # an issue and its comments
                issue = rng.choice(issues)
                f.delete("issue", issue.identity)
                done.append(f"delete issue {issue.identity} (and its comments)")

            if rng.random() < 0.5:
                name = self.name("new")
                f.create_label(f"spare/{name}", color=_color(rng))
                done.append(f"new label spare/{name}")
            # A label changes every round too: its batch holds the moment right after the
            # target committed and before the engine recorded it.
            label = rng.choice(labels)
            f.update("label", label.identity, color=_color(rng), description=f"r{round_no}")
            done.append(f"edit label {label.identity}")
            spare = [o for o in labels if o.payload["name"].startswith("spare/")]
            if spare and rng.random() < 0.4:
                label = rng.choice(spare)
                f.delete("label", label.identity)
                done.append(f"delete label {label.identity}")

            if rng.random() < 0.4:
                pr = self._new_pull_request(f, heads, label_names)
                done.append(f"new pull request {pr}")
            if pulls and rng.random() < 0.5:
                pr = rng.choice(pulls)
                f.update("pull_request", pr.identity, title=f"{pr.payload['title']} [{round_no}]")
                done.append(f"edit pull request {pr.identity}")
            if reviews and rng.random() < 0.3:
                review = rng.choice(reviews)
                f.update("review", review.identity, body=f"revised in round {round_no}")
                done.append(f"edit review {review.identity}")

            taken = {o.payload["tag"] for o in releases}
            free_tags = sorted(
                name[len("refs/tags/") :]
                for name in heads
                if name.startswith("refs/tags/") and name[len("refs/tags/") :] not in taken
            )
            if free_tags and rng.random() < 0.4:
                release = self._new_release(f, rng.choice(free_tags), rng.randint(1, 2))
                done.append(f"new release {release}")
            if releases and rng.random() < 0.5:
                release = rng.choice(releases)
                f.update("release", release.identity, body=f"notes of round {round_no}")
                done.append(f"edit release {release.identity}")
            if len(releases) > 3 and rng.random() < 0.25:
                release = rng.choice(releases)
                f.delete("release", release.identity)
                done.append(f"delete release {release.identity} (and its assets)")

        branches = sorted(n for n in heads if n.startswith("refs/heads/branch-"))
        for ref in rng.sample(branches, min(len(branches), rng.randint(1, 3))):
            commit_on(self.source, ref, f"round {round_no} on {ref} {rng.getrandbits(32):08x}")
            done.append(f"commit on {ref}")
        deletable = [b for b in branches if b[len("refs/heads/") :] not in self.pr_branches]
        if deletable and rng.random() < 0.6:
            victims = rng.sample(deletable, min(len(deletable), rng.randint(1, 3)))
            delete_refs(self.source, victims)
            done.append(f"delete branches {', '.join(victims)}")
        if rng.random() < 0.4:
            name = f"refs/heads/{self.name('topic')}"
            set_ref(self.source, name, refs(self.source)["refs/heads/main"])
            commit_on(self.source, name, f"start {name}")
            done.append(f"new branch {name}")
        if rng.random() < 0.3:
            name = f"refs/tags/{self.name('t')}"
            set_ref(self.source, name, refs(self.source)["refs/heads/main"])
            done.append(f"new tag {name}")
        return done


def _color(rng: random.Random) -> str:
    return hashlib.sha256(rng.randbytes(8)).hexdigest()[:6]
