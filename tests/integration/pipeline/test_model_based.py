"""Model-based: random source histories interleaved with Runs, through the real pipeline.

A hypothesis ``RuleBasedStateMachine`` drives one embedded Binding (SQLite, local forge A
-> local forge B, every stage executed in-process by ``reposync.service.embedded.sync``).
Each example starts from a source holding some of everything (0-2 rounds of every type)
and a batch size of 500, 2 or 1 items (small batches split every phase). The rules mutate
the *source* only:

* Git: new commits on branches (new branches too, "feature" beside "feature/a" refused as
  Git does), force-pushes to an older or an unrelated commit (a new root), several
  branches deleted at once, tags created, moved (lightweight or annotated) and deleted, a
  real branch named like reposync's own shadow branch, refs outside branches and tags;
* every forge type: labels and milestones (create, edit, rename, swap names, delete
  several, delete and recreate with the same name; issues and pull requests follow a
  rename or a delete as on a forge), issues (create, edit, close/reopen, delete several,
  delete and recreate, recreate under the same number), pull requests (create on a
  branch, a fork's branch or a missing commit, edit, close/reopen, merge, push to the
  head, delete several, recreate, give the number to an issue), comments (edit,
  identical twins, delete several, delete and recreate identically), reviews (edit,
  twins, delete), review comments and replies, review requests (add, remove, remove and
  add again), releases (edit, retag, delete, recreate) and their assets (upload, rename,
  remove, re-upload), reactions (add, remove).

The source itself is the model. Runs are rules too: a checkpoint Run, a full-audit Run, a
dry run (checkpoint or full), and (once per example) a handoff to the standby and back,
after each of which a full-audit dry run in the new direction plans no write (issue 23:
a pull request's shadow branch was planned for the old authority). The source never
changes during a Run, so every Run must end ``completed`` with no follow-up Run. After
every applying Run (and the handoffs' forward Runs):

* the target equals the source canonically: per forge type the (number, unique key,
  content hash, replied-to comment) of every object, identities left out; a local
  target holds review requests natively; reactions are archive-only (never written);
  Git refs are equal, the target holding in addition one shadow branch
  ``refs/heads/reposync/pr/<N>/head`` per open pull request whose head commit exists
  in the source but is not what its head branch points at and whose shadow name is no
  real branch (the rule of ``reposync.sync.canonical.shadow_refs``, restated here as
  the oracle);
* when the source did not change since the last converged Run (same objects, same
  identities, same hashes, same refs), the Run wrote nothing: no RunItem with a write
  action, no target writes and no Git push in its ``io`` (a checkpoint not even a target
  read), the target's rows and revisions untouched;
* when a dry run of the same state and audit mode came right before, the Run's items
  are exactly the ones the dry run planned.

A dry run never changes anything on the target (refs, rows and their revisions, asset
files, the standby mark) and, on a converged pair, plans no write.

Profiles (applied to this module's test only):

* normal suite (default): 20 examples of at most 40 steps, about 25 s when it passes on the
  project's 2-core machine. Failures are not shrunk here (shrinking a stateful failure
  through the real pipeline takes minutes): the failing steps are printed as found and
  replayed first on the next run from hypothesis's example database (``.hypothesis/``).
  ``REPOSYNC_MODEL_SHRINK=1`` shrinks them;
* soak: ``REPOSYNC_SOAK=1 .venv/bin/pytest tests/integration/pipeline/test_model_based.py``: 500
  examples of at most 60 steps, shrinking on, no pytest timeout;
  ``REPOSYNC_SOAK_EXAMPLES=N`` and ``REPOSYNC_SOAK_STEPS=N`` change the sizes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pygit2
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule
from sqlalchemy import func, select

from reposync.config import Settings
from reposync.models import Run, RunItem
from reposync.models.db import Database
from reposync.providers.base import EndpointSpec
from reposync.providers.local import LocalProvider
from reposync.providers.local.authoring import ForgeAuthoring
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext
from reposync.service.embedded import sync
from reposync.service.handoff import WRITE_ACTIONS, handoff
from reposync.sync.canonical import ObjectRef
from reposync.sync.vocabulary import ObjectType
from tests.gitrepo import generate, init_bare, refs

SOAK = os.environ.get("REPOSYNC_SOAK", "") not in ("", "0")
SHRINK = SOAK or os.environ.get("REPOSYNC_MODEL_SHRINK", "") not in ("", "0")

settings.register_profile(
    "reposync-model",
    max_examples=20,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    phases=list(Phase) if SHRINK else [p for p in Phase if p is not Phase.shrink],
)
settings.register_profile(
    "reposync-model-soak",
    max_examples=int(os.environ.get("REPOSYNC_SOAK_EXAMPLES", "500")),
    stateful_step_count=int(os.environ.get("REPOSYNC_SOAK_STEPS", "60")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
PROFILE = settings.get_profile("reposync-model-soak" if SOAK else "reposync-model")

pytestmark = pytest.mark.timeout(0 if SHRINK else 600)

WHEN = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SIGNATURE = pygit2.Signature("Model", "model@example.com", 1_700_000_000, 0)
FORGE_TYPES = [t for t in ObjectType if t is not ObjectType.GIT_REF]
#: Types the target never holds as such: archive-only.
NOT_ON_TARGET = (ObjectType.REACTION,)
SHADOW = "refs/heads/reposync/pr/{}/head"

#: "feature" and "feature/a" cannot both exist (Git's directory/file rule).
#: "v1" is a tag's name too.
BRANCHES = ["main", "fix", "dev", "feature/a", "feature", "release-1", "v1"]
TAGS = ["v1", "v2", "v3", "v4"]
RELEASE_TAGS = ["v1", "v2", "v3", "v4", "v9-notag"]
HEAD_REFS = ["fix", "dev", "feature/a", "fork:patch-1", "gone"]
LABELS = ["bug", "docs", "ui", "needs design 🎨", "perf"]
MILESTONES = ["v1.0", "v2.0", "later"]
COLORS = ["d73a4a", "0075ca", "a2eeef", "000000"]
USERS = ["ann", "bob", "carol", "dave"]
ASSETS = ["app.tar.gz", "app.zip", "notes.txt"]
REACTIONS = ["+1", "-1", "heart", "rocket"]
TEXTS = ["hello", "see #1", "LGTM", "", "why?", "multi\nline", "über 🎉"]
MISSING_SHA = "0123456789abcdef0123456789abcdef01234567"

picks = st.integers(min_value=0, max_value=999)
many = st.lists(picks, min_size=2, max_size=4)


def _commits_of(repo: pygit2.Repository) -> list[str]:
    found: list[str] = []
    for ref in repo.references.iterator():
        if ref.type == pygit2.enums.ReferenceType.SYMBOLIC:
            continue
        for commit in repo.walk(ref.peel(pygit2.Commit).id, pygit2.enums.SortMode.TOPOLOGICAL):
            if str(commit.id) not in found:
                found.append(str(commit.id))
    return found


class ForgeSync(RuleBasedStateMachine):
    """One example: a source, an empty standby, one embedded database."""

    template: Path | None = None

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="reposync-model-"))
        data = self.root / "data"
        data.mkdir()
        if ForgeSync.template is None:  # migrate once, copy the file for every example
            ForgeSync.template = Path(tempfile.mkdtemp(prefix="reposync-model-db-")) / "t.db"
            db = Database(f"sqlite:///{ForgeSync.template}")
            db.upgrade()
            db.dispose()
        shutil.copy(ForgeSync.template, data / "reposync.db")
        config = Settings(data_dir=data, lease_ttl=30)
        self.db = Database(config.effective_database_url)
        self.ctx = ServiceContext(settings=config, db=self.db)
        self.source = generate(self.root / "src.git", commits=3, branches=0, tags=0)
        self.target = init_bare(self.root / "dst.git")
        self.repo = pygit2.Repository(str(self.source))
        self.provider = LocalProvider.open(EndpointSpec("local", str(self.source)))
        self.forge = ForgeAuthoring(self.provider.forge)
        self.commits = _commits_of(self.repo)
        self.tick = 0
        #: The source's fingerprint (identities, hashes, refs) at the last converged Run.
        self.converged: Any = None
        #: (fingerprint, full audit, items) of the last dry run.
        self.dry_plan: Any = None
        #: Whether this example handed the authority over and back already.
        self.handed_over = False

    @initialize(
        rounds=st.integers(min_value=0, max_value=2),
        batch=st.sampled_from([500, 2, 1]),
    )
    def populate(self, rounds, batch):
        """Start from a source holding some of everything (``rounds`` times over), so the
        first steps already have objects of every type to edit and delete; ``batch``
        items per physical batch (small ones split every phase into several)."""
        config = self.ctx.settings.with_overrides(
            batch_max_items=batch, git_batch_max_items=batch * 2
        )
        self.ctx = ServiceContext(settings=config, db=self.db)
        for k in range(rounds):
            f = self.forge
            self.set_branch(BRANCHES[1 + k], self.new_commit(self.commits[0], f"work {k}"))
            self.repo.references.create(f"refs/tags/{TAGS[k]}", pygit2.Oid(hex=self.commits[k]))
            f.create_label(LABELS[2 * k], color=COLORS[k])
            f.create_label(LABELS[2 * k + 1], color=COLORS[k + 1], description="some")
            f.create_milestone(MILESTONES[k], description="first", due_on=WHEN)
            issue = f.create_issue(
                f"issue {k}",
                author="ann",
                body="See #1",
                created_at=self.now(),
                labels=[LABELS[2 * k]],
                milestone=MILESTONES[k],
            )
            comment = f.add_comment("issue", issue, "me too", author="bob", created_at=self.now())
            f.add_reaction("issue_comment", comment, "+1", "carol", created_at=self.now())
            for head_ref in (BRANCHES[1 + k], HEAD_REFS[3]):  # on its branch, from a fork
                pull = f.create_pull_request(
                    f"pull {k} from {head_ref}",
                    author="bob",
                    created_at=self.now(),
                    base_ref="main",
                    base_sha=self.commits[0],
                    head_ref=head_ref,
                    head_sha=self.commits[-1],
                    labels=[LABELS[2 * k + 1]],
                )
                f.add_comment("pull_request", pull, "LGTM?", author="ann", created_at=self.now())
                review = f.add_review(
                    pull,
                    state="COMMENTED",
                    body="a few notes",
                    commit_id=self.commits[-1],
                    author="carol",
                    submitted_at=self.now(),
                )
                first = f.add_review_comment(
                    review,
                    path="app.py",
                    line=3,
                    body="why?",
                    commit_id=self.commits[-1],
                    author="carol",
                    created_at=self.now(),
                )
                f.add_review_comment(
                    review,
                    path="app.py",
                    line=3,
                    body="because",
                    commit_id=self.commits[-1],
                    author="bob",
                    created_at=self.now(),
                    in_reply_to=first,
                )
                f.request_review(pull, USERS[3 - k], requested_at=self.now())
            release = f.create_release(
                TAGS[k], author="ann", name="First", body="notes", created_at=self.now()
            )
            f.upload_asset(release, ASSETS[k], b"\x1f\x8b" + bytes([k]) * 3000)

    def teardown(self) -> None:
        self.provider.close()
        self.repo.free()
        self.db.dispose()
        shutil.rmtree(self.root, ignore_errors=True)

    # -- helpers ----------------------------------------------------------------------

    def now(self) -> datetime:
        self.tick += 1
        return WHEN + timedelta(minutes=self.tick)

    def objects(self, *types: ObjectType) -> list[Any]:
        found: list[Any] = []
        for object_type in types:
            found.extend(self.forge.reader.objects_of(object_type))
        return found

    def pick(self, objects: list[Any], n: int) -> Any:
        return objects[n % len(objects)]

    def several(self, objects: list[Any], ns: list[int]) -> list[Any]:
        chosen: dict[str, Any] = {}
        for n in ns:
            obj = objects[n % len(objects)]
            chosen.setdefault(obj.identity, obj)
        return list(chosen.values())

    def free(self, pool: list[str], taken: set[str], n: int) -> str | None:
        names = [name for name in pool if name not in taken]
        return names[n % len(names)] if names else None

    def commit(self, n: int) -> str:
        return self.commits[n % len(self.commits)]

    def branches(self) -> dict[str, str]:
        return {
            name.removeprefix("refs/heads/"): oid
            for name, oid in refs(self.source).items()
            if name.startswith("refs/heads/")
        }

    def tags(self) -> list[str]:
        return [n for n in refs(self.source) if n.startswith("refs/tags/")]

    def new_commit(self, parent: str | None, message: str) -> str:
        if parent is None:  # an unrelated history
            builder = self.repo.TreeBuilder()
        else:
            builder = self.repo.TreeBuilder(self.repo.get(parent).peel(pygit2.Commit).tree)
        builder.insert(
            f"f{len(self.commits)}.txt", self.repo.create_blob(message), pygit2.enums.FileMode.BLOB
        )
        parents = [] if parent is None else [pygit2.Oid(hex=parent)]
        oid = str(
            self.repo.create_commit(None, SIGNATURE, SIGNATURE, message, builder.write(), parents)
        )
        self.commits.append(oid)
        return oid

    def set_branch(self, name: str, oid: str) -> None:
        for other in self.branches():  # Git holds no "feature" beside "feature/a"
            if other != name and (other.startswith(f"{name}/") or name.startswith(f"{other}/")):
                return
        self.repo.references.create(f"refs/heads/{name}", pygit2.Oid(hex=oid), force=True)

    def numbered(self) -> list[Any]:
        return self.objects(ObjectType.ISSUE, ObjectType.PULL_REQUEST)

    def retarget(self, field: str, old: str, new: str | None) -> None:
        """A label or milestone renamed (``new``) or deleted (``None``): issues and pull
        requests follow, as on a forge."""
        for obj in self.numbered():
            if field == "labels" and old in obj.payload["labels"]:
                names = [n for n in obj.payload["labels"] if n != old]
                if new is not None:
                    names.append(new)
                self.forge.update(obj.object_type, obj.identity, labels=names)
            elif field == "milestone" and obj.payload["milestone"] == old:
                self.forge.update(obj.object_type, obj.identity, milestone=new)

    def recreate(self, obj: Any, changes: dict[str, Any] | None = None) -> str:
        """Delete ``obj`` and create it again with the same content (plus ``changes``)."""
        fields = {k: v for k, v in obj.payload.items() if k != "is_reply"}
        fields.update(changes or {})
        parent = obj.refs.get("parent")
        self.forge.delete(obj.object_type, obj.identity)
        if obj.object_type is ObjectType.LABEL:
            return self.forge.create_label(**fields)
        if obj.object_type is ObjectType.MILESTONE:
            return self.forge.create_milestone(**fields)
        if obj.object_type is ObjectType.ISSUE:
            number = fields.pop("number", None)
            return self.forge.create_issue(fields.pop("title"), number=number, **fields)
        if obj.object_type is ObjectType.PULL_REQUEST:
            number = fields.pop("number", None)
            return self.forge.create_pull_request(fields.pop("title"), number=number, **fields)
        if obj.object_type is ObjectType.ISSUE_COMMENT:
            return self.forge.add_comment(
                parent.object_type, parent.identity, fields.pop("body"), **fields
            )
        if obj.object_type is ObjectType.REVIEW_REQUEST:
            return self.forge.request_review(parent.identity, **fields)
        if obj.object_type is ObjectType.RELEASE:
            return self.forge.create_release(fields.pop("tag"), **fields)
        raise AssertionError(f"no recreate for {obj.object_type}")

    # -- Git --------------------------------------------------------------------------

    @rule(
        op=st.sampled_from(
            [
                "commit",
                "force_older",
                "force_unrelated",
                "delete_branches",
                "tag",
                "delete_tags",
                "shadow_named_branch",
                "unsupported_ref",
            ]
        ),
        n=picks,
        ns=many,
        flag=st.booleans(),
    )
    def git(self, op, n, ns, flag):
        branches = self.branches()
        if op == "commit" or not branches:
            name = BRANCHES[n % len(BRANCHES)]
            parent = branches.get(name) or self.commit(ns[0])
            self.set_branch(name, self.new_commit(parent, f"commit {len(self.commits)}"))
        elif op == "force_older":  # to an ancestor, else to any other commit
            name = self.pick(sorted(branches), n)
            tip = self.repo.get(branches[name]).peel(pygit2.Commit)
            self.set_branch(name, str(tip.parent_ids[0]) if tip.parent_ids else self.commit(ns[0]))
        elif op == "force_unrelated":  # a brand new root commit, or any known commit
            name = self.pick(sorted(branches), n)
            oid = self.new_commit(None, f"orphan {len(self.commits)}") if flag else None
            self.set_branch(name, oid or self.commit(ns[0]))
        elif op == "delete_branches":
            names = sorted(branches)
            for name in {names[i % len(names)] for i in ns}:
                self.repo.references.delete(f"refs/heads/{name}")
        elif op == "tag":  # create or move, lightweight or annotated
            name = TAGS[n % len(TAGS)]
            if f"refs/tags/{name}" in self.repo.references:
                self.repo.references.delete(f"refs/tags/{name}")
            oid = pygit2.Oid(hex=self.commit(ns[0]))
            if flag:
                self.repo.create_tag(name, oid, pygit2.enums.ObjectType.COMMIT, SIGNATURE, name)
            else:
                self.repo.references.create(f"refs/tags/{name}", oid)
        elif op == "delete_tags":
            tags = self.tags()
            for name in {tags[i % len(tags)] for i in ns} if tags else ():
                self.repo.references.delete(name)
        elif op == "shadow_named_branch":  # a real branch where a shadow would go
            pulls = self.objects(ObjectType.PULL_REQUEST)
            number = self.pick(pulls, n).number if pulls else 1 + n % 3
            self.set_branch(f"reposync/pr/{number}/head", self.commit(ns[0]))
        elif op == "unsupported_ref":  # never synced (only branches and tags are)
            name = ["refs/notes/commits", "refs/pull/1/head", "refs/remotes/origin/main"][n % 3]
            self.repo.references.create(name, pygit2.Oid(hex=self.commit(ns[0])), force=True)

    # -- labels and milestones --------------------------------------------------------

    @rule(
        op=st.sampled_from(
            [
                "label_create",
                "label_edit",
                "label_rename",
                "label_swap",
                "labels_delete",
                "label_recreate",
                "milestone_create",
                "milestone_edit",
                "milestone_rename",
                "milestones_delete",
                "milestone_recreate",
            ]
        ),
        n=picks,
        ns=many,
        flag=st.booleans(),
    )
    def taxonomy(self, op, n, ns, flag):
        labels = self.objects(ObjectType.LABEL)
        milestones = self.objects(ObjectType.MILESTONE)
        if op.startswith("label") and not labels:
            op = "label_create"
        if op.startswith("milestone") and not milestones:
            op = "milestone_create"
        label_names = {o.payload["name"] for o in labels}
        titles = {o.payload["title"] for o in milestones}
        if op == "label_create":
            name = self.free(LABELS, label_names, n)
            if name is not None:
                self.forge.create_label(name, color=COLORS[ns[0] % len(COLORS)])
        elif op == "label_edit":
            label = self.pick(labels, n)
            changes = (
                {"color": COLORS[ns[0] % len(COLORS)]}
                if flag
                else {"description": TEXTS[ns[0] % len(TEXTS)]}
            )
            self.forge.update(ObjectType.LABEL, label.identity, **changes)
        elif op == "label_rename":
            label = self.pick(labels, n)
            new = self.free(LABELS, label_names, ns[0])
            if new is not None:
                self.forge.update(ObjectType.LABEL, label.identity, name=new)
                self.retarget("labels", label.payload["name"], new)
        elif op == "label_swap":
            first, second = self.pick(labels, ns[0]), self.pick(labels, ns[1])
            if first.identity != second.identity:
                a, b = first.payload["name"], second.payload["name"]
                self.forge.update(ObjectType.LABEL, first.identity, name="swapping")
                self.forge.update(ObjectType.LABEL, second.identity, name=a)
                self.forge.update(ObjectType.LABEL, first.identity, name=b)
                for obj in self.numbered():
                    names = obj.payload["labels"]
                    if a in names or b in names:
                        swapped = [b if x == a else a if x == b else x for x in names]
                        self.forge.update(obj.object_type, obj.identity, labels=swapped)
        elif op == "labels_delete":
            for label in self.several(labels, ns):
                self.forge.delete(ObjectType.LABEL, label.identity)
                self.retarget("labels", label.payload["name"], None)
        elif op == "label_recreate":  # same name: same content, or another color
            label = self.pick(labels, n)
            self.recreate(label, None if flag else {"color": COLORS[ns[0] % len(COLORS)]})
        elif op == "milestone_create":
            title = self.free(MILESTONES, titles, n)
            if title is not None:
                due = None if flag else WHEN + timedelta(days=ns[0] % 30)
                self.forge.create_milestone(
                    title, description=TEXTS[ns[1] % len(TEXTS)], due_on=due
                )
        elif op == "milestone_edit":
            milestone = self.pick(milestones, n)
            changes = (
                {"state": "closed" if milestone.payload["state"] == "open" else "open"}
                if flag
                else {"description": TEXTS[ns[0] % len(TEXTS)]}
            )
            self.forge.update(ObjectType.MILESTONE, milestone.identity, **changes)
        elif op == "milestone_rename":
            milestone = self.pick(milestones, n)
            new = self.free(MILESTONES, titles, ns[0])
            if new is not None:
                self.forge.update(ObjectType.MILESTONE, milestone.identity, title=new)
                self.retarget("milestone", milestone.payload["title"], new)
        elif op == "milestones_delete":
            for milestone in self.several(milestones, ns):
                self.forge.delete(ObjectType.MILESTONE, milestone.identity)
                self.retarget("milestone", milestone.payload["title"], None)
        elif op == "milestone_recreate":
            milestone = self.pick(milestones, n)
            self.recreate(milestone, None if flag else {"description": "recreated"})

    # -- issues and pull requests -----------------------------------------------------

    def _labels_and_milestone(self, ns: list[int]) -> tuple[list[str], str | None]:
        labels = sorted(o.payload["name"] for o in self.objects(ObjectType.LABEL))
        milestones = sorted(o.payload["title"] for o in self.objects(ObjectType.MILESTONE))
        chosen = sorted({labels[i % len(labels)] for i in ns[1:]}) if labels else []
        milestone = milestones[ns[0] % len(milestones)] if milestones and ns[0] % 2 else None
        return chosen, milestone

    @rule(
        op=st.sampled_from(
            ["create", "edit", "close_reopen", "delete_several", "recreate", "recreate_number"]
        ),
        n=picks,
        ns=many,
        flag=st.booleans(),
    )
    def issues(self, op, n, ns, flag):
        issues = self.objects(ObjectType.ISSUE)
        if not issues:
            op = "create"
        if op == "create":
            labels, milestone = self._labels_and_milestone(ns)
            self.forge.create_issue(
                f"issue {self.tick}",
                author=USERS[n % len(USERS)],
                body=TEXTS[ns[0] % len(TEXTS)],
                created_at=self.now(),
                labels=labels,
                milestone=milestone,
            )
        elif op == "edit":
            issue = self.pick(issues, n)
            if flag:
                labels, milestone = self._labels_and_milestone(ns)
                changes: dict[str, Any] = {"labels": labels, "milestone": milestone}
            else:
                changes = {
                    "title": f"edited {self.tick}",
                    "body": TEXTS[ns[0] % len(TEXTS)],
                    "assignees": [USERS[i % len(USERS)] for i in ns],
                    "locked": bool(ns[1] % 2),
                }
                self.tick += 1
            self.forge.update(ObjectType.ISSUE, issue.identity, **changes)
        elif op == "close_reopen":
            issue = self.pick(issues, n)
            if issue.payload["state"] == "open":
                reason = "completed" if flag else "not_planned"
                changes = {"state": "closed", "state_reason": reason, "closed_at": self.now()}
            else:
                changes = {"state": "open", "state_reason": "reopened", "closed_at": None}
            self.forge.update(ObjectType.ISSUE, issue.identity, **changes)
        elif op == "delete_several":
            for issue in self.several(issues, ns):
                self.forge.delete(ObjectType.ISSUE, issue.identity)
        elif op == "recreate":  # same title and content, a new number
            self.recreate(self.pick(issues, n))
        elif op == "recreate_number":  # the local forge lets a number be given again
            issue = self.pick(issues, n)
            self.recreate(issue, {"number": issue.number, "title": f"again {self.tick}"})

    @rule(
        op=st.sampled_from(
            [
                "create",
                "edit",
                "close_reopen",
                "merge",
                "push",
                "delete_several",
                "recreate",
                "recreate_as_issue",
            ]
        ),
        n=picks,
        ns=many,
        flag=st.booleans(),
    )
    def pulls(self, op, n, ns, flag):
        pulls = self.objects(ObjectType.PULL_REQUEST)
        if not pulls:
            op = "create"
        if op == "create":
            head_ref = HEAD_REFS[n % len(HEAD_REFS)]
            branches = self.branches()
            choice = ns[0] % 4
            if choice == 0 and head_ref in branches:
                head_sha = branches[head_ref]  # the head is the branch: no shadow
            elif choice == 3:
                head_sha = MISSING_SHA  # a commit this repository lacks: no shadow either
            else:
                head_sha = self.commit(ns[1])
            labels, milestone = self._labels_and_milestone(ns)
            self.forge.create_pull_request(
                f"pull {self.tick}",
                author=USERS[n % len(USERS)],
                body=TEXTS[ns[1] % len(TEXTS)],
                created_at=self.now(),
                base_ref="main",
                base_sha=self.commits[0],
                head_ref=head_ref,
                head_sha=head_sha,
                labels=labels,
                milestone=milestone,
                draft=flag,
            )
        elif op == "edit":
            pull = self.pick(pulls, n)
            self.forge.update(
                ObjectType.PULL_REQUEST,
                pull.identity,
                title=f"edited {self.tick}",
                body=TEXTS[ns[0] % len(TEXTS)],
                draft=flag,
            )
            self.tick += 1
        elif op == "close_reopen":
            pull = self.pick(pulls, n)
            if pull.payload["state"] == "open":
                changes: dict[str, Any] = {"state": "closed", "closed_at": self.now()}
            elif not pull.payload["merged"]:
                changes = {"state": "open", "closed_at": None}
            else:
                return  # a merged pull request stays closed
            self.forge.update(ObjectType.PULL_REQUEST, pull.identity, **changes)
        elif op == "merge":
            open_pulls = [p for p in pulls if p.payload["state"] == "open"]
            if open_pulls:
                pull = self.pick(open_pulls, n)
                at = self.now()
                self.forge.update(
                    ObjectType.PULL_REQUEST,
                    pull.identity,
                    state="closed",
                    merged=True,
                    merged_at=at,
                    closed_at=at,
                )
        elif op == "push":  # the head moves: to its branch's tip, or elsewhere
            pull = self.pick(pulls, n)
            tip = self.branches().get(pull.payload["head_ref"])
            head_sha = tip if flag and tip else self.commit(ns[0])
            self.forge.update(ObjectType.PULL_REQUEST, pull.identity, head_sha=head_sha)
        elif op == "delete_several":
            for pull in self.several(pulls, ns):
                self.forge.delete(ObjectType.PULL_REQUEST, pull.identity)
        elif op == "recreate":
            self.recreate(self.pick(pulls, n))
        elif op == "recreate_as_issue":  # its number given to an issue (the local forge allows it)
            pull = self.pick(pulls, n)
            self.forge.delete(ObjectType.PULL_REQUEST, pull.identity)
            self.forge.create_issue(
                pull.payload["title"],
                number=pull.number,
                author=pull.payload["author"],
                created_at=pull.payload["created_at"],
            )

    # -- comments ---------------------------------------------------------------------

    @rule(
        op=st.sampled_from(["add", "edit", "twin", "delete_several", "recreate"]),
        n=picks,
        ns=many,
    )
    def comments(self, op, n, ns):
        comments = self.objects(ObjectType.ISSUE_COMMENT)
        parents = self.numbered()
        if not comments:
            op = "add"
        if op == "add":
            if not parents:
                return
            parent = self.pick(parents, n)
            self.forge.add_comment(
                parent.object_type,
                parent.identity,
                TEXTS[ns[0] % len(TEXTS)],
                author=USERS[ns[1] % len(USERS)],
                created_at=self.now(),
            )
        elif op == "edit":
            comment = self.pick(comments, n)
            body = f"{TEXTS[ns[0] % len(TEXTS)]} (edited {self.tick})"
            self.tick += 1
            self.forge.update(ObjectType.ISSUE_COMMENT, comment.identity, body=body)
        elif op == "twin":  # the same author says the same thing in the same second: "+1"
            comment = self.pick(comments, n)
            parent = comment.refs["parent"]
            self.forge.add_comment(parent.object_type, parent.identity, **comment.payload)
        elif op == "delete_several":
            for comment in self.several(comments, ns):
                self.forge.delete(ObjectType.ISSUE_COMMENT, comment.identity)
        elif op == "recreate":  # identical content, a new identity
            self.recreate(self.pick(comments, n))

    # -- reviews, review comments, review requests -----------------------------------

    @rule(
        op=st.sampled_from(
            [
                "review",
                "review_edit",
                "review_twin",
                "reviews_delete",
                "comment",
                "comment_edit",
                "comments_delete",
                "request",
                "requests_remove",
                "request_again",
            ]
        ),
        n=picks,
        ns=many,
        flag=st.booleans(),
    )
    def reviews(self, op, n, ns, flag):
        pulls = self.objects(ObjectType.PULL_REQUEST)
        reviews = self.objects(ObjectType.REVIEW)
        comments = self.objects(ObjectType.REVIEW_COMMENT)
        requests = self.objects(ObjectType.REVIEW_REQUEST)
        if op in ("review_edit", "review_twin", "reviews_delete", "comment") and not reviews:
            op = "review"
        if op in ("comment_edit", "comments_delete") and not comments:
            op = "comment" if reviews else "review"
        if op in ("requests_remove", "request_again") and not requests:
            op = "request"
        if not pulls and op in ("review", "request"):
            return
        if op == "review":
            pull = self.pick(pulls, n)
            self.forge.add_review(
                pull.identity,
                state=["COMMENTED", "APPROVED", "CHANGES_REQUESTED"][ns[0] % 3],
                body=TEXTS[ns[1] % len(TEXTS)],
                commit_id=pull.payload["head_sha"],
                author=USERS[n % len(USERS)],
                submitted_at=self.now(),
            )
        elif op == "review_edit":
            review = self.pick(reviews, n)
            changes = {"state": "DISMISSED"} if flag else {"body": f"edited {self.tick}"}
            self.tick += 1
            self.forge.update(ObjectType.REVIEW, review.identity, **changes)
        elif op == "review_twin":  # the same review again: the same content-derived key
            review = self.pick(reviews, n)
            self.forge.add_review(review.refs["parent"].identity, **review.payload)
        elif op == "reviews_delete":
            for review in self.several(reviews, ns):
                self.forge.delete(ObjectType.REVIEW, review.identity)
        elif op == "comment":
            review = self.pick(reviews, n)
            siblings = [c for c in comments if c.refs["parent"].identity == review.identity]
            reply = self.pick(siblings, ns[0]).identity if flag and siblings else None
            self.forge.add_review_comment(
                review.identity,
                path=["app.py", "docs/readme.md"][ns[0] % 2],
                line=1 + ns[1] % 40,
                body=TEXTS[ns[1] % len(TEXTS)],
                commit_id=review.payload["commit_id"],
                author=USERS[n % len(USERS)],
                in_reply_to=reply,
                created_at=self.now(),
            )
        elif op == "comment_edit":
            comment = self.pick(comments, n)
            self.forge.update(ObjectType.REVIEW_COMMENT, comment.identity, body=f"e{self.tick}")
            self.tick += 1
        elif op == "comments_delete":
            for comment in self.several(comments, ns):
                self.forge.delete(ObjectType.REVIEW_COMMENT, comment.identity)
        elif op == "request":
            pull = self.pick(pulls, n)
            asked = {
                r.payload["reviewer"]
                for r in requests
                if r.refs["parent"].identity == pull.identity
            }
            reviewer = self.free(USERS, asked, ns[0])
            if reviewer is not None:
                at = None if flag else self.now()
                self.forge.request_review(pull.identity, reviewer, requested_at=at)
        elif op == "requests_remove":
            for request in self.several(requests, ns):
                self.forge.delete(ObjectType.REVIEW_REQUEST, request.identity)
        elif op == "request_again":  # removed and requested again: same or a new time
            request = self.pick(requests, n)
            self.recreate(request, None if flag else {"requested_at": self.now()})

    # -- releases and assets ----------------------------------------------------------

    @rule(
        op=st.sampled_from(
            [
                "create",
                "edit",
                "retag",
                "delete_several",
                "recreate",
                "upload",
                "rename_asset",
                "remove_assets",
                "reupload",
            ]
        ),
        n=picks,
        ns=many,
        flag=st.booleans(),
    )
    def releases(self, op, n, ns, flag):
        releases = self.objects(ObjectType.RELEASE)
        assets = self.objects(ObjectType.RELEASE_ASSET)
        tags = {r.payload["tag"] for r in releases}
        if not releases:
            op = "create"
        elif op in ("rename_asset", "remove_assets", "reupload") and not assets:
            op = "upload"
        if op == "create":
            tag = self.free(RELEASE_TAGS, tags, n)
            if tag is not None:
                self.forge.create_release(
                    tag,
                    author=USERS[ns[0] % len(USERS)],
                    name=f"Release {tag}",
                    body=TEXTS[ns[1] % len(TEXTS)],
                    prerelease=flag,
                    created_at=self.now(),
                    published_at=None if flag else WHEN,
                )
        elif op == "edit":
            release = self.pick(releases, n)
            changes: dict[str, Any] = (
                {"prerelease": not release.payload["prerelease"]}
                if flag
                else {"body": f"notes {self.tick}", "name": TEXTS[ns[0] % len(TEXTS)]}
            )
            self.tick += 1
            self.forge.update(ObjectType.RELEASE, release.identity, **changes)
        elif op == "retag":  # its assets' keys follow the tag
            release = self.pick(releases, n)
            tag = self.free(RELEASE_TAGS, tags, ns[0])
            if tag is not None:
                self.forge.update(ObjectType.RELEASE, release.identity, tag=tag)
        elif op == "delete_several":
            for release in self.several(releases, ns):
                self.forge.delete(ObjectType.RELEASE, release.identity)
        elif op == "recreate":  # the same tag again (its assets went with the old one)
            release = self.pick(releases, n)
            self.recreate(release, None if flag else {"body": "recreated"})
        elif op == "upload":
            release = self.pick(releases, n)
            names = {
                a.payload["name"] for a in assets if a.refs["parent"].identity == release.identity
            }
            name = self.free(ASSETS, names, ns[0])
            if name is not None:
                content = f"{name} {ns[1]}\n".encode() * (1 + ns[1] % 50)
                self.forge.upload_asset(release.identity, name, content)
        elif op == "rename_asset":
            asset = self.pick(assets, n)
            parent = asset.refs["parent"].identity
            names = {a.payload["name"] for a in assets if a.refs["parent"].identity == parent}
            name = self.free(ASSETS, names, ns[0])
            if name is not None:
                self.forge.update(ObjectType.RELEASE_ASSET, asset.identity, name=name)
        elif op == "remove_assets":
            for asset in self.several(assets, ns):
                self.forge.delete(ObjectType.RELEASE_ASSET, asset.identity)
        elif op == "reupload":  # removed and uploaded again under its name
            asset = self.pick(assets, n)
            with self.forge.assets.open_asset(asset.identity) as stream:
                content = stream.read()
            if not flag:
                content += b"v2\n"
            self.forge.delete(ObjectType.RELEASE_ASSET, asset.identity)
            self.forge.upload_asset(
                asset.refs["parent"].identity,
                asset.payload["name"],
                content,
                content_type=asset.payload["content_type"],
            )

    # -- reactions --------------------------------------------------------------------

    @rule(op=st.sampled_from(["add", "remove_several"]), n=picks, ns=many)
    def reactions(self, op, n, ns):
        reactions = self.objects(ObjectType.REACTION)
        if op == "add" or not reactions:
            parents = self.objects(
                ObjectType.ISSUE,
                ObjectType.PULL_REQUEST,
                ObjectType.ISSUE_COMMENT,
                ObjectType.REVIEW_COMMENT,
                ObjectType.RELEASE,
            )
            if not parents:
                return
            parent = self.pick(parents, n)
            user, content = USERS[ns[0] % len(USERS)], REACTIONS[ns[1] % len(REACTIONS)]
            taken = {
                (r.payload["user"], r.payload["content"])
                for r in reactions
                if r.refs["parent"] == ObjectRef(parent.object_type, parent.identity)
            }
            if (user, content) not in taken:
                self.forge.add_reaction(
                    parent.object_type, parent.identity, content, user, created_at=self.now()
                )
        else:
            for reaction in self.several(reactions, ns):
                self.forge.delete(ObjectType.REACTION, reaction.identity)

    # -- Runs -------------------------------------------------------------------------

    def request(self, *, full: bool = False, dry: bool = False) -> SyncRequest:
        return SyncRequest(
            f"local:{self.source}", f"local:{self.target}", full_audit=full, dry_run=dry
        )

    @rule()
    def checkpoint_run(self):
        self.applying_run(full=False)

    @rule()
    def full_audit_run(self):
        self.applying_run(full=True)

    @rule(full=st.booleans())
    def dry_run(self, full):
        before = self.target_rows()
        fingerprint = self.fingerprint()
        run = self.run(full=full, dry=True)
        assert self.target_rows() == before, "a dry run changed the target"
        planned = run.report["planned_actions"]
        if fingerprint == self.converged:  # nothing to do, and the plan says so
            assert not any(planned.get(a, 0) for a in ("create", "update", "delete")), planned
        self.dry_plan = (fingerprint, full, self.items(run.id))

    @precondition(lambda self: not self.handed_over)  # ~1 s each: once per example
    @rule()
    def handoff_and_back(self):
        """The standby becomes the authority, then hands it back: each handoff switches,
        a full-audit dry run in the new direction then plans no write, and the target
        equals the source as after any converged Run."""
        self.handed_over = True
        fingerprint = self.fingerprint()
        for old, new in ((self.source, self.target), (self.target, self.source)):
            binding = bind(self.ctx, SyncRequest(f"local:{old}", f"local:{new}"))
            outcome = handoff(self.ctx, binding.id)
            assert outcome.switched, outcome.reason
            audit = sync(
                self.ctx,
                SyncRequest(f"local:{new}", f"local:{old}", full_audit=True, dry_run=True),
            )
            planned = audit.report["planned_actions"]
            assert audit.status == "completed", audit.report["problems"]
            assert not any(planned.get(a) for a in WRITE_ACTIONS), planned
        assert self.fingerprint() == fingerprint  # the model's source is as it was
        assert self.target_state() == self.expected_state()
        self.converged = fingerprint
        self.dry_plan = None

    def applying_run(self, *, full: bool) -> None:
        fingerprint = self.fingerprint()
        unchanged = fingerprint == self.converged
        before = self.target_rows() if unchanged else None
        run = self.run(full=full)
        assert self.target_state() == self.expected_state()
        assert self.fingerprint() == fingerprint  # nothing moved the source under us
        if unchanged:  # a Run after a converged one, the source unchanged: no write
            written = [i for i in self.items(run.id) if i[2] in ("create", "update", "delete")]
            assert written == [], written
            assert self.target_rows() == before
        if self.dry_plan is not None and self.dry_plan[:2] == (fingerprint, full):
            # The dry run of the same state and audit mode planned exactly this.
            assert self.items(run.id) == self.dry_plan[2]
        self.dry_plan = None
        self.converged = fingerprint

    def run(self, *, full: bool, dry: bool = False) -> Run:
        """One ``reposync sync``; the source never changes during it, so it must end
        ``completed`` with no follow-up Run, and a dry run must not write."""
        with self.db.session() as session:
            last = session.execute(select(func.max(Run.id))).scalar() or 0
        finished = sync(self.ctx, self.request(full=full, dry=dry))
        with self.db.session() as session:
            runs = list(session.execute(select(Run).where(Run.id > last)).scalars())
        summary = "\n".join(
            f"run {r.id} ({r.trigger}) ended {r.status}: {(r.report or {}).get('problems')}"
            for r in runs
        )
        assert [r.status for r in runs] == ["completed"], summary
        assert finished.id == runs[0].id
        io = finished.report["io"]
        if dry:
            assert io.get("target", {}).get("writes", 0) == 0, io
            assert "pushes" not in io.get("git", {}), io
        elif self.converged is not None and self.fingerprint() == self.converged:
            assert io.get("target", {}).get("writes", 0) == 0, io
            assert "pushes" not in io.get("git", {}), io
            if not full:  # a checkpoint trusts its links: the target is not even read
                objects, refs_ = self.converged
                if objects or refs_:
                    assert "target" not in io, io
                else:  # no link left to trust: the planner checks the standby is empty
                    assert finished.plan_mode == "empty_target", finished.plan_mode
                    assert io["target"] == {"object_reads": 0, "index_reads": 1, "writes": 0}
        return finished

    def items(self, run_id: int) -> list[tuple[str, str, str]]:
        """(type, object key, action) of every RunItem of a Run, sorted."""
        with self.db.session() as session:
            rows = session.execute(
                select(RunItem.object_type, RunItem.object_key, RunItem.action).where(
                    RunItem.run_id == run_id
                )
            ).all()
        return sorted((t, k, a) for t, k, a in rows)

    # -- canonical states -------------------------------------------------------------

    def expected_refs(self) -> dict[str, str]:
        """The source's branches and tags plus the shadow branches a target must hold."""
        source = {
            name: oid
            for name, oid in refs(self.source).items()
            if name.startswith(("refs/heads/", "refs/tags/"))
        }
        expected = dict(source)
        for pull in self.objects(ObjectType.PULL_REQUEST):
            if pull.payload["state"] != "open":
                continue
            head_ref, head_sha = pull.payload["head_ref"], pull.payload["head_sha"]
            if source.get(f"refs/heads/{head_ref}") == head_sha:
                continue  # the head is a branch here: no shadow needed
            name = SHADOW.format(pull.number)
            if name in source:
                continue  # a real branch of that name wins
            try:
                has_commit = isinstance(self.repo.get(head_sha), pygit2.Commit)
            except (ValueError, pygit2.GitError):
                has_commit = False
            if has_commit:
                expected[name] = head_sha
        return expected

    def expected_state(self) -> dict[str, Any]:
        state: dict[str, Any] = {"refs": self.expected_refs()}
        for object_type in FORGE_TYPES:
            if object_type in NOT_ON_TARGET:
                continue
            state[object_type.value] = canonical(self.forge, object_type)
        for object_type in NOT_ON_TARGET:
            state[object_type.value] = 0
        return state

    def target_state(self) -> dict[str, Any]:
        state: dict[str, Any] = {"refs": refs(self.target)}
        with target_forge(self.target) as forge:
            for object_type in FORGE_TYPES:
                if object_type in NOT_ON_TARGET:
                    state[object_type.value] = forge.reader.count(object_type)
                else:
                    state[object_type.value] = canonical(forge, object_type)
        return state

    def target_rows(self) -> dict[str, Any]:
        """Everything a write would change on the target, identities and revisions too."""
        rows: dict[str, Any] = {"refs": refs(self.target)}
        provider = LocalProvider.open(EndpointSpec("local", str(self.target)))
        try:
            rows["standby_of"] = provider.standby_of()
            for object_type in FORGE_TYPES:
                rows[object_type.value] = [
                    (o.identity, o.revision, o.number, o.unique_key, o.content_hash)
                    for o in provider.forge.reader.objects_of(object_type)
                ]
            assets = provider.forge.root / "assets"
            rows["asset_files"] = (
                sorted(p.name for p in assets.iterdir()) if assets.exists() else []
            )
        finally:
            provider.close()
        return rows

    def fingerprint(self) -> Any:
        """What the source holds, identities included (a recreated object differs)."""
        objects = frozenset(
            (o.object_type.value, o.identity, o.content_hash) for o in self.objects(*FORGE_TYPES)
        )
        return objects, frozenset(self.expected_refs().items())


def canonical(forge: Any, object_type: ObjectType) -> list[tuple[int, str, str, str]]:
    """(number, unique key, content hash, what it replies to) of every object of a type:
    identities left out (they differ between the sides); a review comment's reply is
    named by the unique key and hash of the comment it answers ("gone" once deleted)."""
    objects = forge.reader.objects_of(object_type)
    by_identity = {o.identity: f"{o.unique_key} {o.content_hash}" for o in objects}

    def replied(obj: Any) -> str:
        ref = obj.refs.get("in_reply_to")
        return "" if ref is None else by_identity.get(ref.identity, "gone")

    return sorted((o.number or 0, o.unique_key or "", o.content_hash, replied(o)) for o in objects)


@contextmanager
def target_forge(path: Path) -> Iterator[Any]:
    provider = LocalProvider.open(EndpointSpec("local", str(path)))
    try:
        yield provider.forge
    finally:
        provider.close()


ForgeSync.TestCase.settings = PROFILE
TestForgeSync = ForgeSync.TestCase
