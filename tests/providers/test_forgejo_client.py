"""Forgejo's REST client against its test server: paging at the instance's own limit,
counts that read no object, Forgejo's error shapes in the error tree, ``Sudo`` only when
asked, credentials to the instance only, lost answers never resent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import requests

from reposync.errors import (
    ObjectNotFound,
    PermissionDenied,
    ProviderUnavailable,
    RateLimited,
    ResultUnknown,
    UntrustedOrigin,
    WriteRefused,
)
from reposync.providers.forgejo import client as client_module
from reposync.providers.forgejo.client import ForgejoClient
from tests.fakes.forge_server.clock import ManualClock
from tests.fakes.forgejo import ForgejoFake
from tests.forgejo_env import instance

REPO = "acme/widgets"


class _Clock:
    """Time that does not pass: retries back off without sleeping."""

    def __init__(self) -> None:
        self.slept: list[float] = []

    def now(self) -> datetime:
        return datetime(2030, 1, 1, tzinfo=UTC)

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def client_for(
    fake: ForgejoFake, token: str, clock: _Clock | None = None, *, checked: bool = True
) -> ForgejoClient:
    """A client of the test server; ``checked``: its exchanges checked against Forgejo's
    description (not where a test injects failures no Forgejo answers)."""
    client_module._LIMITS.clear()  # each test server is an instance of its own
    session = fake.session() if checked else requests.Session()
    return ForgejoClient(
        instance(fake, token), session=session, clock=clock or _Clock(), timeout=10
    )


def test_listings_page_at_the_instance_s_limit_and_follow_its_links():
    """``limit`` is /settings/api's max_response_items (7 here), asked once; every page
    is read by its Link: next; a page past the last answers the count and no object."""
    with ForgejoFake(max_response_items=7) as fake:
        fake.state.create_repo(REPO)
        for n in range(20):
            fake.state.create_label(REPO, f"label-{n:02}")
        client = client_for(fake, fake.add_token("acme"))
        names = [label["name"] for label in client.paginate(f"/repos/{REPO}/labels")]
        assert names == [f"label-{n:02}" for n in range(20)]
        pages = [r for r in fake.requests if r.path.endswith("/labels")]
        assert [(r.query.get("limit"), r.returned) for r in pages] == [
            ("7", 7),
            ("7", 7),
            ("7", 6),
        ]
        assert sum(r.path == "/settings/api" for r in fake.requests) == 1
        assert client.total(f"/repos/{REPO}/labels") == 20
        assert fake.requests[-1].returned == 0  # counted, none read
        fake.assert_clean()


def test_forgejo_s_refusals_become_the_error_tree(forgejo_fake):
    """A missing object read is ObjectNotFound; a write refused says why (not_found,
    conflict, invalid); no write access and a bad token are PermissionDenied."""
    fake = forgejo_fake
    fake.state.create_repo(REPO, auto_init=True)
    owner = client_for(fake, fake.add_token("acme"))
    with pytest.raises(ObjectNotFound):
        owner.get(f"/repos/{REPO}/issues/99")
    refusals = {}
    for name, method, path, body in (
        ("not_found", "PATCH", f"/repos/{REPO}/labels/99", {"name": "x"}),
        ("invalid", "POST", f"/repos/{REPO}/labels", {"name": "x", "color": "zz"}),
    ):
        with pytest.raises(WriteRefused) as refused:
            owner.write(method, path, json_body=body)
        refusals[name] = (refused.value.refusal, refused.value.status)
    owner.write("POST", f"/repos/{REPO}/releases", json_body={"tag_name": "v1"})
    with pytest.raises(WriteRefused) as taken:
        owner.write("POST", f"/repos/{REPO}/releases", json_body={"tag_name": "v1"})
    refusals["conflict"] = (taken.value.refusal, taken.value.status)
    assert refusals == {
        "not_found": ("not_found", 404),
        "invalid": ("invalid", 422),
        "conflict": ("conflict", 409),
    }
    stranger = client_for(fake, fake.add_token("stranger"))
    with pytest.raises(PermissionDenied, match="permission to write"):
        stranger.write("POST", f"/repos/{REPO}/labels", json_body={"name": "x", "color": "#fff"})
    nobody = client_for(fake, "f" * 40)
    with pytest.raises(PermissionDenied, match="refused the token"):
        nobody.get(f"/repos/{REPO}")


def test_sudo_acts_as_the_account_for_an_administrator_only(forgejo_fake):
    """With an admin's token, ``sudo`` writes as that account; anyone else's is refused
    (Forgejo's 403), and a request without ``sudo`` is the token's own."""
    fake = forgejo_fake
    fake.state.create_repo(REPO, collaborators=["ann"])
    admin = client_for(fake, fake.add_token("root", admin=True))
    issue = admin.write("POST", f"/repos/{REPO}/issues", json_body={"title": "t"}, sudo="ann")
    own = admin.write("POST", f"/repos/{REPO}/issues", json_body={"title": "u"})
    assert (issue["user"]["login"], own["user"]["login"]) == ("ann", "root")
    plain = client_for(fake, fake.add_token("acme"))
    with pytest.raises(PermissionDenied, match="administrators"):
        plain.write("POST", f"/repos/{REPO}/issues", json_body={"title": "v"}, sudo="ann")


def test_a_write_whose_answer_is_lost_is_unknown_and_never_sent_again(forgejo_fake):
    """A dropped answer and a 5xx after the work are ResultUnknown; the write is sent once."""
    fake = forgejo_fake
    fake.state.create_repo(REPO)
    client = client_for(fake, fake.add_token("acme"), checked=False)
    fake.faults.commit_then_drop("POST", r"/labels$", drop="close")
    with pytest.raises(ResultUnknown):
        client.write("POST", f"/repos/{REPO}/labels", json_body={"name": "a", "color": "#fff"})
    fake.faults.commit_then_drop("POST", r"/labels$")
    with pytest.raises(ResultUnknown):
        client.write("POST", f"/repos/{REPO}/labels", json_body={"name": "b", "color": "#fff"})
    posts = [r for r in fake.requests if r.method == "POST"]
    assert len(posts) == 2
    assert sorted(lb.name for lb in fake.state.repo(REPO).labels.values()) == ["a", "b"]


def test_a_read_is_retried_with_backoff_and_gives_up_unavailable(forgejo_fake):
    """5xx on a read: tried again after a wait, up to four times in all."""
    fake = forgejo_fake
    fake.state.create_repo(REPO)
    clock = _Clock()
    client = client_for(fake, fake.add_token("acme"), clock, checked=False)
    fake.faults.error("GET", rf"^/repos/{REPO}$", status=503, count=2)
    assert client.get(f"/repos/{REPO}")["full_name"] == REPO
    assert clock.slept == [0.5, 1.0]
    fake.faults.error("GET", rf"^/repos/{REPO}$", status=502, count=None)
    with pytest.raises(ProviderUnavailable):
        client.get(f"/repos/{REPO}")
    fake.faults.clear()


def test_a_proxy_s_rate_limit_is_rate_limited_with_when_to_retry(forgejo_fake):
    """Forgejo has no rate limit; a proxy in front of it may answer 429."""
    fake = forgejo_fake
    fake.state.create_repo(REPO)
    clock = _Clock()
    client = client_for(fake, fake.add_token("acme"), clock, checked=False)
    fake.faults.error("GET", rf"^/repos/{REPO}$", status=429)
    with pytest.raises(RateLimited) as limited:
        client.get(f"/repos/{REPO}")
    assert limited.value.retry_at == clock.now() + timedelta(seconds=60)


def test_the_token_goes_to_the_instance_only(forgejo_fake):
    """A URL on another origin (a Link, a download) is refused before anything is sent."""
    client = client_for(forgejo_fake, forgejo_fake.add_token("acme"))
    before = len(forgejo_fake.requests)
    with pytest.raises(UntrustedOrigin):
        client.get("https://elsewhere.example/api/v1/repos/acme/widgets")
    with pytest.raises(UntrustedOrigin):
        client.download("https://elsewhere.example/attachments/x")
    assert len(forgejo_fake.requests) == before


def test_dates_are_the_instance_s_clock():
    """The client keeps the instance's own time from its last answer (``since`` windows
    are counted on the instance's clock, never this machine's)."""
    clock = ManualClock(datetime(2031, 5, 6, 7, 8, 9, tzinfo=UTC))
    with ForgejoFake(clock=clock) as fake:
        client = client_for(fake, fake.add_token("acme"))
        client.get("/version")
        assert client.last_date == clock()
        fake.assert_clean()
