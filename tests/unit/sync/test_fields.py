"""The one description of the canonical fields, and the builders that follow it."""

from __future__ import annotations

import inspect

import pytest

from reposync.sync import objects
from reposync.sync.canonical import ObjectRef
from reposync.sync.fields import REQUIRED, SHAPES, Kind
from reposync.sync.vocabulary import ObjectType

#: What a builder takes besides the payload fields: identity and structure.
STRUCTURE = {"identity", "revision", "number", "parent", "parent_key", "in_reply_to", "fields"}


def test_every_described_type_has_a_builder_and_back():
    """The description and the builders cover the same forge types."""
    assert set(SHAPES) == set(objects.BUILDERS)


@pytest.mark.parametrize("object_type", sorted(SHAPES, key=str))
def test_builders_take_their_fields_from_the_description_only(object_type):
    """No builder lists a payload field of its own: its signature is structure plus
    ``**fields``, so a field exists once, in ``reposync.sync.fields``."""
    shape = SHAPES[object_type]
    parameters = inspect.signature(objects.BUILDERS[object_type]).parameters
    assert set(parameters) <= STRUCTURE
    assert parameters["fields"].kind is inspect.Parameter.VAR_KEYWORD
    assert ("number" in parameters) is shape.numbered
    assert ("parent" in parameters) is bool(shape.parents)
    assert ("in_reply_to" in parameters) is shape.replies


@pytest.mark.parametrize("object_type", sorted(SHAPES, key=str))
def test_each_shape_is_consistent(object_type):
    """Names are unique; choices belong to choice fields and hold the default; derived
    and omitted fields have a default; the creation time is one of the type's times."""
    shape = SHAPES[object_type]
    assert shape.object_type is object_type
    assert len(set(shape.names)) == len(shape.names)
    for field in shape.fields:
        assert bool(field.choices) is (field.kind is Kind.CHOICE), field
        if field.choices and field.default is not REQUIRED:
            assert field.default in field.choices, field
        if field.derived or field.omit_default:
            assert not field.required, field
    if shape.created is not None:
        [created] = [f for f in shape.fields if f.name == shape.created]
        assert created.kind is Kind.TIME
    assert not (shape.numbered and shape.parents)
    assert not shape.replies or shape.parents


def test_unknown_missing_and_derived_fields_are_refused_by_name():
    """A field the description does not give a type, or a required one left out, is a
    MalformedObject naming it; a derived field cannot be given."""
    ref = ObjectRef(ObjectType.REVIEW, "1")
    with pytest.raises(objects.MalformedObject, match="do not form a label: unknown size"):
        objects.label("1", "1", name="bug", size=3)
    with pytest.raises(objects.MalformedObject, match="do not form a issue: missing title, author"):
        objects.issue("1", "1", number=1, created_at="2026-01-01T00:00:00Z")
    with pytest.raises(objects.MalformedObject, match="unknown is_reply"):
        objects.review_comment(
            "1",
            "1",
            parent=ref,
            parent_key=None,
            path="a",
            line=1,
            commit_id="c",
            body="",
            author="a",
            created_at=None,
            is_reply=True,
        )


def test_a_field_left_at_its_default_is_omitted_only_where_described():
    """``omit_default`` keeps a later field out of older objects' payloads (and hashes)."""
    common = {"number": 1, "title": "t", "author": "a", "created_at": "2026-01-01T00:00:00Z"}
    names = set(objects.issue("1", "1", **common).payload)
    assert names == {f.name for f in SHAPES[ObjectType.ISSUE].fields if not f.omit_default}


def test_every_kind_of_field_has_a_check():
    """A new ``Kind`` is not described until the builders know how to check it."""
    assert set(objects.CHECKS) == set(Kind)
