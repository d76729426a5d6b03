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
