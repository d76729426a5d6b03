"""Run reports: counters from aggregated items, problems, and the final status."""

from __future__ import annotations

import pytest

from reposync import errors
from reposync.errors import ProblemType
from reposync.lifecycle import RunStatus
from reposync.sync.report import (
    CONFLICT_CODE,
    COUNTER_NAMES,
    FAILURE_CATEGORIES,
    NOTICE_CATEGORIES,
    ItemAggregate,
    PlanningCounters,
    Problem,
    build_counters,
    final_status,
    item_problems,
)
from reposync.sync.vocabulary import Action, ItemState

A, S = Action, ItemState


def row(
    action: Action,
    state: ItemState,
    error_code: str | None = None,
    count: int = 1,
    object_type: str = "git_ref",
    examples: tuple[str, ...] = (),
    error_message: str | None = None,
) -> ItemAggregate:
    return ItemAggregate(object_type, action, state, error_code, count, examples, error_message)


def zeros(**counts: int) -> dict[str, int]:
    return {**dict.fromkeys(COUNTER_NAMES, 0), **counts}


def counters_of(*rows: ItemAggregate, planning: PlanningCounters | None = None) -> dict[str, int]:
    counters, _, _ = build_counters(rows, planning or PlanningCounters())
    return counters


# -- build_counters ----------------------------------------------------------------------


def test_counter_names_are_the_report_counters():
    """The report always carries these ten counters."""
    assert COUNTER_NAMES == (
        "scanned",
        "checkpoint_skipped",
        "created",
        "updated",
        "deleted",
        "unchanged",
        "conflicts",
        "failed",
        "blocked",
        "pending_changes",
    )


def test_no_rows_no_planning_gives_all_zero_counters():
    """Nothing planned: every counter is present and zero; no per-type or planned entries."""
    counters, per_type, planned = build_counters([], PlanningCounters())
    assert counters == zeros()
    assert per_type == {}
    assert planned == {}


@pytest.mark.parametrize(
    ("action", "state", "error_code", "counter"),
    [
        (A.CREATE, S.COMPLETED, None, "created"),
        (A.UPDATE, S.COMPLETED, None, "updated"),
        (A.DELETE, S.COMPLETED, None, "deleted"),
        (A.NOOP, S.COMPLETED, None, "unchanged"),
        (A.REPORT, S.COMPLETED, None, None),
        (A.CREATE, S.FAILED, "attempts_exhausted", "failed"),
        (A.UPDATE, S.FAILED, None, "failed"),
        (A.DELETE, S.BLOCKED, "result_unknown", "blocked"),
        (A.CREATE, S.BLOCKED, "permission_denied", "blocked"),
        (A.UPDATE, S.SUPERSEDED, "superseded", "pending_changes"),
        (A.DELETE, S.SUPERSEDED, None, "pending_changes"),
        (A.CONFLICT, S.BLOCKED, CONFLICT_CODE, "conflicts"),
        (A.CONFLICT, S.BLOCKED, None, "conflicts"),
        (A.CONFLICT, S.COMPLETED, None, "conflicts"),
        (A.UPDATE, S.FAILED, CONFLICT_CODE, "conflicts"),
        (A.CREATE, S.BLOCKED, CONFLICT_CODE, "conflicts"),
        (A.CREATE, S.PLANNED, None, None),
        (A.UPDATE, S.APPLYING, None, None),
        (A.DELETE, S.VERIFYING, None, None),
    ],
)
def test_each_row_kind_feeds_exactly_one_counter(action, state, error_code, counter):
    """An (action, state, error_code) row adds its count to exactly its counter, or none."""
    counters = counters_of(row(action, state, error_code, count=3))
    expected = zeros(**{counter: 3}) if counter is not None else zeros()
    assert counters == expected


def test_conflict_counts_as_conflict_not_blocked_or_failed():
    """Conflict items are persisted blocked with code 'conflict': they count only as conflicts."""
    counters = counters_of(
        row(A.CONFLICT, S.BLOCKED, CONFLICT_CODE, count=2),
        row(A.UPDATE, S.FAILED, CONFLICT_CODE, count=1),
    )
    assert counters["conflicts"] == 3
    assert counters["blocked"] == 0
    assert counters["failed"] == 0


def test_rows_of_one_counter_add_up():
    """Several rows mapping to the same counter are summed."""
    counters = counters_of(
        row(A.CREATE, S.FAILED, "attempts_exhausted", count=2),
        row(A.UPDATE, S.FAILED, "verify_mismatch", count=5),
    )
    assert counters["failed"] == 7


def test_planning_counters_flow_into_the_counters():
    """scanned, checkpoint_skipped and unchanged come from the planning counters."""
    planning = PlanningCounters(
        scanned={"git_ref": 10, "label": 4},
        checkpoint_skipped={"git_ref": 6, "label": 4},
        unchanged={"git_ref": 1},
    )
    counters = counters_of(planning=planning)
    assert counters == zeros(scanned=14, checkpoint_skipped=10, unchanged=1)


def test_unchanged_adds_audit_confirmations_and_completed_noops():
    """unchanged = links a full audit confirmed (no item) + completed NOOP items."""
    planning = PlanningCounters(unchanged={"git_ref": 4})
    counters = counters_of(row(A.NOOP, S.COMPLETED, count=2), planning=planning)
    assert counters["unchanged"] == 6


def test_per_type_buckets_keep_types_apart_and_carry_every_counter():
    """Per-type counters are full counter dicts, one per object type seen."""
    planning = PlanningCounters(scanned={"git_ref": 3, "label": 2})
    _, per_type, _ = build_counters(
        [
            row(A.CREATE, S.COMPLETED, count=2),
            row(A.DELETE, S.COMPLETED, object_type="label"),
            row(A.CONFLICT, S.BLOCKED, CONFLICT_CODE, object_type="label"),
        ],
        planning,
    )
    assert per_type == {
        "git_ref": zeros(scanned=3, created=2),
        "label": zeros(scanned=2, deleted=1, conflicts=1),
    }


def test_per_type_buckets_sum_to_the_totals():
    """Adding the per-type buckets gives the overall counters."""
    planning = PlanningCounters(scanned={"git_ref": 3, "label": 2}, unchanged={"label": 1})
    counters, per_type, _ = build_counters(
        [
            row(A.CREATE, S.COMPLETED, count=2),
            row(A.UPDATE, S.FAILED, "x", object_type="label"),
            row(A.NOOP, S.COMPLETED, object_type="issue"),
        ],
        planning,
    )
    for name in COUNTER_NAMES:
        assert counters[name] == sum(bucket[name] for bucket in per_type.values())


def test_row_without_counter_creates_no_per_type_bucket():
    """A type whose rows map to no counter (e.g. still planned) gets no per-type bucket."""
    _, per_type, planned = build_counters(
        [row(A.CREATE, S.PLANNED, object_type="label")], PlanningCounters()
    )
    assert per_type == {}
    assert planned == {"create": 1}


def test_planned_actions_count_every_row_by_action_whatever_its_state():
    """Planned actions sum all rows per action, keyed by the plain action string."""
    _, _, planned = build_counters(
        [
            row(A.CREATE, S.COMPLETED, count=2),
            row(A.CREATE, S.FAILED, "x", count=1),
            row(A.CREATE, S.PLANNED, count=4, object_type="label"),
            row(A.CONFLICT, S.BLOCKED, CONFLICT_CODE, count=3),
            row(A.REPORT, S.COMPLETED, count=5),
        ],
        PlanningCounters(),
    )
    assert planned == {"create": 7, "conflict": 3, "report": 5}
    assert all(type(key) is str for key in planned)


def test_build_counters_does_not_mutate_planning_counters():
    """The planning counters handed in are read, not modified."""
    planning = PlanningCounters(scanned={"git_ref": 1})
    build_counters([row(A.CREATE, S.COMPLETED)], planning)
    assert planning.to_dict() == {
        "scanned": {"git_ref": 1},
        "checkpoint_skipped": {},
        "unchanged": {},
    }


def test_planning_counters_round_trip_through_dict():
    """PlanningCounters survive to_dict/from_dict unchanged (as stored on the Run)."""
    planning = PlanningCounters({"git_ref": 3}, {"git_ref": 2}, {"git_ref": 1})
    again = PlanningCounters.from_dict(planning.to_dict())
    assert again == planning


@pytest.mark.parametrize("data", [None, {}])
def test_planning_counters_from_nothing_are_empty(data):
    """A Run without stored planning counters reads as empty counters."""
    assert PlanningCounters.from_dict(data) == PlanningCounters()


def test_planning_counters_from_partial_dict():
    """Missing sections of stored planning counters read as empty."""
    assert PlanningCounters.from_dict({"scanned": {"git_ref": 2}}) == PlanningCounters(
        scanned={"git_ref": 2}
    )


# -- final_status ------------------------------------------------------------------------


def test_nothing_wrong_is_completed():
    """No errors, conflicts or pending changes: completed."""
    assert final_status(zeros(created=5, unchanged=3)) is RunStatus.COMPLETED
    assert final_status({}) is RunStatus.COMPLETED


@pytest.mark.parametrize(
    ("counters", "status"),
    [
        (zeros(pending_changes=1), RunStatus.COMPLETED_WITH_PENDING_CHANGES),
        (zeros(conflicts=1, pending_changes=1), RunStatus.REQUIRES_ATTENTION),
        (zeros(failed=1, conflicts=1, pending_changes=1), RunStatus.FAILED),
        (zeros(blocked=1, failed=1, conflicts=1, pending_changes=1), RunStatus.BLOCKED),
    ],
)
def test_item_outcome_precedence(counters, status):
    """blocked > failed > conflicts > pending changes > completed."""
    assert final_status(counters) is status


@pytest.mark.parametrize("code", ["permission_denied", "rate_limited", "result_unknown"])
def test_blocking_run_error_blocks(code):
    """A run error of permission, rate limit or unknown result ends the Run blocked."""
    assert final_status(zeros(), error_code=code) is RunStatus.BLOCKED


@pytest.mark.parametrize(
    "code", ["provider_unavailable", "not_found", "quota_exceeded", "internal"]
)
def test_other_run_error_fails(code):
    """Any other run error ends the Run failed."""
    assert final_status(zeros(), error_code=code) is RunStatus.FAILED


def test_run_error_outranks_item_outcomes():
    """A run error decides the status whatever the item counters say."""
    counters = zeros(blocked=2, conflicts=1)
    assert final_status(counters, error_code="provider_unavailable") is RunStatus.FAILED
    assert final_status(zeros(failed=3), error_code="rate_limited") is RunStatus.BLOCKED


def test_cancelled_outranks_everything():
    """A cancelled Run is cancelled, even with a run error and failed items."""
    counters = zeros(blocked=1, failed=1, conflicts=1, pending_changes=1)
    assert (
        final_status(counters, cancelled=True, error_code="result_unknown") is RunStatus.CANCELLED
    )


def test_conflict_items_end_the_run_requiring_attention():
    """Conflict rows (persisted blocked/conflict) give requires_attention, not blocked."""
    counters = counters_of(row(A.CONFLICT, S.BLOCKED, CONFLICT_CODE), row(A.CREATE, S.COMPLETED))
    assert final_status(counters) is RunStatus.REQUIRES_ATTENTION


def test_superseded_items_end_the_run_with_pending_changes():
    """Superseded rows give completed_with_pending_changes."""
    counters = counters_of(row(A.UPDATE, S.SUPERSEDED, "superseded"), row(A.CREATE, S.COMPLETED))
    assert final_status(counters) is RunStatus.COMPLETED_WITH_PENDING_CHANGES


def test_report_rows_alone_complete_the_run():
    """Target-only reports are informational: the Run still completes."""
    assert final_status(counters_of(row(A.REPORT, S.COMPLETED, count=4))) is RunStatus.COMPLETED


# -- item_problems -----------------------------------------------------------------------


def test_no_trouble_no_problems():
    """Completed writes, noops and not-yet-settled items produce no problems."""
    rows = [
        row(A.CREATE, S.COMPLETED),
        row(A.NOOP, S.COMPLETED),
        row(A.UPDATE, S.PLANNED),
        row(A.DELETE, S.APPLYING),
        row(A.CREATE, S.VERIFYING),
    ]
    assert item_problems(rows) == []


def test_conflict_row_becomes_a_conflict_problem():
    """A conflict group is one non-retryable conflict problem with count and examples."""
    problems = item_problems(
        [row(A.CONFLICT, S.BLOCKED, CONFLICT_CODE, count=2, examples=("branch a", "branch b"))]
    )
    assert len(problems) == 1
    problem = problems[0]
    assert problem.error_code == CONFLICT_CODE
    assert (problem.problem_type, problem.category) == ("repository_conflict", "conflict")
    assert problem.retryable is False
    assert problem.count == 2
    assert problem.object_type == "git_ref"
    assert list(problem.examples) == ["branch a", "branch b"]
    assert "use_source" in problem.suggested_action
    assert problem.message.startswith("2 git_ref object(s) exist on the target")


def test_failed_row_with_conflict_code_is_a_conflict_problem():
    """A write refused as a conflict reads as a conflict, with the item's own message."""
    problems = item_problems([row(A.UPDATE, S.FAILED, CONFLICT_CODE, error_message="ref moved")])
    assert [(p.error_code, p.problem_type, p.category, p.message) for p in problems] == [
        (CONFLICT_CODE, "repository_conflict", "conflict", "ref moved")
    ]


def test_report_row_becomes_a_preserved_problem():
    """Target-only objects are a notice (category preserved), not retryable; their kind
    is the standby's divergence from the authority."""
    (problem,) = item_problems([row(A.REPORT, S.COMPLETED, count=3, examples=("branch x",))])
    assert (problem.error_code, problem.category) == ("target_only_preserved", "preserved")
    assert problem.problem_type == "repository_conflict"
    assert problem.count == 3
    assert problem.retryable is False
    assert problem.message.startswith("3 git_ref object(s) exist only on the target")


@pytest.mark.parametrize(
    ("code", "retryable", "suggestion", "kind"),
    [
        ("result_unknown", True, "recover the Run", "external_result_unknown"),
        ("verify_mismatch", True, "run a full audit", "verification_failed"),
        (
            "permission_denied",
            False,
            "grant the connection's credentials access",
            "authorization_required",
        ),
        ("quota_exceeded", False, "raise the forge's quota", "quota_exceeded"),
        ("attempts_exhausted", False, "retry the Run once the cause is fixed", "sync_failed"),
        ("rate_limited", True, "send the request again after retry_at", "temporarily_rate_limited"),
        ("provider_unavailable", True, "wait for the forge to come back", "sync_failed"),
        ("git_transport_failed", True, "the Run can be retried", "sync_failed"),
        ("dependency_missing", False, "inspect the Run's items and retry", "sync_failed"),
        ("weird_code", False, "inspect the Run's items and retry", "sync_failed"),
    ],
)
def test_failed_row_problem_suggestion_and_retryability(code, retryable, suggestion, kind):
    """Failed items carry their code, the error tree's suggestion, kind and whether a rerun
    clears it (an item's own code, like a refusal: a generic suggestion, not retryable, a
    failed sync)."""
    (problem,) = item_problems([row(A.CREATE, S.FAILED, code, count=2)])
    assert problem.error_code == code
    assert (problem.problem_type, problem.category) == (kind, "error")
    assert problem.retryable is retryable
    assert suggestion in problem.suggested_action
    assert problem.message == "2 git_ref item(s) failed"


def test_the_report_and_the_error_tree_say_the_same():
    """One source: every code of the tree reads in a report as the tree says, its kind
    included, for a failed and a blocked item alike."""
    for cls in errors.all_error_classes():
        for state in (S.FAILED, S.BLOCKED):
            (problem,) = item_problems([row(A.CREATE, state, cls.code)])
            assert problem.suggested_action == cls.suggested_action
            assert problem.retryable is cls.rerun_clears()
            assert problem.problem_type is cls.problem_type, cls


def test_blocked_row_is_a_blocked_problem():
    """Blocked items are category 'blocked'; without a code they read 'item_failed', a
    failed sync."""
    blocked_with_code, blocked_without = item_problems(
        [row(A.DELETE, S.BLOCKED, "result_unknown"), row(A.CREATE, S.BLOCKED)]
    )
    assert (
        blocked_with_code.error_code,
        blocked_with_code.category,
        blocked_with_code.problem_type,
    ) == ("result_unknown", "blocked", "external_result_unknown")
    assert blocked_with_code.retryable is True
    assert (
        blocked_without.error_code,
        blocked_without.category,
        blocked_without.problem_type,
    ) == ("item_failed", "blocked", "sync_failed")
    assert blocked_without.message == "1 git_ref item(s) blocked"


def test_failed_row_prefers_the_items_error_message():
    """When the items carry an error message, the problem shows it."""
    (problem,) = item_problems([row(A.CREATE, S.FAILED, "x", error_message="push refused")])
    assert problem.message == "push refused"


def test_superseded_row_is_a_retryable_pending_change():
    """Superseded items become one retryable 'pending_change' notice."""
    (problem,) = item_problems(
        [row(A.UPDATE, S.SUPERSEDED, "superseded", count=4, examples=("branch m",))]
    )
    assert (problem.error_code, problem.category) == ("superseded", "pending_change")
    assert problem.category in NOTICE_CATEGORIES
    assert problem.retryable is True
    assert problem.count == 4
    assert list(problem.examples) == ["branch m"]


def test_problems_keep_types_apart():
    """The same trouble on two object types gives two problems, one per type."""
    problems = item_problems(
        [row(A.CREATE, S.FAILED, "x"), row(A.CREATE, S.FAILED, "x", object_type="label")]
    )
    assert [(p.object_type, p.error_code) for p in problems] == [("git_ref", "x"), ("label", "x")]


def test_same_trouble_of_one_type_across_actions_is_one_problem():
    """Docstring: one problem per (type, kind of trouble), even if items had different actions.

    Rows come from GROUP BY (object_type, action, state, error_code), so one kind of
    trouble on one type arrives split by action; the report should not list it twice.
    """
    problems = item_problems(
        [
            row(A.CREATE, S.FAILED, "verify_mismatch", count=2, examples=("branch a",)),
            row(A.UPDATE, S.FAILED, "verify_mismatch", count=3, examples=("branch b",)),
        ]
    )
    assert [(p.object_type, p.error_code, p.count) for p in problems] == [
        ("git_ref", "verify_mismatch", 5)
    ]
    assert sorted(problems[0].examples) == ["branch a", "branch b"]


def test_superseded_across_actions_is_one_problem():
    """Docstring: superseded creates and updates of one type are one pending-change problem."""
    problems = item_problems(
        [
            row(A.CREATE, S.SUPERSEDED, "superseded", count=1),
            row(A.UPDATE, S.SUPERSEDED, "superseded", count=2),
        ]
    )
    assert [(p.error_code, p.count) for p in problems] == [("superseded", 3)]


def test_problem_to_dict_includes_optional_fields_only_when_set():
    """to_dict always has the six report fields and count; type and examples when set."""
    bare = Problem("code", ProblemType.SYNC_FAILED, "error", "msg", "do this", retryable=False)
    assert bare.to_dict() == {
        "error_code": "code",
        "problem_type": "sync_failed",
        "category": "error",
        "message": "msg",
        "suggested_action": "do this",
        "retryable": False,
        "count": 1,
    }
    full = Problem(
        "code", ProblemType.QUOTA_EXCEEDED, "error", "msg", "do this", True, 2, "git_ref", ("x",)
    )
    assert full.to_dict() == {
        "error_code": "code",
        "problem_type": "quota_exceeded",
        "category": "error",
        "message": "msg",
        "suggested_action": "do this",
        "retryable": True,
        "count": 2,
        "object_type": "git_ref",
        "examples": ["x"],
    }


def test_every_problem_a_report_can_hold_has_one_of_the_seven_kinds():
    """Whatever rows a Run ends with, each problem's kind is a ProblemType and its
    category says whether it is a failure or a notice."""
    kinds = {kind.value for kind in ProblemType}
    assert len(kinds) == 7
    codes = [None, "item_failed", "weird_code", *(c.code for c in errors.all_error_classes())]
    rows = [
        row(action, state, code)
        for action in A
        for state in S
        for code in codes
        if not (action is A.REPORT and code is not None)
    ]
    problems = item_problems(rows)
    assert {p.category for p in problems} == {
        "conflict",
        "preserved",
        "error",
        "blocked",
        "pending_change",
    }
    for problem in problems:
        assert problem.to_dict()["problem_type"] in kinds
        assert problem.category in (*FAILURE_CATEGORIES, *NOTICE_CATEGORIES)
