"""The provider conformance suite, owners part: ``OwnerLister`` and ``RepositoryCreator``.

Same harnesses as ``test_conformance.py``. An owner (a directory of bare repositories, an
organization) lists its repositories by name with the locators the provider opens, creates
an empty one that then opens as a target, never creates over a taken name, and never
makes one more public than asked. A whole-owner binding (``service/owners.py``) relies on
exactly this.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from reposync.errors import Conflict, InvalidLocator, OwnerNotFound
from reposync.providers.base import (
    EmptyChecker,
    EndpointSpec,
    OwnerLister,
    RepositoryCreator,
    VisibilityReporter,
)
from reposync.providers.registry import parse_owner, provider_class, provider_names
from tests.providers.conformance import HARNESSES, Harness, make_harness


@pytest.fixture(params=HARNESSES)
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    fake = request.getfixturevalue("github_fake") if request.param == "github" else None
    forgejo = request.getfixturevalue("forgejo_fake") if request.param == "forgejo" else None
    h = make_harness(request.param, tmp_path, fake, forgejo_fake=forgejo)
    yield h
    h.close()


def lister(harness: Harness) -> type[OwnerLister]:
    cls = provider_class(harness.name)
    assert issubclass(cls, OwnerLister)
    return cls


def test_an_owner_lists_its_repositories_by_name_as_the_provider_opens_them(harness):
    """A new owner lists nothing; repositories made in it are listed sorted by name, each
    with the locator repository_locator gives and that opens it, and its visibility."""
    cls = lister(harness)
    owner = harness.make_owner()
    assert cls.list_repositories(owner, harness.env) == []
    visibility = harness.limits.visibilities[-1]
    harness.add_to_owner(owner, "zeta")
    harness.add_to_owner(owner, "alpha", visibility=visibility)
    listed = cls.list_repositories(owner, harness.env)
    assert [repo.name for repo in listed] == ["alpha", "zeta"]
    for repo in listed:
        assert repo.locator == cls.repository_locator(owner.locator, repo.name)
        opened = harness.open_target(EndpointSpec(harness.name, repo.locator))
        assert opened.endpoint().locator == repo.locator
        if repo.repository_id is not None:
            assert opened.endpoint().repository_id == repo.repository_id
    assert listed[0].visibility == visibility
    assert parse_owner(f"{harness.name}:{owner.locator}") == replace(owner, connection_id=None)
    harness.assert_clean()


def test_an_owner_that_does_not_exist_is_owner_not_found(harness):
    """Listing an owner nobody has raises OwnerNotFound, not an empty list."""
    cls = lister(harness)
    owner = harness.make_owner()
    missing = replace(owner, locator=cls.normalize_owner(owner.locator + "-gone"))
    with pytest.raises(OwnerNotFound):
        cls.list_repositories(missing, harness.env)
    harness.assert_clean()


def test_a_created_repository_is_empty_listed_and_opens_as_a_target(harness):
    """create_repository makes an empty repository of the owner that exists, opens as a
    writable target with the id it was created with, and is listed; the same name again is
    a Conflict and changes nothing."""
    cls = provider_class(harness.name)
    assert issubclass(cls, RepositoryCreator)
    assert issubclass(cls, OwnerLister)
    owner = harness.make_owner()
    made = cls.create_repository(owner, "mirror", "private", "a mirror", harness.env)
    assert made.locator == cls.repository_locator(owner.locator, "mirror")
    spec = EndpointSpec(harness.name, made.locator)
    assert cls.exists(spec, harness.env)
    target = harness.open_target(spec)
    assert isinstance(target, EmptyChecker)
    assert target.is_empty()
    assert target.endpoint().repository_id == made.repository_id
    with pytest.raises(Conflict):
        cls.create_repository(owner, "mirror", "private", None, harness.env)
    assert [repo.repository_id for repo in cls.list_repositories(owner, harness.env)] == [
        made.repository_id
    ]
    harness.assert_clean()


@pytest.mark.parametrize("asked", ["public", "internal", "private"])
def test_a_created_repository_is_never_more_public_than_asked(harness, asked):
    """Created with a visibility, a repository is that visible when the forge has it, or
    less (never more): its listing and its opened provider say the same."""
    cls = provider_class(harness.name)
    assert issubclass(cls, RepositoryCreator)
    made = cls.create_repository(harness.make_owner(), f"v-{asked}", asked, None, harness.env)
    target = harness.open_target(EndpointSpec(harness.name, made.locator))
    assert isinstance(target, VisibilityReporter)
    rank = {"private": 0, "internal": 1, "public": 2}
    assert target.visibility() == made.visibility
    assert rank[target.visibility()] <= rank[asked]
    if asked in harness.limits.visibilities:
        assert target.visibility() == asked
    harness.assert_clean()


def test_a_name_that_cannot_be_a_repository_is_refused_before_anything_is_made(harness):
    """A name that would leave the owner (a path, ``..``) is InvalidLocator."""
    cls = lister(harness)
    owner = harness.make_owner()
    for name in ("../escape", "..", "a/b"):
        with pytest.raises(InvalidLocator):
            cls.repository_locator(owner.locator, name)
    assert cls.list_repositories(owner, harness.env) == []
    harness.assert_clean()


#: An owner's location where a bare login is not one (a Forgejo owner names its instance).
OWNER_LOCATIONS = {"forgejo": "git.example.com/owner", "gitea": "git.example.com/owner"}


@pytest.mark.parametrize("name", provider_names())
def test_only_a_provider_that_lists_owners_takes_an_owner_locator(name):
    """Every registered provider: an owner locator parses exactly when its class declares
    OwnerLister (a plain Git remote, say, has no owner to list), and RepositoryCreator
    comes only with OwnerLister (a created repository must be found again by its name)."""
    cls = provider_class(name)
    if issubclass(cls, OwnerLister):
        location = OWNER_LOCATIONS.get(name, "owner")
        assert parse_owner(f"{name}:{location}").provider == name
    else:
        with pytest.raises(InvalidLocator, match="cannot list an owner"):
            parse_owner(f"{name}:owner")
        assert not issubclass(cls, RepositoryCreator)
