"""The GitHub fake's wikis: ``<repo>.wiki.git`` over Git smart HTTP, and ``has_wiki``."""

from __future__ import annotations

import pytest

from tests.fakes.github import github_fake
from tests.fakes.test_github_fake import REPO, api, git, seeded
from tests.gitrepo import generate, refs

WIKI = REPO + ".wiki"

fake = pytest.fixture(name="fake")(github_fake)


def test_a_wiki_is_not_found_until_its_first_push_creates_it(fake, tmp_path):
    """Reading a never-pushed wiki is "Repository not found"; the first push creates it,
    then it reads like any repository; the repository's own refs stay untouched."""
    token, s = seeded(fake)
    assert s.get(api(fake, "")).json()["has_wiki"] is True
    missing = git("ls-remote", fake.git_remote(WIKI, token), check=False)
    assert missing.returncode != 0
    assert "not found" in missing.stderr.lower()
    assert not fake.state.wiki_dir(REPO).exists()
    before = refs(fake.state.git_dir(REPO))

    pages = generate(tmp_path / "pages.git", commits=2, branches=0, tags=0)
    git("--git-dir", str(pages), "push", "-q", fake.git_remote(WIKI, token), "main:master")

    pushed = refs(pages)["refs/heads/main"]
    assert refs(fake.state.wiki_dir(REPO)) == {"refs/heads/master": pushed}
    listed = git("ls-remote", fake.git_remote(WIKI, token)).stdout
    assert f"{pushed}\trefs/heads/master" in listed
    assert refs(fake.state.git_dir(REPO)) == before
    fake.assert_clean()


def test_a_disabled_wiki_is_not_served_and_never_created(fake, tmp_path):
    """With has_wiki off a push is refused (404) and creates nothing; turned on, the push
    goes through; turned off again, the existing wiki is hidden from reads too."""
    token, s = seeded(fake)
    off = s.patch(api(fake, ""), json={"has_wiki": False})
    assert off.status_code == 200
    assert off.json()["has_wiki"] is False
    pages = generate(tmp_path / "pages.git", commits=1, branches=0, tags=0)
    push = ["--git-dir", str(pages), "push", "-q", fake.git_remote(WIKI, token), "main:master"]

    refused = git(*push, check=False)
    assert refused.returncode != 0
    assert "not found" in refused.stderr.lower()
    assert not fake.state.wiki_dir(REPO).exists()

    assert s.patch(api(fake, ""), json={"has_wiki": True}).json()["has_wiki"] is True
    git(*push)
    assert "refs/heads/master" in refs(fake.state.wiki_dir(REPO))

    s.patch(api(fake, ""), json={"has_wiki": False})
    hidden = git("ls-remote", fake.git_remote(WIKI, token), check=False)
    assert hidden.returncode != 0
    fake.assert_clean()


def test_pushing_to_a_wiki_needs_write_access(fake, tmp_path):
    """A read-only token gets 403 from the wiki's receive-pack, as from the repository's;
    the wiki is not created by the refused attempt."""
    seeded(fake)
    reader = fake.add_token("acme", write=False)
    pages = generate(tmp_path / "pages.git", commits=1, branches=0, tags=0)
    refused = git(
        "--git-dir", str(pages), "push", fake.git_remote(WIKI, reader), "main:master", check=False
    )
    assert refused.returncode != 0
    assert "403" in refused.stderr
    assert not fake.state.wiki_dir(REPO).exists()
    fake.assert_clean()
