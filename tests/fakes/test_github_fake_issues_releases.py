"""The GitHub test server's issues and releases family behaves like GitHub where reposync's
fidelity depends on it: asset names GitHub rewrites (and the label it keeps verbatim),
due dates kept as a day, conversation locks, an issue's labels, releases by tag, and
draft assets that need credentials. Every exchange is checked against the contract
(``assert_clean``)."""

from __future__ import annotations

import pytest
import requests

from tests.fakes.github.routes_releases import safe_asset_name
from tests.fakes.test_github_fake import REPO, api, fake, seeded

__all__ = ["fake"]


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("checksums file.txt", "checksums.file.txt"),
        ("ünïcode.bin", "n.code.bin"),
        ("tobwen-1.1.0-1~buster_amd64.deb", "tobwen-1.1.0-1.buster_amd64.deb"),
        ("app-(15-5)-release.apk", "app-.15-5.-release.apk"),
        ("a+b.tar.gz", "a.b.tar.gz"),
        ("..hidden..", "hidden"),
        ("😀.pdf", "default.pdf"),
        ("plain_name-1.0.tar.gz", "plain_name-1.0.tar.gz"),
    ],
)
def test_asset_names_are_renamed_as_github_does(given, kept):
    assert safe_asset_name(given) == kept


def _upload(server, s, release: dict, name: str, label: str | None = None, data: bytes = b"x"):
    params = {"name": name} | ({"label": label} if label is not None else {})
    return s.post(
        release["upload_url"].split("{")[0],
        params=params,
        data=data,
        headers={"Content-Type": "application/octet-stream"},
    )


def test_an_uploaded_asset_is_renamed_keeps_its_label_and_its_new_name_is_taken(fake):
    _, s = seeded(fake)
    release = s.post(api(fake, "/releases"), json={"tag_name": "v1"}).json()
    made = _upload(fake, s, release, "checksums file.txt", label="checksums file.txt")
    assert made.status_code == 201
    assert (made.json()["name"], made.json()["label"]) == (
        "checksums.file.txt",
        "checksums file.txt",
    )
    assert made.json()["browser_download_url"].endswith("/v1/checksums.file.txt")
    # Another name GitHub makes the same is the same asset name: 422 already_exists.
    clash = _upload(fake, s, release, "checksums~file.txt")
    assert clash.status_code == 422
    assert clash.json()["errors"][0]["code"] == "already_exists"
    fake.assert_clean()


def test_an_asset_edit_renames_and_relabels(fake):
    _, s = seeded(fake)
    release = s.post(api(fake, "/releases"), json={"tag_name": "v1"}).json()
    first = _upload(fake, s, release, "one.bin").json()
    _upload(fake, s, release, "two.bin")
    url = api(fake, f"/releases/assets/{first['id']}")

    labelled = s.patch(url, json={"label": "Linux (64-bit)"})
    assert (labelled.status_code, labelled.json()["label"]) == (200, "Linux (64-bit)")
    renamed = s.patch(url, json={"name": "uno bin.zip"})
    assert (renamed.status_code, renamed.json()["name"]) == (200, "uno.bin.zip")
    assert renamed.json()["label"] == "Linux (64-bit)"  # untouched
    taken = s.patch(url, json={"name": "two.bin"})
    assert taken.status_code == 422
    assert taken.json()["errors"][0]["code"] == "already_exists"
    cleared = s.patch(url, json={"label": ""})
    assert cleared.json()["label"] is None
    assert s.patch(api(fake, "/releases/assets/999"), json={"label": "x"}).status_code == 404
    fake.assert_clean()


def test_a_release_by_tag_is_found_only_once_published(fake):
    _, s = seeded(fake)
    published = s.post(api(fake, "/releases"), json={"tag_name": "v1", "name": "One"}).json()
    s.post(api(fake, "/releases"), json={"tag_name": "v2", "draft": True})

    found = s.get(api(fake, "/releases/tags/v1"))
    assert (found.status_code, found.json()["id"]) == (200, published["id"])
    assert s.get(api(fake, "/releases/tags/v2")).status_code == 404  # a draft has no tag
    assert s.get(api(fake, "/releases/tags/nope")).status_code == 404
    fake.assert_clean()


def test_a_draft_releases_assets_need_credentials_to_download(fake):
    token, s = seeded(fake)
    fake.state.repo(REPO).private = False
    draft = s.post(api(fake, "/releases"), json={"tag_name": "v9", "draft": True}).json()
    public = s.post(api(fake, "/releases"), json={"tag_name": "v1"}).json()
    hidden = _upload(fake, s, draft, "draft.bin", data=b"secret").json()
    shown = _upload(fake, s, public, "public.bin", data=b"open").json()

    anonymous = requests.get(hidden["browser_download_url"], timeout=10)
    assert anonymous.status_code == 404
    other = fake.add_token("octocat")  # reaches the public repository, cannot push
    outsider = requests.get(
        hidden["browser_download_url"], headers={"Authorization": f"token {other}"}, timeout=10
    )
    assert outsider.status_code == 404
    owner = requests.get(
        hidden["browser_download_url"], headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    assert (owner.status_code, owner.content) == (200, b"secret")
    # A published asset of a public repository is anyone's.
    assert requests.get(shown["browser_download_url"], timeout=10).content == b"open"


def test_a_private_repositorys_assets_need_credentials_to_download(fake):
    token, s = seeded(fake, private=True)
    release = s.post(api(fake, "/releases"), json={"tag_name": "v1"}).json()
    asset = _upload(fake, s, release, "a.bin", data=b"private").json()
    assert requests.get(asset["browser_download_url"], timeout=10).status_code == 404
    owner = requests.get(
        asset["browser_download_url"], headers={"Authorization": f"token {token}"}, timeout=10
    )
    assert owner.content == b"private"


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("2026-03-01T12:34:56Z", "2026-03-01T08:00:00Z"),  # winter: PST, 08:00 UTC
        ("2026-07-15T12:00:00Z", "2026-07-15T07:00:00Z"),  # summer: PDT, 07:00 UTC
        ("2020-09-24T06:59:00Z", "2020-09-23T07:00:00Z"),  # still the 23rd in Pacific
        ("2020-09-24T07:01:00Z", "2020-09-24T07:00:00Z"),
        ("2026-03-01T00:00:00+09:00", "2026-02-28T08:00:00Z"),
    ],
)
def test_a_milestone_keeps_its_due_day_at_midnight_pacific(fake, given, kept):
    _, s = seeded(fake)
    made = s.post(api(fake, "/milestones"), json={"title": "v1", "due_on": given})
    assert (made.status_code, made.json()["due_on"]) == (201, kept)
    edited = s.patch(api(fake, "/milestones/1"), json={"due_on": given})
    assert edited.json()["due_on"] == kept
    fake.assert_clean()


def test_lock_and_unlock_show_in_the_issue(fake):
    _, s = seeded(fake)
    s.post(api(fake, "/issues"), json={"title": "Heated"})
    before = s.get(api(fake, "/issues/1")).json()
    assert (before["locked"], before["active_lock_reason"]) == (False, None)

    locked = s.put(api(fake, "/issues/1/lock"), json={"lock_reason": "too heated"})
    assert (locked.status_code, locked.content) == (204, b"")
    issue = s.get(api(fake, "/issues/1")).json()
    assert (issue["locked"], issue["active_lock_reason"]) == (True, "too heated")
    # Without a body (Content-Length 0): locked, no reason.
    assert s.put(api(fake, "/issues/1/lock")).status_code == 204
    assert s.get(api(fake, "/issues/1")).json()["active_lock_reason"] is None
    bad = s.put(api(fake, "/issues/1/lock"), json={"lock_reason": "boring"})
    assert bad.status_code == 422
    assert s.get(api(fake, "/issues/1")).json()["locked"] is True  # unchanged

    assert s.delete(api(fake, "/issues/1/lock")).status_code == 204
    issue = s.get(api(fake, "/issues/1")).json()
    assert (issue["locked"], issue["active_lock_reason"]) == (False, None)
    assert s.delete(api(fake, "/issues/1/lock")).status_code == 204  # already unlocked
    assert s.put(api(fake, "/issues/9/lock"), json={}).status_code == 404
    assert s.delete(api(fake, "/issues/9/lock")).status_code == 404
    # A pull request's conversation locks the same way, and its JSON says so.
    pull = s.post(api(fake, "/pulls"), json={"title": "F", "head": "feature", "base": "main"})
    number = pull.json()["number"]
    assert s.put(api(fake, f"/issues/{number}/lock"), json={"lock_reason": "spam"}).ok
    shown = s.get(api(fake, f"/pulls/{number}")).json()
    assert (shown["locked"], shown["active_lock_reason"]) == (True, "spam")
    assert fake.problems(requests_too=False) == []


def test_an_issues_labels_are_added_set_and_removed(fake):
    _, s = seeded(fake)
    s.post(api(fake, "/labels"), json={"name": "bug", "color": "d73a4a"})
    s.post(api(fake, "/issues"), json={"title": "Broken", "labels": ["bug"]})

    def names(response):
        return [lb["name"] for lb in response.json()]

    added = s.post(api(fake, "/issues/1/labels"), json={"labels": ["new one", {"name": "bug"}]})
    assert (added.status_code, names(added)) == (200, ["bug", "new one"])  # created on the way
    assert s.get(api(fake, "/labels/new one")).status_code == 200
    listed = s.get(api(fake, "/issues/1/labels"), params={"per_page": 1})
    assert names(listed) == ["bug"]
    assert 'rel="next"' in listed.headers["link"]
    removed = s.delete(api(fake, "/issues/1/labels/BUG"))  # names match case-insensitively
    assert (removed.status_code, names(removed)) == (200, ["new one"])
    missing = s.delete(api(fake, "/issues/1/labels/bug"))
    assert (missing.status_code, missing.json()["message"]) == (404, "Label does not exist")
    replaced = s.put(api(fake, "/issues/1/labels"), json={"labels": ["bug"]})
    assert names(replaced) == ["bug"]
    assert s.post(api(fake, "/issues/1/labels"), json={"labels": []}).status_code == 422
    assert s.delete(api(fake, "/issues/1/labels")).status_code == 204
    assert s.get(api(fake, "/issues/1")).json()["labels"] == []
    assert s.get(api(fake, "/issues/9/labels")).status_code == 404
    assert fake.problems(requests_too=False) == []


def test_the_latest_release_is_the_newest_published_full_release(fake):
    """GET …/releases/latest skips drafts and prereleases; with none left it is 404."""
    _, s = seeded(fake)
    assert s.get(api(fake, "/releases/latest")).status_code == 404
    stable = s.post(api(fake, "/releases"), json={"tag_name": "v1"}).json()
    s.post(api(fake, "/releases"), json={"tag_name": "v2-rc", "prerelease": True})
    s.post(api(fake, "/releases"), json={"tag_name": "v3", "draft": True})
    assert s.get(api(fake, "/releases/latest")).json()["id"] == stable["id"]
    fake.assert_clean()
