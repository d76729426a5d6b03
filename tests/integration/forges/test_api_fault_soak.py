"""A seeded soak of a forge's API failing several writes of each Run, over rounds of edits.

The fault matrices strike one kind of create, once or from then on, in a bootstrap.
Here a seeded RNG edits the source between rounds (new labels, milestones, issues,
comments, tags and releases; edited titles, states, bodies, colours and descriptions, of
pull requests and releases too; deleted labels, milestones and comments; new commits)
and, in every round's Run, makes either test server (GitHub's, Forgejo's) fail a few
random requests: the API's creates, edits and deletes alike, two of its reads, and the
Git host's pushes, each answered with a server error or a rate limit, or performed with
its answer lost, once or twice. Whatever the Run ends with, once the forge is well
again a recovery (where writes were left unknown) and one more Run converge the
target, and then:

* every live source object is on the target exactly once, under its current name (a
  label's name, a milestone's, an issue's or a pull request's title, a release's tag, a
  comment's body), and nothing deleted or renamed at the source is left there under
  its old one;
* a Run after that writes nothing.

CI runs a few seeds; ``REPOSYNC_SOAK=1`` runs many more. A failing seed is reproduced by
its test id alone.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from tests.gitrepo import commit_on, generate, refs, set_ref
from tests.integration.forges.fault_matrix import SOAK, converge, fault
from tests.integration.forges.test_forge_sync import forge, populate

#: Where a fault may strike, by host, method and path: the API's creates, edits and
#: deletes (either forge's: GitHub names a label in its path, Forgejo numbers it), two
#: of its reads, and the pushes of the Git host.
PLACES = [
    ("api", "POST", r"/repos/acme/widgets/labels$"),
    ("api", "PATCH", r"/repos/acme/widgets/labels/[^/]+$"),
    ("api", "DELETE", r"/repos/acme/widgets/labels/[^/]+$"),
    ("api", "POST", r"/repos/acme/widgets/milestones$"),
    ("api", "PATCH", r"/repos/acme/widgets/milestones/\d+$"),
    ("api", "DELETE", r"/repos/acme/widgets/milestones/\d+$"),
    ("api", "PATCH", r"/repos/acme/widgets/pulls/\d+$"),
    ("api", "POST", r"/repos/acme/widgets/releases$"),
    ("api", "PATCH", r"/repos/acme/widgets/releases/\d+$"),
    ("api", "POST", r"/repos/acme/widgets/issues$"),
    ("api", "PATCH", r"/repos/acme/widgets/issues/\d+$"),
    ("api", "POST", r"/repos/acme/widgets/issues/\d+/comments$"),
    ("api", "PATCH", r"/repos/acme/widgets/issues/comments/\d+$"),
    ("api", "DELETE", r"/repos/acme/widgets/issues/comments/\d+$"),
    ("api", "GET", r"/repos/acme/widgets/issues/comments$"),
    ("api", "GET", r"/repos/acme/widgets/labels$"),
    ("git", "POST", r"/widgets\.git/git-receive-pack$"),
]
#: A lost answer is what tests "never twice" hardest: weighted so. A rate limit says to
#: retry after a second.
ANSWERS: list[int | str] = ["lost", "lost", "lost", 500, 502, 503, 429]
SEEDS = range(40) if SOAK else range(3)
ROUNDS = 4
#: Faults set up before each Run (each strikes once or twice, where the Run writes).
FAULTS_PER_RUN = 5
START = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)


@dataclass
class Expected:
    """What the target must hold once converged, by the names ``Host.held`` gives."""

    labels: set[str] = field(default_factory=set)
    milestones: set[str] = field(default_factory=set)
    #: Issues' and pull requests' titles.
    issues: set[str] = field(default_factory=set)
    #: Releases' tags.
    releases: set[str] = field(default_factory=set)
    #: Comments' bodies: each live one is on the target exactly once (inside what the
    #: forge's attribution adds), each gone one nowhere.
    comments: set[str] = field(default_factory=set)
    gone: set[str] = field(default_factory=set)


@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed{seed}" for seed in SEEDS])
def test_rounds_of_edits_with_writes_failing_converge_with_nothing_lost_or_twice(
    tmp_path, host, seed
):
    ctx, fake = host.ctx, host.fake
    ctx.settings = replace(ctx.settings, retry_backoff=0.01, max_stage_attempts=3)
    rng = random.Random(seed)
    source = generate(tmp_path / "src.git", commits=3, branches=1, tags=1)
    populate(source)
    request = SyncRequest(f"local:{source}", host.target)
    expected = Expected()
    struck = 0

    for round_no in range(ROUNDS):
        edits = _edit(source, rng, round_no, expected) if round_no else []
        _read_source(source, expected)
        rules = [_strike(fake, rng) for _ in range(FAULTS_PER_RUN)]

        run = sync(ctx, request)

        struck += sum(rule.hits for rule in rules)
        if run.status != "completed":
            assert run.report["problems"], "a Run that did not complete says why"
        converge(ctx, fake, run, request)
        _check(host.held(), expected, f"seed {seed} round {round_no} after {edits}")
        writes = len(host.api_writes())
        assert sync(ctx, request).status == "completed"
        assert host.api_writes()[writes:] == [], "a converged target was written again"
    assert struck, "no fault ever struck: the places are not where the Runs write"


def _strike(fake: Any, rng: random.Random) -> Any:
    host, method, path = rng.choice(PLACES)
    return fault(fake, host, method, path, rng.choice(ANSWERS), rng.choice([1, 1, 2]))


def _edit(source: Path, rng: random.Random, round_no: int, expected: Expected) -> list[str]:
    """Seeded edits of the source between two Runs; returns what was done."""
    done: list[str] = []
    when = START + timedelta(hours=round_no)
    tag = f"r{round_no}-{rng.getrandbits(24):06x}"
    with forge(source) as f:
        labels = f.reader.objects_of("label")
        issues = f.reader.objects_of("issue")
        comments = f.reader.objects_of("issue_comment")
        milestones = f.reader.objects_of("milestone")
        for _ in range(rng.randint(0, 2)):
            f.create_label(f"spare/{tag}-{len(done)}", color=f"{rng.getrandbits(24):06x}")
            done.append("label+")
        if labels and rng.random() < 0.6:
            label = rng.choice(labels)
            f.update("label", label.identity, color=f"{rng.getrandbits(24):06x}")
            done.append("label~")
        spare = [label for label in labels if label.payload["name"].startswith("spare/")]
        if spare and rng.random() < 0.5:
            f.delete("label", rng.choice(spare).identity)
            done.append("label-")
        for milestone in milestones:
            if rng.random() < 0.5:
                f.update("milestone", milestone.identity, description=f"as of {tag}")
                done.append("milestone~")
        if rng.random() < 0.5:
            f.create_milestone(f"Milestone {tag}", description="planned")
            done.append("milestone+")
        spare_milestones = [m for m in milestones if m.payload["title"].startswith("Milestone ")]
        if spare_milestones and rng.random() < 0.4:
            f.delete("milestone", rng.choice(spare_milestones).identity)
            done.append("milestone-")
        for pull in f.reader.objects_of("pull_request"):
            if rng.random() < 0.3:
                f.update("pull_request", pull.identity, title=f"Change {tag}-{len(done)}")
                done.append("pull~")
        for release in f.reader.objects_of("release"):
            if rng.random() < 0.4:
                f.update("release", release.identity, body=f"notes as of {tag}")
                done.append("release~")
        for _ in range(rng.randint(0, 2)):
            issue = f.create_issue(
                f"Issue {tag}-{len(done)}", author="ann", body=f"body {tag}", created_at=when
            )
            f.add_comment(
                "issue", issue, f"first word on {tag}-{len(done)}", author="bob", created_at=when
            )
            done.append("issue+")
        for issue in issues:
            if rng.random() < 0.3:
                closed = issue.payload.get("state") == "open"
                f.update(
                    "issue",
                    issue.identity,
                    title=f"Renamed {tag}-{len(done)}",
                    state="closed" if closed else "open",
                    state_reason="completed" if closed else None,
                    closed_at=when if closed else None,
                )
                done.append("issue~")
        for comment in comments:
            roll = rng.random()
            if roll < 0.2:
                f.update("issue_comment", comment.identity, body=f"edited {tag}-{len(done)}")
                done.append("comment~")
            elif roll < 0.35:
                expected.gone.add(comment.payload["body"])
                f.delete("issue_comment", comment.identity)
                done.append("comment-")
        if issues and rng.random() < 0.7:
            f.add_comment(
                "issue",
                rng.choice(issues).identity,
                f"later word {tag}",
                author="carol",
                created_at=when,
            )
            done.append("comment+")
    if rng.random() < 0.5:
        commit_on(source, "refs/heads/main", f"work of {tag}")
        done.append("commit")
    if rng.random() < 0.4:
        set_ref(source, f"refs/tags/v-{tag}", refs(source)["refs/heads/main"])
        with forge(source) as f:
            f.create_release(f"v-{tag}", author="ann", name=tag, body="new", created_at=when)
        done.append("release+")
    return done


def _read_source(source: Path, expected: Expected) -> None:
    """The names the target must hold: every live label, issue and pull request title, and
    comment body of the source, as it is now."""
    with forge(source) as f:
        expected.labels = {o.payload["name"] for o in f.reader.objects_of("label")}
        expected.milestones = {o.payload["title"] for o in f.reader.objects_of("milestone")}
        expected.releases = {o.payload["tag"] for o in f.reader.objects_of("release")}
        expected.issues = {
            o.payload["title"]
            for kind in ("issue", "pull_request")
            for o in f.reader.objects_of(kind)
        }
        expected.comments = {o.payload["body"] for o in f.reader.objects_of("issue_comment")}
    expected.gone -= expected.comments


def _check(held: dict[str, list[str]], expected: Expected, where: str) -> None:
    for kind in ("labels", "milestones", "issues", "releases"):
        names = Counter(held[kind])
        twice = {name: n for name, n in names.items() if n > 1}
        assert not twice, f"{where}: {kind} written twice: {twice}"
        want = getattr(expected, kind)
        assert set(names) == want, (
            f"{where}: {kind} missing {sorted(want - set(names))}, "
            f"left over {sorted(set(names) - want)}"
        )
    bodies = held["comments"]
    for body in expected.comments:
        found = sum(1 for text in bodies if _holds(text, body))
        assert found == 1, f"{where}: comment {body!r} is on the target {found} times"
    for body in expected.gone:
        assert not any(_holds(text, body) for text in bodies), f"{where}: {body!r} not deleted"


def _holds(text: str, body: str) -> bool:
    """Whether a target comment's text is ``body`` (with what the forge's attribution
    puts before and after it), not a longer body that merely starts the same."""
    return re.search(rf"(^|\n){re.escape(body)}(\n|$)", text) is not None
