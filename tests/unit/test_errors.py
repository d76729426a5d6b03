"""The error tree: stable, unique codes; every class placed and documented."""

from __future__ import annotations

from datetime import UTC, datetime

import reposync.errors as errors


def test_codes_are_unique():
    """No two error classes share a code (the code is the public contract)."""
    codes = [cls.code for cls in errors.all_error_classes()]
    assert len(codes) == len(set(codes))


def test_every_class_is_drawn_in_the_module_tree():
    """The docstring tree lists every class with its code."""
    doc = errors.__doc__ or ""
    for cls in errors.all_error_classes():
        assert f"{cls.__name__}" in doc, cls
        assert cls.code in doc, cls


def test_usage_errors_exit_2_and_lookups_are_lookup_errors():
    """Bad input exits 2; not-found errors are also LookupErrors for callers."""
    assert errors.InvalidLocator("x").exit_status == 2
    assert errors.DatabaseUnavailable("x").exit_status == 2
    assert isinstance(errors.RepositoryNotFound("x"), LookupError)
    assert isinstance(errors.ObjectNotFound("x"), LookupError)


def test_rate_limited_carries_retry_at():
    """A rate limit says when to come back."""
    when = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    data = errors.RateLimited("slow down", retry_at=when).to_dict()
    assert data["error_code"] == "rate_limited"
    assert data["retry_at"] == "2026-12-02T12:00:00+00:00"
    assert data["retryable"] is True


#: The classes whose kind is not ReposyncError's ``sync_failed`` (their subclasses inherit).
KINDS = {
    errors.Unauthenticated: "authorization_required",
    errors.Forbidden: "authorization_required",
    errors.ConnectionNotGranted: "authorization_required",
    errors.PermissionDenied: "authorization_required",
    errors.VisibilityUnconfirmed: "authorization_required",
    errors.GitHubCodeRefused: "authorization_required",
    errors.RateLimited: "temporarily_rate_limited",
    errors.GitRateLimited: "temporarily_rate_limited",
    errors.QuotaExceeded: "quota_exceeded",
    errors.ResultUnknown: "external_result_unknown",
    errors.ResultUnknownUnresolved: "external_result_unknown",
    errors.Conflict: "repository_conflict",
    errors.VerifyMismatch: "verification_failed",
}


def test_every_code_maps_to_one_of_the_seven_problem_kinds():
    """Each class's problem_type is a ProblemType: its own or its nearest ancestor's in
    KINDS, sync_failed for the rest; the error documents carry it beside the code."""
    assert {kind.value for kind in errors.ProblemType} == {
        "authorization_required",
        "temporarily_rate_limited",
        "quota_exceeded",
        "external_result_unknown",
        "repository_conflict",
        "verification_failed",
        "sync_failed",
    }
    for cls in errors.all_error_classes():
        assert isinstance(cls.problem_type, errors.ProblemType), cls
        nearest = next((KINDS[base] for base in cls.__mro__ if base in KINDS), "sync_failed")
        assert cls.problem_type == nearest, cls
        assert errors.error_class(cls.code) is cls
    error = errors.PermissionDenied("no access")
    assert error.to_dict()["problem_type"] == "authorization_required"


def test_the_module_docstring_names_every_kind_with_its_classes():
    """The docstring's table of kinds lists each kind once, with the classes KINDS gives it."""
    table: dict[str, str] = {}
    current = None
    for line in (errors.__doc__ or "").splitlines():
        first = line.split()[0] if line.split() else ""
        if line.startswith("    ") and first in set(errors.ProblemType):
            current = first
            table[current] = line.removeprefix("    " + first)
        elif current is not None and line.startswith("      "):
            table[current] += line
        else:
            current = None
    assert set(table) == {kind.value for kind in errors.ProblemType}
    for cls, kind in KINDS.items():
        assert cls.__name__ in table[kind].replace(",", " ").split(), (cls, kind)
