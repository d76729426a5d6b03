"""The Run page maps each problem's kind (``problem_type``) to its action: the words of
``KIND_ACTIONS`` and the button or link that does it; a notice (a data gap, target-only
objects kept) is a note beside the problems, with neither."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from sqlalchemy import update

from reposync.errors import ProblemType
from reposync.models import Binding, Run
from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from reposync.web.pages.runs import KIND_ACTIONS
from tests.gitrepo import commit_on, generate, init_bare
from tests.integration.web.pages.test_pages import sign_in

README = Path(__file__).parents[4] / "README.md"

#: One failure of each kind (code -> kind), and the element the page offers for it.
FAILURES = {
    "visibility_unconfirmed": ("authorization_required", 'id="confirm-visibility"'),
    "rate_limited": ("temporarily_rate_limited", None),
    "quota_exceeded": ("quota_exceeded", None),
    "result_unknown_unresolved": ("external_result_unknown", 'id="recover"'),
    "conflict": ("repository_conflict", 'id="conflict-policy"'),
    "verify_mismatch": ("verification_failed", 'id="full-audit"'),
    "attempts_exhausted": ("sync_failed", None),
}


def _item(page: str, code: str, kind: str = "problem") -> str:
    """The ``<li>`` of ``code`` in the Problems list (``kind="note"``: in the Notes)."""
    found = re.search(rf'<li class="{kind}" data-code="{code}".*?</li>', page, re.S)
    assert found, f"no {kind} {code} on the page"
    return found.group(0)


def test_every_kind_has_an_action_on_the_page_and_in_the_readme():
    """KIND_ACTIONS covers the seven kinds; README's table names each with its action."""
    assert set(KIND_ACTIONS) == set(ProblemType)
    readme = README.read_text()
    for kind in ProblemType:
        row = next((line for line in readme.splitlines() if line.startswith(f"| `{kind}`")), None)
        assert row is not None, kind


def test_each_kind_shows_its_action_and_a_notice_none(ctx, client, tokens, finished_run):
    """A report with one failure of each kind, a notice, and a problem of a report written
    before kinds existed (its kind read from its code)."""
    problems = [
        {
            "error_code": code,
            "problem_type": kind,
            "category": "error",
            "message": f"{code} happened",
            "suggested_action": "see the docs",
            "retryable": False,
            "count": 1,
        }
        for code, (kind, _) in FAILURES.items()
    ]
    problems.append(
        {
            "error_code": "target_only_preserved",
            "problem_type": "repository_conflict",
            "category": "preserved",
            "message": "2 label object(s) exist only on the target",
            "suggested_action": "none",
            "retryable": False,
            "count": 2,
        }
    )
    problems.append(  # as reports said before kinds: the old word, no category
        {
            "error_code": "permission_denied",
            "problem_type": "error",
            "message": "no access",
            "suggested_action": "grant it",
            "retryable": False,
            "count": 1,
        }
    )
    with ctx.db.transaction() as session:
        session.execute(
            update(Run)
            .where(Run.id == finished_run.id)
            .values(report={**finished_run.report, "problems": problems})
        )
    sign_in(client, tokens.admin)

    page = client.get(f"/runs/{finished_run.id}").get_data(as_text=True)

    for code, (kind, element) in FAILURES.items():
        shown = _item(page, code)
        assert f'data-type="{kind}"' in shown
        assert KIND_ACTIONS[ProblemType(kind)] in shown.replace("&#39;", "'")
        if element is not None:
            assert element in shown, (code, shown)
    notice = _item(page, "target_only_preserved", "note")  # information, not a failure
    assert 'class="problem" data-code="target_only_preserved"' not in page
    assert page.index('id="notes"') > page.index("</ul>", page.index('class="problems"'))
    assert "What to do" not in notice
    assert 'id="conflict-policy"' not in notice
    older = _item(page, "permission_denied")
    assert 'data-type="authorization_required"' in older


def test_a_real_conflict_reads_as_a_repository_conflict(ctx, client, tokens, tmp_path):
    """A diverged branch on the standby: the report says repository_conflict (category
    conflict), and the page offers the conflict policy."""
    source = generate(tmp_path / "diverged-src.git", commits=2, branches=0, tags=0)
    target = init_bare(tmp_path / "diverged-dst.git")
    subprocess.run(
        ["git", "--git-dir", str(target), "fetch", "-q", str(source), "main:main"], check=True
    )
    commit_on(target, "refs/heads/main", "standby-only work")
    run = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))
    assert run.status == "requires_attention"
    [problem] = run.report["problems"]
    assert (problem["problem_type"], problem["category"]) == ("repository_conflict", "conflict")
    sign_in(client, tokens.admin)

    shown = _item(client.get(f"/runs/{run.id}").get_data(as_text=True), "conflict")

    assert 'data-type="repository_conflict"' in shown
    assert 'id="conflict-policy"' in shown


def test_a_missing_permission_on_a_github_side_offers_grant_access(
    ctx, client, tokens, binding, finished_run
):
    """authorization_required that is not a visibility question: the Grant access link
    (GitHub's installations page when Connect GitHub is not configured)."""
    denied = {
        "error_code": "permission_denied",
        "problem_type": "authorization_required",
        "category": "run_error",
        "message": "403 from GitHub",
        "suggested_action": "grant it",
        "retryable": False,
        "count": 1,
    }
    with ctx.db.transaction() as session:
        session.execute(
            update(Run)
            .where(Run.id == finished_run.id)
            .values(report={**finished_run.report, "problems": [denied]})
        )
        session.execute(update(Binding).where(Binding.id == binding.id).values(b_provider="github"))
    sign_in(client, tokens.admin)

    shown = _item(
        client.get(f"/runs/{finished_run.id}").get_data(as_text=True), "permission_denied"
    )

    assert 'id="grant-access"' in shown
    assert "/settings/installations" in shown
