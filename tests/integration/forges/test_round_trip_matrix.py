"""Issue 10: the round-trip matrix. Every object type in its notable states goes
A -> GitHub test server -> B and A -> B -> A (a handoff back), and is compared with its
structure: each object with its parent's anchor (an issue's number, a release's tag, a
review's content), a reply with what it answers. The only differences allowed are the
documented representations, and the report's ``data_gaps`` count exactly those.

Issue 24: A -> Forgejo test server -> GitHub test server -> B, the same comparison with the
data gaps of every hop counted (each forge represents what it cannot hold; the next reads
the representation back as the object), and a full audit of each hop planning nothing.

Issue 23: after any handoff, a full audit in the new direction plans nothing. Random
sources (pull requests on a branch, from a deleted branch, from a fork's, on a commit
the repository lacks; open, closed, merged; reviewed or not; issues, labels, a release)
are handed local -> local and back, and local -> GitHub and back, with a pull request
opened from a fork on GitHub between the two; and GitHub -> Forgejo handed to Forgejo and
back.

Prints the per-type table (equal / represented / lost) with ``pytest -s``.
"""

from __future__ import annotations

import itertools
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from reposync.models.db import Database
from reposync.providers.base import EndpointSpec, ProviderEnvironment
from reposync.providers.local import LocalProvider
from reposync.service.accounts.budgets import DatabaseWriteBudget
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext
from reposync.service.embedded import sync
from reposync.service.handoff import WRITE_ACTIONS, handoff
from reposync.sync.vocabulary import ObjectType
from tests.fakes.contract import RecordingValidator, attach
from tests.forgejo_env import instance as forgejo_instance
from tests.forgejo_env import locator as forgejo_locator
from tests.github_env import embedded_world, github_settings
from tests.gitrepo import commit_on, delete_refs, generate, refs
from tests.integration.forges.test_forge_sync import WHEN, forge, populate
from tests.integration.forges.test_issue_release_fidelity import family_forge
from tests.integration.forges.test_review_fidelity import review_forge

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


@pytest.fixture
def forges(tmp_path: Path, github_fake, forgejo_fake):
    """An embedded context that reaches both test servers, every exchange checked against
    each one's own description."""
    with two_forges(github_fake, forgejo_fake, tmp_path) as ctx:
        yield ctx, github_fake, forgejo_fake


@contextmanager
def two_forges(github: Any, forgejo: Any, tmp_path: Path) -> Iterator[ServiceContext]:
    db = Database(f"sqlite:///{tmp_path / 'reposync.db'}")
    db.upgrade()
    settings = github_settings(
        github,
        tmp_path / "data",
        github.add_token("acme"),
        forgejo_instances=(forgejo_instance(forgejo, forgejo.add_token("acme")),),
    )
    recorder = RecordingValidator(github.contract)

    def session() -> requests.Session:
        checked = requests.Session()
        attach(checked, recorder)  # GitHub's requests (others are not its REST URLs)
        attach(checked, forgejo.client_recorder)  # and Forgejo's
        return checked

    environment = ProviderEnvironment(
        settings=settings, budget=DatabaseWriteBudget(db), http_session=session
    )
    try:
        yield ServiceContext(settings=settings, db=db, environment=environment)
    finally:
        db.dispose()
    assert recorder.violations == []


def add_gaps(*reports: dict[str, Any]) -> dict[str, Any]:
    """The data gaps of several Runs, summed per kind and type: a chain of forges
    represents at each hop what the next cannot hold."""
    total: dict[str, Counter[str]] = {}
    for report in reports:
        for kind, per_type in report["data_gaps"].items():
            if isinstance(per_type, dict):
                total.setdefault(kind, Counter()).update(per_type)
    return {kind: dict(counts) for kind, counts in total.items()}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_to_forgejo_to_github_to_b_loses_nothing_and_counts_every_representation(
    tmp_path, forges, name
):
    """local -> Forgejo -> GitHub -> local: every object comes back equal to the source's
    (reactions archived), what either forge could not hold counted in the hops' data_gaps,
    and a full audit of each hop plans nothing afterwards."""
    ctx, github, forgejo = forges
    repo = f"acme/{name.replace('_', '-')}"
    forgejo.state.create_repo(repo, private=True)
    github.state.create_repo(repo, private=True)
    a = tmp_path / "a.git"
    FAMILIES[name](a)
    with_main_head(a)
    on_forgejo = f"forgejo:{forgejo_locator(forgejo, repo)}"
    hops = [(f"local:{a}", on_forgejo), (on_forgejo, f"github:{repo}")]
    b = tmp_path / "b.git"
    hops.append((f"github:{repo}", f"local:{b}"))

    runs = [sync(ctx, SyncRequest(source, target)) for source, target in hops]

    for run in runs:
        assert run.status == "completed", run.report["problems"]
    gaps = add_gaps(*(run.report for run in runs))
    rows = compare(anchors(a), anchors(b), gaps)
    table = render(f"{name}: A -> Forgejo -> GitHub -> B", rows)
    print(table)
    assert all(lost == 0 for *_, lost in rows), table
    archived = sum(n - eq for t, n, eq, _, _ in rows if ObjectType(t) in ARCHIVED)
    assert archived == sum((gaps.get("archive_only") or {}).values()), table
    assert all(eq == n for t, n, eq, _, _ in rows if ObjectType(t) not in ARCHIVED), table
    for source, target in hops[:2]:
        audit = sync(ctx, SyncRequest(source, target, full_audit=True))
        assert audit.report["planned_actions"] == {}, (source, target, audit.report)


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


# -- issue 23: after any handoff, a full audit the new way plans nothing -------------------

#: How a pull request's head relates to the repository: a branch of it; a branch deleted
#: since (its commit on no branch); a fork's branch (a name that is no branch here); a
#: commit the repository never had.
HEADS = ("branch", "deleted_branch", "fork", "missing_commit")
MISSING_SHA = "0123456789abcdef0123456789abcdef01234567"

pull_requests = st.lists(
    st.tuples(
        st.sampled_from(HEADS),
        st.sampled_from(["open", "closed", "merged"]),
        st.booleans(),  # reviewed, with a reply and a review request
    ),
    min_size=1,
    max_size=4,
)
sources = st.fixed_dictionaries(
    {
        "pulls": pull_requests,
        "issues": st.lists(st.sampled_from(["open", "closed"]), max_size=2),
        "release": st.booleans(),
    }
)
#: Random examples per target, after one with every kind of head: a GitHub example takes
#: ~12 s (eight Runs against the test server), a local one ~2 s, a GitHub <-> Forgejo one
#: ~4 s; the model-based test hands random local histories over too.
EXAMPLES = {"local": 5, "github": 2, "forgejo": 1}
EVERY_HEAD = {
    "pulls": [(head, "open", True) for head in HEADS] + [("deleted_branch", "closed", False)],
    "issues": ["open"],
    "release": True,
}


def random_source(path: Path, recipe: dict[str, Any]) -> None:
    """A source built from a drawn recipe (HEAD on ``main``, as a forge has it)."""
    generate(path, commits=3, branches=0, tags=1)
    with_main_head(path)
    main = refs(path)["refs/heads/main"]
    when = itertools.count()
    with forge(path) as f:
        f.create_label("bug", color="d73a4a")
        for k, state in enumerate(recipe["issues"]):
            issue = f.create_issue(
                f"issue {k}",
                author="ann",
                created_at=WHEN + timedelta(minutes=next(when)),
                labels=["bug"],
                state=state,
                closed_at=WHEN if state == "closed" else None,
            )
            f.add_comment("issue", issue, "seen", author="bob", created_at=WHEN)
        for k, (head, state, reviewed) in enumerate(recipe["pulls"]):
            head_ref, head_sha = f"topic-{k}", MISSING_SHA
            if head != "missing_commit":
                head_sha = commit_on(path, f"refs/heads/{head_ref}", f"work {k}")
            if head == "fork":
                head_ref = f"patch-{k}"  # the fork's branch: no branch of that name here
            if head in ("deleted_branch", "fork"):
                delete_refs(path, [f"refs/heads/topic-{k}"])
            closed = state != "open"
            pull = f.create_pull_request(
                f"pull {k} ({head})",
                author="bob",
                created_at=WHEN + timedelta(minutes=next(when)),
                base_ref="main",
                base_sha=main,
                head_ref=head_ref,
                head_sha=head_sha,
                state="closed" if closed else "open",
                closed_at=WHEN if closed else None,
                merged=state == "merged",
                merged_at=WHEN if state == "merged" else None,
            )
            if reviewed:
                on = main if head == "missing_commit" else head_sha
                review = f.add_review(
                    pull, state="COMMENTED", body="notes", commit_id=on, author="carol"
                )
                if head != "missing_commit":  # a line of the file the head commit adds
                    line = {"commit_id": on, "path": f"work_{k}.txt", "line": 1}
                    first = f.add_review_comment(
                        review, body="why?", author="carol", created_at=WHEN, **line
                    )
                    f.add_review_comment(
                        review,
                        body="because",
                        author="bob",
                        created_at=WHEN,
                        in_reply_to=first,
                        **line,
                    )
                f.request_review(pull, "dave")
        if recipe["release"]:
            tag = next(n for n in refs(path) if n.startswith("refs/tags/"))
            release = f.create_release(
                tag.removeprefix("refs/tags/"), author="ann", name="One", created_at=WHEN
            )
            f.upload_asset(release, "app.zip", b"PK" + b"z" * 300)


def hand_over(ctx: ServiceContext, old: str, new: str, *, writes_stopped: bool = False) -> None:
    """Hand ``old``'s authority to ``new``, then audit ``new`` -> ``old`` in full, dry."""
    binding = bind(ctx, SyncRequest(old, new))
    outcome = handoff(ctx, binding.id, writes_stopped=writes_stopped)
    assert outcome.switched, outcome.reason
    audit = sync(ctx, SyncRequest(new, old, full_audit=True, dry_run=True))
    assert audit.status == "completed", audit.report["problems"]
    planned = audit.report["planned_actions"]
    writes = {action: n for action, n in planned.items() if action in WRITE_ACTIONS}
    assert writes == {}, (old, new, planned)


def github_fork_pull(fake: Any, repo: str, n: int) -> None:
    """A contributor's pull request from a fork: its head only in ``refs/pull/N/head``."""
    git_dir = Path(fake.state.git_dir(repo))
    commit_on(git_dir, f"refs/heads/fork-{n}", "a contributor's fix")
    fake.state.add_pull(repo, f"Fix {n} from a fork", head=f"fork-{n}", author="contrib")
    delete_refs(git_dir, [f"refs/heads/fork-{n}"])


_examples = itertools.count()


def _handoffs(target: str, tmp_path: Path, world: Any, recipe: dict[str, Any]) -> None:
    ctx, _, fake = world
    n = next(_examples)
    a = tmp_path / f"a-{n}.git"
    random_source(a, recipe)
    source = f"local:{a}"
    if target == "local":
        other = f"local:{tmp_path / f'b-{n}.git'}"
    else:
        other = f"github:acme/handed-{n}"
        fake.state.create_repo(other.removeprefix("github:"), private=True)
    forward = sync(ctx, SyncRequest(source, other))
    assert forward.status == "completed", forward.report["problems"]

    hand_over(ctx, source, other)
    if target == "github":  # GitHub's own kind of pull request, then synced home
        github_fork_pull(fake, other.removeprefix("github:"), n)
        home = sync(ctx, SyncRequest(other, source, full_audit=True))
        assert home.status == "completed", home.report["problems"]
    hand_over(ctx, other, source, writes_stopped=target == "github")


# Shrinking a failure through the real pipeline takes minutes: failures print as found.
_handoff_settings = settings(
    deadline=None,
    phases=[p for p in Phase if p is not Phase.shrink],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@settings(_handoff_settings, max_examples=EXAMPLES["local"])
@example(recipe=EVERY_HEAD)
@given(recipe=sources)
def test_after_a_local_handoff_and_back_a_full_audit_plans_nothing(tmp_path, world, recipe):
    """local -> local and back: after each handoff a full-audit dry run the new way
    plans no write, whatever pull requests (forks', deleted branches') the source holds."""
    _handoffs("local", tmp_path, world, recipe)


@settings(_handoff_settings, max_examples=EXAMPLES["github"])
@example(recipe=EVERY_HEAD)
@given(recipe=sources)
def test_after_a_github_handoff_and_back_a_full_audit_plans_nothing(tmp_path, world, recipe):
    """local -> GitHub and back (a fork's pull request opened on GitHub in between):
    after each handoff a full-audit dry run the new way plans no write."""
    _handoffs("github", tmp_path, world, recipe)


@settings(_handoff_settings, max_examples=EXAMPLES["forgejo"])
@example(recipe=EVERY_HEAD)
@given(recipe=sources)
def test_after_a_github_forgejo_handoff_and_back_a_full_audit_plans_nothing(
    tmp_path, forges, recipe
):
    """GitHub -> Forgejo, handed to Forgejo and back: after each handoff a full-audit
    dry run the new way plans no write (neither forge can be frozen: the operator's word
    that writes stopped stands in)."""
    ctx, github, forgejo = forges
    n = next(_examples)
    a = tmp_path / f"a-{n}.git"
    random_source(a, recipe)
    repo = f"acme/handed-{n}"
    github.state.create_repo(repo, private=True)
    forgejo.state.create_repo(repo, private=True)
    on_github, on_forgejo = f"github:{repo}", f"forgejo:{forgejo_locator(forgejo, repo)}"
    for source, target in ((f"local:{a}", on_github), (on_github, on_forgejo)):
        run = sync(ctx, SyncRequest(source, target))
        assert run.status == "completed", run.report["problems"]

    hand_over(ctx, on_github, on_forgejo, writes_stopped=True)
    hand_over(ctx, on_forgejo, on_github, writes_stopped=True)
