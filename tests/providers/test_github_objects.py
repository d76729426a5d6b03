"""GitHub's mapping gives every canonical field a source: a field added to the one
description (``reposync.sync.fields``) fails here until GitHub's reads map it."""

from __future__ import annotations

from typing import Any

import pytest

from reposync.providers.github.writes.carriers import CARRIER_FIELDS
from reposync.providers.github.writes.context import ATTRIBUTED_FIELDS
from reposync.sync import objects
from reposync.sync.fields import SHAPES
from reposync.sync.vocabulary import ObjectType
from tests.providers.test_objects_pinned import github_samples

#: Types GitHub's reads never build: reactions are archive-only everywhere.
NOT_READ = {ObjectType.REACTION}


def test_every_mapping_passes_every_field_of_its_type(monkeypatch: pytest.MonkeyPatch):
    """Each GitHub mapping (native, attributed, carried in a comment) names every field
    of its type's description, so none silently falls back to a builder default."""
    given: list[tuple[ObjectType, frozenset[str]]] = []
    for object_type, builder in objects.BUILDERS.items():

        def recording(
            *args: Any, _type: ObjectType = object_type, _builder: Any = builder, **kwargs: Any
        ) -> Any:
            obj = _builder(*args, **kwargs)
            given.append((_type, frozenset(kwargs)))
            return obj

        monkeypatch.setattr(objects, builder.__name__, recording)
    github_samples()
    assert {t for t, _ in given} == set(SHAPES) - NOT_READ
    structure = {"number", "parent", "parent_key", "in_reply_to"}
    for object_type, names in given:
        wanted = {f.name for f in SHAPES[object_type].arguments}
        assert names - structure == wanted, object_type


@pytest.mark.parametrize("object_type", sorted(ATTRIBUTED_FIELDS, key=str))
def test_the_attribution_header_carries_canonical_fields_only(object_type):
    """What GitHub's writes put in the attribution header are fields of the type."""
    assert set(ATTRIBUTED_FIELDS[object_type]) <= set(SHAPES[object_type].names)


def test_a_carrier_keeps_pull_request_fields():
    """A carrier issue's header holds fields of the pull request it carries."""
    assert set(CARRIER_FIELDS) <= set(SHAPES[ObjectType.PULL_REQUEST].names)
