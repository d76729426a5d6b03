"""The test server's Git LFS Batch API behaves as git-lfs's ``docs/api/batch.md`` and
``basic-transfers.md`` describe (and as github.com answers)."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest
import requests

from tests.fakes.github import GitHubFake, ManualClock

MEDIA = "application/vnd.git-lfs+json"
REPO = "acme/widgets"
CONTENT = b"some large file\n" * 64
OID = hashlib.sha256(CONTENT).hexdigest()


@pytest.fixture
def fake():
    with GitHubFake(clock=ManualClock()) as server:
        server.state.create_repo(REPO, private=True)
        yield server
        server.assert_clean()


def _auth(token: str) -> str:
    return "Basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()


def batch(
    fake: GitHubFake,
    operation: str,
    objects: list[dict[str, Any]],
    token: str | None = None,
    **kw: Any,
) -> requests.Response:
    headers = {"Accept": MEDIA, "Content-Type": MEDIA, **kw.pop("headers", {})}
    if token:
        headers["Authorization"] = _auth(token)
    return requests.post(
        f"{fake.git_url}/{REPO}.git/info/lfs/objects/batch",
        json={"operation": operation, "transfers": ["basic"], "objects": objects, **kw},
        headers=headers,
        timeout=10,
    )


def test_upload_then_verify_then_download(fake):
    """upload answers upload + verify actions (href, header, expires_in); PUT stores,
    verify confirms; afterwards upload has no actions and download serves the bytes."""
    token = fake.add_token("acme")
    answer = batch(fake, "upload", [{"oid": OID, "size": len(CONTENT)}], token)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith(MEDIA)
    body = answer.json()
    assert body["transfer"] == "basic"
    (obj,) = body["objects"]
    upload, verify = obj["actions"]["upload"], obj["actions"]["verify"]
    assert upload["expires_in"] > 0
    assert upload["header"]["Authorization"].startswith("RemoteAuth ")

    put = requests.put(upload["href"], data=CONTENT, headers=upload["header"], timeout=10)
    assert put.status_code == 200
    checked = requests.post(
        verify["href"],
        json={"oid": OID, "size": len(CONTENT)},
        headers={**verify["header"], "Accept": MEDIA, "Content-Type": MEDIA},
        timeout=10,
    )
    assert checked.status_code == 200

    (again,) = batch(fake, "upload", [{"oid": OID, "size": len(CONTENT)}], token).json()["objects"]
    assert "actions" not in again
    (down,) = batch(fake, "download", [{"oid": OID, "size": len(CONTENT)}], token).json()["objects"]
    action = down["actions"]["download"]
    got = requests.get(action["href"], headers=action["header"], timeout=10)
    assert got.content == CONTENT
    assert fake.lfs.objects(REPO) == {OID: CONTENT}


def test_per_object_errors_missing_invalid_and_too_large(fake):
    """A missing object on download is a per-object 404 (status 200 overall); an invalid
    OID and an object over the size limit are per-object 422s on upload."""
    token = fake.add_token("acme")
    fake.lfs.max_object_size = 100
    (missing,) = batch(fake, "download", [{"oid": OID, "size": 5}], token).json()["objects"]
    assert missing["error"]["code"] == 404
    answer = batch(
        fake, "upload", [{"oid": "nothex", "size": 1}, {"oid": OID, "size": 101}], token
    ).json()
    assert [o["error"]["code"] for o in answer["objects"]] == [422, 422]
    assert "100" in answer["objects"][1]["error"]["message"]


def test_bad_requests_are_refused_as_the_spec_says(fake):
    """406 without the LFS media type in Accept; 401 with LFS-Authenticate without
    credentials on a private repository; 413 over the batch size; 403 for an upload by a
    reader without push access."""
    token = fake.add_token("acme")
    assert (
        batch(fake, "download", [], token, headers={"Accept": "application/json"}).status_code
        == 406
    )
    anonymous = batch(fake, "download", [])
    assert anonymous.status_code == 401
    assert "LFS-Authenticate" in anonymous.headers
    assert anonymous.json()["message"]
    many = [{"oid": OID, "size": 1}] * (fake.lfs.max_batch + 1)
    assert batch(fake, "download", many, token).status_code == 413
    fake.state.create_repo("other/public", private=False)
    reader = fake.add_token("stranger")
    refused = requests.post(
        f"{fake.git_url}/other/public.git/info/lfs/objects/batch",
        json={"operation": "upload", "objects": [{"oid": OID, "size": 1}]},
        headers={"Accept": MEDIA, "Content-Type": MEDIA, "Authorization": _auth(reader)},
        timeout=10,
    )
    assert refused.status_code == 403


def test_wrong_bytes_are_refused_and_actions_expire(fake):
    """A PUT whose bytes do not hash to the OID is 422 and stores nothing; an action used
    after ``expires_in`` is 401."""
    token = fake.add_token("acme")
    (obj,) = batch(fake, "upload", [{"oid": OID, "size": len(CONTENT)}], token).json()["objects"]
    upload = obj["actions"]["upload"]
    wrong = b"x" * len(CONTENT)
    assert (
        requests.put(upload["href"], data=wrong, headers=upload["header"], timeout=10).status_code
        == 422
    )
    assert fake.lfs.objects(REPO) == {}
    fake.clock.advance(fake.lfs.expires_in + 1)
    late = requests.put(upload["href"], data=CONTENT, headers=upload["header"], timeout=10)
    assert late.status_code == 401
    assert fake.lfs.objects(REPO) == {}
