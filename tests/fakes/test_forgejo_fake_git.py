"""The Forgejo test server's web host: Git over smart HTTP, the wiki, LFS and attachments."""

from __future__ import annotations

import hashlib
import time

import pytest
import requests

from tests.fakes.forge_server.cut_short import send_cut_short
from tests.fakes.forgejo import forgejo_fake
from tests.fakes.gitserver import lfs_store
from tests.fakes.test_github_fake import git
from tests.gitrepo import generate, refs

REPO = "acme/widgets"
LFS = {"Accept": lfs_store.MEDIA_TYPE, "Content-Type": lfs_store.MEDIA_TYPE}

fake = pytest.fixture(name="fake")(forgejo_fake)


def test_push_and_fetch_with_a_token_as_basic_password(fake, tmp_path):
    """A push with the token as password lands every ref; a clone reads them back; no
    credential may read a public repository but not push to it."""
    fake.state.create_repo(REPO)
    token = fake.add_token("acme")
    source = generate(tmp_path / "source.git", commits=3, branches=1, tags=1)
    git("--git-dir", str(source), "push", "-q", "--mirror", fake.git_remote(REPO, token))
    assert refs(fake.state.repo(REPO).git_dir) == refs(source)
    listed = git("ls-remote", fake.git_remote(REPO)).stdout
    assert refs(source)["refs/heads/main"] in listed
    anonymous = git(
        "--git-dir", str(source), "push", fake.git_remote(REPO), "main:other", check=False
    )
    assert anonymous.returncode != 0
    fake.assert_clean()


def test_a_read_scoped_token_cannot_push_and_a_private_repository_hides(fake, tmp_path):
    """read:repository fetches but its push is refused with Forgejo's scope words; a
    private repository asks an anonymous client for credentials."""
    fake.state.create_repo(REPO, private=True, auto_init=True)
    reader = fake.add_token("acme", scopes=("read:repository",))
    assert "refs/heads/main" in git("ls-remote", fake.git_remote(REPO, reader)).stdout
    source = generate(tmp_path / "source.git", commits=1, branches=0, tags=0)
    push = git(
        "--git-dir", str(source), "push", fake.git_remote(REPO, reader), "main:x", check=False
    )
    assert push.returncode != 0
    assert "write:repository" in push.stderr
    assert git("ls-remote", fake.git_remote(REPO), check=False).returncode != 0
    fake.assert_clean()


def test_the_wiki_is_created_by_its_first_push_and_refused_when_disabled(fake, tmp_path):
    """Reading a never-pushed wiki fails, the first push creates it; with the wiki off,
    pushes are refused."""
    fake.state.create_repo(REPO, auto_init=True)
    token = fake.add_token("acme")
    wiki = fake.git_remote(REPO, token, wiki=True)
    assert git("ls-remote", wiki, check=False).returncode != 0
    pages = generate(tmp_path / "pages.git", commits=1, branches=0, tags=0)
    git("--git-dir", str(pages), "push", "-q", wiki, "main:main")
    assert refs(fake.state.repo(REPO).wiki_dir) == {
        "refs/heads/main": refs(pages)["refs/heads/main"]
    }
    fake.state.repo(REPO).has_wiki = False
    refused = git("--git-dir", str(pages), "push", wiki, "main:other", check=False)
    assert refused.returncode != 0
    assert "disabled" in refused.stderr
    fake.assert_clean()


def test_lfs_batch_upload_verify_download_with_the_client_s_own_credentials(fake):
    """The Batch API answers basic-transfer actions on this host carrying the client's
    own Authorization; the upload stores only matching bytes; a stored object needs no
    upload; download returns the bytes and a missing object is error 404."""
    fake.state.create_repo(REPO)
    token = fake.add_token("acme")
    data = b"large file contents"
    oid = hashlib.sha256(data).hexdigest()
    auth = ("acme", token)
    batch = f"{fake.git_url}/{REPO}.git/info/lfs/objects/batch"
    obj = {"oid": oid, "size": len(data)}
    answer = requests.post(
        batch, json={"operation": "upload", "objects": [obj]}, headers=LFS, auth=auth, timeout=10
    ).json()
    actions = answer["objects"][0]["actions"]
    assert answer["transfer"] == "basic"
    assert (
        actions["upload"]["href"] == f"{fake.git_url}/{REPO}.git/info/lfs/objects/{oid}/{len(data)}"
    )
    assert actions["upload"]["header"]["Authorization"].startswith("Basic ")
    wrong = requests.put(
        actions["upload"]["href"],
        data=b"other bytes!!!!!!!!",
        headers=actions["upload"]["header"],
        timeout=10,
    )
    assert wrong.status_code == 422
    put = requests.put(
        actions["upload"]["href"], data=data, headers=actions["upload"]["header"], timeout=10
    )
    verify = requests.post(
        actions["verify"]["href"],
        json=obj,
        headers={**actions["verify"]["header"], **LFS},
        timeout=10,
    )
    assert (put.status_code, verify.status_code) == (200, 200)
    again = requests.post(
        batch, json={"operation": "upload", "objects": [obj]}, headers=LFS, auth=auth, timeout=10
    ).json()
    assert "actions" not in again["objects"][0]
    missing = {"oid": "0" * 64, "size": 1}
    down = requests.post(
        batch,
        json={"operation": "download", "objects": [obj, missing]},
        headers=LFS,
        auth=auth,
        timeout=10,
    ).json()
    href = down["objects"][0]["actions"]["download"]
    assert requests.get(href["href"], headers=href["header"], timeout=10).content == data
    assert down["objects"][1]["error"]["code"] == 404
    anonymous = requests.post(
        batch, json={"operation": "upload", "objects": [obj]}, headers=LFS, timeout=10
    )
    assert anonymous.status_code == 401
    assert "LFS-Authenticate" in anonymous.headers
    fake.assert_clean()


def test_attachment_downloads_carry_an_etag_and_honour_if_none_match(fake):
    """browser_download_url serves the bytes with ETag "<uuid>", and a matching
    If-None-Match is 304 (Forgejo's HandleGenericETagCache)."""
    fake.state.create_repo(REPO, auto_init=True)
    s = fake.session(fake.add_token("acme"))
    rel = s.post(f"{fake.api_url}/repos/{REPO}/releases", json={"tag_name": "v1"}).json()
    files = {"attachment": ("notes.txt", b"hello", "text/plain")}
    asset = s.post(f"{fake.api_url}/repos/{REPO}/releases/{rel['id']}/assets", files=files)
    assert asset.status_code == 201
    assert asset.json()["name"] == "notes.txt"
    url = asset.json()["browser_download_url"]
    first = requests.get(url, timeout=10)
    assert (first.content, first.headers["ETag"]) == (b"hello", f'"{asset.json()["uuid"]}"')
    cached = requests.get(url, headers={"If-None-Match": first.headers["ETag"]}, timeout=10)
    assert cached.status_code == 304
    counted = s.get(f"{fake.api_url}/repos/{REPO}/releases/{rel['id']}/assets/{asset.json()['id']}")
    assert counted.json()["download_count"] == 1
    fake.assert_clean()


def test_an_attachment_whose_body_ends_early_is_not_kept(fake):
    """A client that goes away mid-body (an upload stopped by its sender): Forgejo keeps
    no attachment of it, and a whole upload then succeeds."""
    fake.state.create_repo(REPO, auto_init=True)
    token = fake.add_token("acme")
    s = fake.session(token)
    rel = s.post(f"{fake.api_url}/repos/{REPO}/releases", json={"tag_name": "v1"}).json()
    assets = f"{fake.api_url}/repos/{REPO}/releases/{rel['id']}/assets"
    send_cut_short(
        "POST", f"{assets}?name=big.bin", f"token {token}", declared=1024 * 1024, sent=100_000
    )
    assert any(r.path.endswith("/assets") for r in fake.requests), "the request crashed"
    assert s.get(assets).json() == []
    whole = s.post(
        assets,
        params={"name": "big.bin"},
        data=b"y" * 1000,
        headers={"Content-Type": "application/octet-stream"},
    )
    assert whole.status_code == 201
    assert whole.json()["size"] == 1000
    fake.assert_clean()


def test_an_lfs_upload_in_progress_or_ended_early_is_never_in_the_store(fake):
    """While an upload is read, what was read so far is beside the store, not in it
    (Forgejo's ``TEMPORARY_PATH``); stopped by its sender mid-body, nothing of it is
    kept; a whole upload then succeeds. Before, the file in progress sat among the
    objects: a look during an upload saw a partial object."""
    fake.state.create_repo(REPO)
    token = fake.add_token("acme")
    data = b"z" * 300_000
    oid = hashlib.sha256(data).hexdigest()
    answer = requests.post(
        f"{fake.git_url}/{REPO}.git/info/lfs/objects/batch",
        json={"operation": "upload", "objects": [{"oid": oid, "size": len(data)}]},
        headers=LFS,
        auth=("acme", token),
        timeout=10,
    ).json()
    upload = answer["objects"][0]["actions"]["upload"]
    git_dir = fake.state.repo(REPO).git_dir
    seen: list[dict[str, bytes]] = []

    def look_mid_upload() -> None:
        deadline = time.monotonic() + 30
        while not any(lfs_store.uploads_dir(git_dir).glob("*")):
            assert time.monotonic() < deadline, "the server never began the upload"
            time.sleep(0.01)
        seen.append(lfs_store.stored_objects(git_dir))

    status = send_cut_short(
        "PUT",
        upload["href"],
        upload["header"]["Authorization"],
        declared=len(data),
        sent=100_000,
        while_open=look_mid_upload,
    )
    assert status == "HTTP/1.1 422 Unprocessable Entity"  # the server was done with it
    assert seen == [{}]
    assert lfs_store.stored_objects(git_dir) == {}
    assert list(lfs_store.uploads_dir(git_dir).iterdir()) == []
    whole = requests.put(upload["href"], data=data, headers=upload["header"], timeout=10)
    assert whole.status_code == 200
    assert lfs_store.stored_objects(git_dir) == {oid: data}
    fake.assert_clean()
