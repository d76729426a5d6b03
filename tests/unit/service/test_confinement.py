"""``git:`` locators arriving over the API: a ``file://`` path stays inside the roots, a
network remote falls under a prefix the operator listed (the service's own credentials
reach nothing else)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reposync.config import Settings
from reposync.errors import LocatorRefused
from reposync.service.confinement import confine

PREFIXES = ("https://git.example.com/acme/", "git@git.example.com:acme/", "ssh://git@h/team")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path / "roots" / "data",
        local_roots=(tmp_path / "roots",),
        git_remote_prefixes=PREFIXES,
    )


@pytest.mark.parametrize(
    "locator",
    [
        "git:https://git.example.com/acme/app.git",
        "git:https://GIT.example.com:443/acme/deep/app.git/",
        "git:git@git.example.com:acme/app.git",
        "git:ssh://git@h/team/app.git",
    ],
)
def test_a_remote_under_a_listed_prefix_binds_in_its_canonical_spelling(settings, locator):
    """Under a prefix (in canonical spelling): admitted, spelled as the provider spells it."""
    confined = confine(locator, settings)
    assert confined.startswith("git:")
    assert any(confined.removeprefix("git:").startswith(p) for p in PREFIXES)


@pytest.mark.parametrize(
    "locator",
    [
        "git:https://git.example.com/acme-evil/app.git",  # a prefix ends at a segment
        "git:https://git.example.com/other/app.git",
        "git:http://git.example.com/acme/app.git",  # another scheme is another server
        "git:git@git.example.com:acmex/app.git",
        "git:ssh://git@h/teammate/app.git",
        "git:ssh://git@h:2222/team/app.git",
        "git:https://evil.example/acme/app.git",
    ],
)
def test_a_remote_outside_every_prefix_is_refused(settings, locator):
    """Outside the prefixes (a longer segment, another scheme, host or port): refused."""
    with pytest.raises(LocatorRefused, match="not under a Git remote prefix"):
        confine(locator, settings)


def test_without_prefixes_the_api_takes_no_network_remote(settings):
    """No REPOSYNC_GIT_REMOTE_PREFIXES: every network git: locator is refused."""
    bare = settings.with_overrides(git_remote_prefixes=())
    with pytest.raises(LocatorRefused, match="no REPOSYNC_GIT_REMOTE_PREFIXES"):
        confine("git:https://git.example.com/acme/app.git", bare)


def test_a_file_remote_is_confined_to_the_roots_like_a_local_path(settings, tmp_path):
    """git:file:// inside a root binds by its real path; outside, through a link, or in
    the data directory it is refused as a local: path would be."""
    roots = tmp_path / "roots"
    (roots / "team").mkdir(parents=True)
    (roots / "link").symlink_to(roots / "team")
    assert confine(f"git:file://{roots}/link/app.git", settings) == (
        f"git:file://{(roots / 'team').resolve()}/app.git"
    )
    (roots / "escape").symlink_to(tmp_path)
    for outside in (
        f"git:file://{tmp_path}/secret.git",
        f"git:file://{roots}/escape/secret.git",
        f"git:file://{roots}/data/stolen.git",
    ):
        with pytest.raises(LocatorRefused):
            confine(outside, settings)
