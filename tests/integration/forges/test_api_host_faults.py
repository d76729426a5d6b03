"""Every way a forge's API may fail one of a Run's creates.

The API of either test server (GitHub's, Forgejo's) answers the creates of one kind a
bootstrap of a populated forge sends (labels, milestones, issues, comments, releases)
with an HTTP error, or performs a create and loses its answer (the connection closed),
once or from then on (``fault_matrix``: what CI runs of it). For each, a Run that does
not complete says why with the code its kind calls for, and nothing is lost or written
twice: once the forge is well, a recovery (where writes were left unknown) and one more
Run converge the target, which then holds every object of the source exactly once, and a
Run after that writes nothing.

It found three bugs: a review comment carried by an issue comment, its answer lost, was
"proven absent" where GitHub keeps native ones only and posted again (three and four
times over); a server error on a label's or milestone's create blocked the Binding for
good; and on GitHub an issue naming a label whose create had failed made GitHub create
the label with its defaults, which the next Run's create then met as a conflict.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from tests.gitrepo import generate
from tests.integration.forges.fault_matrix import cases, converge, parametrized, strike
from tests.integration.forges.test_forge_sync import forge, populate
from tests.integration.forges.test_github_sync import REPO

#: Where a fault strikes: the creates of one kind, on either forge's API.
PLACES = {
    "label": r"/repos/acme/widgets/labels$",
    "milestone": r"/repos/acme/widgets/milestones$",
    "issue": r"/repos/acme/widgets/issues$",
    "comment": r"/repos/acme/widgets/issues/\d+/comments$",
    "release": r"/repos/acme/widgets/releases$",
}
#: In this order, CI's rotation strikes what found bugs: a lost comment from then on (a
#: carried review comment posted again), a server error on a milestone's create (blocked
#: for good) and a 422 on a label's (a conflict of reposync's own making).
CASES = cases((401, 403, 404, "lost", 422, 429, 500, 503), list(PLACES), once_at=3)
#: What the source holds, by the names ``Host.held`` gives.
SOURCE = {
    "labels": {"bug", "needs design 🎨"},
    "milestones": {"v1.0"},
    "issues": {"It crashes", "Fix the crash (fixes #1)", "Closed one"},
    "releases": {"v1.0"},
}


@parametrized(CASES)
def test_a_create_the_forge_fails_is_named_and_loses_nothing(
    tmp_path, host, answer, where, persistent
):
    ctx, fake = host.ctx, host.fake
    rule = strike(fake, "api", "POST", PLACES[where], answer, persistent)
    ctx.settings = replace(ctx.settings, retry_backoff=0.01, max_stage_attempts=3)
    source = generate(tmp_path / "src.git", commits=3, branches=1, tags=1)
    populate(source)
    request = SyncRequest(f"local:{source}", host.target)

    run = sync(ctx, request)

    assert rule.hits >= 1, "the fault never struck: its place is not where the Run asks"
    codes = [p["error_code"] for p in run.report["problems"]]
    if answer in (401, 403):
        assert (run.status, codes[0]) == ("blocked", "permission_denied"), codes
    elif answer == 404:  # a create answered so lacks what it hangs on
        assert (run.status, set(codes)) == ("failed", {"dependency_missing"}), codes
    elif answer == 422:
        assert run.status == "failed"
        assert "invalid" in codes, codes
    elif answer == "lost" or not persistent:
        # Found again (marker, or a label's or milestone's name) or proven absent and
        # sent again within the Run. Before, one server error on a label's or a
        # milestone's create blocked the Binding for good: neither read-back nor
        # recovery could settle a type without a marker.
        assert run.status == "completed", codes
    else:  # a server error from then on
        assert run.status == "failed"
        assert codes[0] in ("provider_unavailable", "attempts_exhausted"), codes

    converge(ctx, fake, run, request)
    held = host.held()
    for kind, names in held.items():
        twice = {name: n for name, n in Counter(names).items() if n > 1}
        assert not twice, f"{kind} written twice: {twice}"
    for kind, names in SOURCE.items():
        assert names <= set(held[kind]), kind
    writes = len(host.api_writes())
    assert sync(ctx, request).status == "completed"
    assert len(host.api_writes()) == writes  # nothing left to write


#: An edit or a delete the forge fails, by what the source did and where it is sent.
CHANGES = {
    "label edited": ("PATCH", r"/repos/acme/widgets/labels/[^/]+$"),
    "issue edited": ("PATCH", r"/repos/acme/widgets/issues/\d+$"),
    "comment deleted": ("DELETE", r"/repos/acme/widgets/issues/comments/\d+$"),
}


@pytest.mark.parametrize("persistent", [False, True], ids=["once", "from then on"])
@pytest.mark.parametrize("change", list(CHANGES))
def test_an_edit_or_delete_answered_with_a_server_error_is_settled_by_read_back(
    tmp_path, host, change, persistent
):
    """An edit or a delete answered 503 (the forge did nothing): read-back finds the
    target as it was when the write was planned, which proves it never happened, so it
    is sent again in the same Run; when it keeps failing, the Run fails, and the next
    Run sends it again. Before, it was left ``result_unknown`` and recovery could not
    settle it either (``still_unknown``): the Binding blocked for good. Found by the
    seeded soak (``test_api_fault_soak``)."""
    ctx, fake = host.ctx, host.fake
    ctx.settings = replace(ctx.settings, retry_backoff=0.01, max_stage_attempts=3)
    source = generate(tmp_path / "src.git", commits=3, branches=1, tags=1)
    ids = populate(source)
    request = SyncRequest(f"local:{source}", host.target)
    assert sync(ctx, request).status == "completed"
    with forge(source) as f:
        if change == "label edited":
            f.update("label", ids["bug"], color="ff0000")
        elif change == "issue edited":
            f.update("issue", ids["i1"], title="It crashes on start")
        else:
            f.delete("issue_comment", ids["c1"])
    method, path = CHANGES[change]
    rule = strike(fake, "api", method, path, 503, persistent)

    run = sync(ctx, request)

    assert rule.hits >= 1
    codes = [p["error_code"] for p in run.report["problems"]]
    assert "result_unknown" not in codes, codes
    assert run.status == ("failed" if persistent else "completed"), codes
    fake.faults.clear()
    assert sync(ctx, request).status == "completed"
    held = host.held()
    if change == "label edited":
        (bug,) = [label for label in fake.state.repo(REPO).labels.values() if label.name == "bug"]
        assert bug.color.lstrip("#").lower() == "ff0000"
    elif change == "issue edited":
        assert "It crashes on start" in held["issues"]
        assert "It crashes" not in held["issues"]
    else:
        assert not any("me too" in body for body in held["comments"])
    writes = len(host.api_writes())
    assert sync(ctx, request).status == "completed"
    assert len(host.api_writes()) == writes
