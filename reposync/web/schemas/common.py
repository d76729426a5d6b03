"""Fields every resource uses: bounded ids, bounded text, the problem document."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError, fields, validate

from reposync.errors import ProblemType

#: Ids are 32-bit integer columns: larger values cannot name a record (and would overflow).
MAX_ID = 2**31 - 1
#: The largest page the service answers (``reposync.service.queries.MAX_PAGE``).
MAX_PAGE = 200


def id_rule(name: str) -> str:
    """A URL rule segment for a record id (ids out of range cannot match: 404)."""
    return f"<int(min=1, max={MAX_ID}):{name}>"


def no_nul(value: str) -> None:
    if "\x00" in value:  # PostgreSQL text cannot hold NUL: refuse it here, not with a 500
        raise ValidationError("must not contain NUL characters")


def text(max_length: int, **kwargs: Any) -> fields.String:
    """A non-empty string of at most ``max_length`` characters, without NUL."""
    return fields.String(validate=[validate.Length(min=1, max=max_length), no_nul], **kwargs)


def record_id(**kwargs: Any) -> fields.Integer:
    """An id of a record, or a cursor position (0 means before the first record)."""
    return fields.Integer(validate=validate.Range(min=0, max=MAX_ID), **kwargs)


def limit() -> fields.Integer:
    return fields.Integer(
        load_default=50,
        validate=validate.Range(min=1, max=MAX_PAGE),
        metadata={"description": f"page size, 1 to {MAX_PAGE}"},
    )


def one_of(values: list[str], **kwargs: Any) -> fields.String:
    """A string restricted to ``values`` (documented as an enum)."""
    return fields.String(validate=validate.OneOf(values), **kwargs)


class ProblemSchema(Schema):
    """RFC 9457 problem details: the one error payload of the API."""

    type = fields.String(required=True, metadata={"description": "URI naming the problem"})
    title = fields.String(required=True, metadata={"description": "the HTTP status phrase"})
    status = fields.Integer(required=True)
    detail = fields.String(required=True, metadata={"description": "what went wrong, here"})
    code = fields.String(
        required=True, metadata={"description": "stable error code (reposync.errors)"}
    )
    suggested_action = fields.String(metadata={"description": "what an operator can do"})
    problem_type = one_of(
        [kind.value for kind in ProblemType],
        metadata={"description": "the kind of problem, one action each (README)"},
    )
    retryable = fields.Boolean()
    retry_at = fields.DateTime(metadata={"description": "when a rate limit lifts"})
    errors = fields.Dict(
        metadata={"description": "validation messages by location and field"},
    )
