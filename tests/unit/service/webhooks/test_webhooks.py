"""Webhooks out, the parts without a database: signatures (reposync's and Standard
Webhooks', the latter checked with that project's library), backoff, the request-forgery
guard (tricky addresses included), sealing secrets, and one POST to a real loopback server."""

from __future__ import annotations

import base64
import dataclasses
import ipaddress
import json
import os
import threading
import time
import uuid
from datetime import UTC, datetime

import pytest
from cryptography.fernet import Fernet
from standardwebhooks import Webhook, WebhookVerificationError

from reposync.config import Settings
from reposync.errors import (
    ConfigurationError,
    SecretKeyMissing,
    SecretUnreadable,
    WebhookTargetRefused,
)
from reposync.service.accounts.sealing import seal, unseal
from reposync.service.webhooks.deliveries import (
    Claimed,
    backoff,
    lease_seconds,
    retry_delay,
    retryable,
    signed_request,
)
from reposync.service.webhooks.outbox import branch_matches, envelope
from reposync.service.webhooks.webhook_transport import (
    Answer,
    allowed,
    check_target,
    parse_target,
    post,
    refusal,
    sign,
    signing_key,
    standard_secret_problem,
    standard_signature,
    verify,
)
from tests.webhook_receiver import HANG, receiver

LOOPBACK = (ipaddress.ip_network("127.0.0.0/8"),)


# -- signature -------------------------------------------------------------------------


def test_the_signature_is_hmac_sha256_over_timestamp_dot_body():
    """A vector computed with openssl (printf '1700000000.{...}' | openssl dgst -sha256
    -hmac ...), not with the code under test."""
    body = b'{"hello":"world"}'
    assert sign("It's a Secret to Everybody", "1700000000", body) == (
        "sha256=08c0aaa4721d7e090415dc782eb1818362b0e857612ef36e6dcf8c773571b03b"
    )


def test_verify_refuses_a_changed_body_timestamp_or_secret():
    body = b'{"id":"x"}'
    signature = sign("s3cret-s3cret-s3cret", "100", body)
    assert verify("s3cret-s3cret-s3cret", "100", body, signature)
    assert not verify("s3cret-s3cret-s3cret", "101", body, signature)  # replayed later
    assert not verify("s3cret-s3cret-s3cret", "100", body + b" ", signature)
    assert not verify("another-secret-here", "100", body, signature)


# -- Standard Webhooks -----------------------------------------------------------------

#: The specification's published example (its libraries' tests use it): a 24-byte key.
VECTOR_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#: A secret in the form reposync took before: not base64, not ASCII either.
PLAIN_SECRET = "a plain sécret, ünicode"


def whsec(key: bytes) -> str:
    return "whsec_" + base64.b64encode(key).decode()


def claimed(attempt: int = 1) -> Claimed:
    """An outbox row as ``claim`` hands it over (the secret is given to ``signed_request``
    directly, so the sealed one is never opened)."""
    guid = str(uuid.uuid4())
    at = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
    body = envelope(guid, "run.failed", {"ü": "é"}, occurred_at=at, binding_id=3, branch=None)
    return Claimed(1, guid, "run.failed", body, attempt, "http://127.0.0.1:9/h", "unopened")


def receivers(secret: str) -> list[Webhook]:
    """How docs/webhooks.md tells a Python receiver to build the library's verifier."""
    if secret.startswith("whsec_"):
        return [Webhook(secret)]
    return [Webhook(whsec(secret.encode())), Webhook(secret.encode())]


def test_the_standard_signature_reproduces_the_specifications_published_example():
    """An id, timestamp, body and key from the specification's examples, not from us."""
    signature = standard_signature(
        VECTOR_SECRET, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", b'{"test": 2432232314}'
    )
    assert signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_a_whsec_secret_is_its_decoded_key_and_any_other_its_utf8_bytes():
    """The spec's serialization for whsec_ secrets; the old secrets key with their bytes."""
    key = os.urandom(32)
    assert signing_key(whsec(key)) == key
    assert signing_key(PLAIN_SECRET) == PLAIN_SECRET.encode("utf-8")
    # Stored before whsec_ secrets were checked, a malformed one is not half-decoded.
    assert signing_key("whsec_not base64 at all") == b"whsec_not base64 at all"
    assert signing_key("whsec_" + base64.urlsafe_b64encode(b"\xfb" * 24).decode()) == (
        b"whsec_" + base64.urlsafe_b64encode(b"\xfb" * 24)
    )


@pytest.mark.parametrize("secret", [VECTOR_SECRET, PLAIN_SECRET], ids=["whsec", "plain"])
def test_what_an_attempt_sends_verifies_with_the_standard_webhooks_library(secret):
    """The body and headers ``_send`` posts pass the PyPI library's ``verify`` (for a plain
    secret both documented ways to key it), and reposync's own signature still holds."""
    row = claimed(attempt=2)
    now = int(time.time())
    body, headers = signed_request(secret, row, now)
    assert body == row.body.encode("utf-8")
    assert headers["webhook-id"] == headers["X-Reposync-Delivery"] == row.guid
    assert headers["webhook-timestamp"] == headers["X-Reposync-Timestamp"] == str(now)
    assert headers["X-Reposync-Attempt"] == "2"
    assert headers["webhook-signature"].startswith("v1,")
    for webhook in receivers(secret):
        assert webhook.verify(body, headers) == json.loads(row.body)
    assert verify(secret, str(now), body, headers["X-Reposync-Signature-256"])


def test_a_changed_body_id_timestamp_or_secret_fails_the_librarys_check():
    """Everything signed is covered: any one change leaves no matching signature."""
    row = claimed()
    now = int(time.time())
    body, headers = signed_request(VECTOR_SECRET, row, now)
    webhook = Webhook(VECTOR_SECRET)
    assert webhook.verify(body, headers) is not None
    changes = {
        "body": (body.replace(b'"binding_id":3', b'"binding_id":4'), headers),
        "id": (body, {**headers, "webhook-id": str(uuid.uuid4())}),
        "timestamp": (body, {**headers, "webhook-timestamp": str(now - 60)}),
    }
    for changed_body, changed_headers in changes.values():
        with pytest.raises(WebhookVerificationError, match="No matching signature"):
            webhook.verify(changed_body, changed_headers)
    with pytest.raises(WebhookVerificationError, match="No matching signature"):
        Webhook(whsec(os.urandom(24))).verify(body, headers)
    with pytest.raises(WebhookVerificationError, match="No matching signature"):
        # The whsec_ secret's text is not its key.
        Webhook(VECTOR_SECRET.encode()).verify(body, headers)


def test_the_timestamp_signed_is_the_attempts_own_and_the_id_stays():
    """A retry signs a new timestamp under the same id; one signed long ago is refused by
    the library (the replay the signed timestamp prevents)."""
    row = claimed()
    now = int(time.time())
    _, first = signed_request(VECTOR_SECRET, row, now - 30)
    body, second = signed_request(VECTOR_SECRET, dataclasses.replace(row, attempt=2), now)
    assert first["webhook-id"] == second["webhook-id"] == row.guid
    assert first["webhook-signature"] != second["webhook-signature"]
    _, stale = signed_request(VECTOR_SECRET, row, now - 3600)
    with pytest.raises(WebhookVerificationError, match="too old"):
        Webhook(VECTOR_SECRET).verify(body, stale)


@pytest.mark.parametrize(
    ("secret", "problem"),
    [
        (VECTOR_SECRET, None),
        (whsec(b"k" * 64), None),
        ("sixteen-chars-or-more", None),  # not the whsec_ form: any text
        ("whsec" + "x" * 20, None),
        (whsec(b"k" * 23), "24 to 64 bytes"),
        (whsec(b"k" * 65), "24 to 64 bytes"),
        ("whsec_" + base64.urlsafe_b64encode(b"\xfb" * 24).decode(), "standard base64"),
        ("whsec_" + base64.b64encode(b"k" * 25).decode().rstrip("="), "standard base64"),
        ("whsec_" + base64.b64encode(b"k" * 24).decode() + "\n", "standard base64"),
        ("whsec_my-old-password-here", "standard base64"),
        ("whsec_", "standard base64"),
    ],
)
def test_a_whsec_secret_must_be_canonical_base64_of_a_key_the_spec_allows(secret, problem):
    """What every library decodes alike (padded, standard alphabet), 192 to 512 bits."""
    found = standard_secret_problem(secret)
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert problem in found


# -- retries ---------------------------------------------------------------------------


def test_the_backoff_doubles_from_two_seconds_and_stops_at_sixty():
    """2^attempt seconds after attempt n failed, capped at 60 s (the issue's schedule)."""
    settings = Settings()
    assert [backoff(settings, n) for n in range(1, 9)] == [2, 4, 8, 16, 32, 60, 60, 60]
    assert settings.webhook_max_attempts == 5


def test_the_backoff_unit_scales_the_schedule_and_retry_after_may_lengthen_it():
    settings = Settings(webhook_backoff_unit=0.25, webhook_backoff_max=3.0)
    assert [backoff(settings, n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert retry_delay(settings, 1, retry_after=2.5) == 2.5  # the target asked for more
    assert retry_delay(settings, 1, retry_after=0.1) == 0.5  # never less than the backoff
    assert retry_delay(settings, 1, retry_after=3600) == 3.0  # nor beyond the cap


@pytest.mark.parametrize(
    ("status", "again"),
    [
        (None, True),
        (429, True),
        (500, True),
        (503, True),
        (400, False),
        (404, False),
        (410, False),
        (301, False),
        (200, False),
    ],
)
def test_429_5xx_and_no_answer_are_retried_other_answers_are_not(status, again):
    assert retryable(Answer(status)) is again


def test_a_claim_outlives_the_longest_send():
    settings = Settings(webhook_timeout=10)
    assert lease_seconds(settings) > 2 * settings.webhook_timeout


# -- the request-forgery guard ---------------------------------------------------------

REFUSED = {
    "127.0.0.1": "loopback",
    "127.255.255.254": "loopback",
    "0.0.0.0": "unspecified",
    "10.1.2.3": "private",
    "172.16.0.1": "private",
    "172.31.255.255": "private",
    "192.168.1.1": "private",
    "169.254.169.254": "link-local",  # the cloud metadata service
    "100.64.0.1": "shared (CGNAT)",
    "224.0.0.1": "multicast",
    "239.255.255.250": "multicast",
    "255.255.255.255": "reserved",
    "240.0.0.1": "reserved",
    "192.0.2.10": "not globally routable",  # documentation
    "198.18.0.1": "not globally routable",  # benchmarking
    "::1": "loopback",
    "::": "unspecified",
    "fe80::1": "link-local",
    "fc00::1": "unique-local",
    "fd12:3456::1": "unique-local",
    "fec0::1": "site-local",
    "ff02::1": "multicast",
    "ff0e::1": "multicast",
    "::ffff:127.0.0.1": "loopback (IPv4 127.0.0.1 inside IPv6)",
    "::ffff:10.0.0.1": "private (IPv4 10.0.0.1 inside IPv6)",
    "::ffff:169.254.169.254": "link-local (IPv4 169.254.169.254 inside IPv6)",
    "::127.0.0.1": "loopback (IPv4 127.0.0.1 inside IPv6)",  # IPv4-compatible
    "64:ff9b::7f00:1": "loopback (IPv4 127.0.0.1 inside IPv6)",  # NAT64
    "64:ff9b::a00:1": "private (IPv4 10.0.0.1 inside IPv6)",
    "2002:7f00:1::1": "loopback (IPv4 127.0.0.1 inside IPv6)",  # 6to4
    "2002:c0a8:101::1": "private (IPv4 192.168.1.1 inside IPv6)",
    "2001:db8::1": "not globally routable",  # documentation
}
PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "140.82.112.3",
    "2606:4700:4700::1111",
    "64:ff9b::808:808",
    "2002:808:808::1",
    "::ffff:8.8.8.8",
]


@pytest.mark.parametrize(("text", "why"), sorted(REFUSED.items()))
def test_non_public_addresses_are_refused_with_their_kind(text, why):
    assert refusal(ipaddress.ip_address(text)) == why


@pytest.mark.parametrize("text", PUBLIC)
def test_public_addresses_pass(text):
    assert refusal(ipaddress.ip_address(text)) is None


def test_the_allow_list_permits_its_networks_and_the_ipv4_an_ipv6_form_carries():
    networks = (*LOOPBACK, ipaddress.ip_network("fd00::/8"))
    assert allowed(ipaddress.ip_address("127.0.0.1"), networks)
    assert allowed(ipaddress.ip_address("::ffff:127.0.0.1"), networks)
    assert allowed(ipaddress.ip_address("fd12::1"), networks)
    assert not allowed(ipaddress.ip_address("10.0.0.1"), networks)
    assert not allowed(ipaddress.ip_address("::1"), networks)  # IPv6 loopback: not listed


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/hook",
        "http://localhost:8080/hook",  # /etc/hosts
        "http://127.1/",  # inet_aton's short form
        "http://2130706433/",  # decimal
        "http://0x7f000001/",  # hexadecimal
        "http://0177.0.0.1/",  # octal
        "http://[::1]:9000/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "https://169.254.169.254/latest/meta-data/",
        "http://0.0.0.0:80/",
        "http://[fe80::1%25eth0]/",  # a zone id
    ],
)
def test_tricky_spellings_of_internal_addresses_are_refused(url):
    """Numeric host forms the resolver accepts still resolve to what they are."""
    with pytest.raises(WebhookTargetRefused):
        check_target(url, ())


def test_a_name_with_one_internal_address_among_public_ones_is_refused():
    """Every answer counts: a retry could otherwise reach the internal one (rebinding)."""

    def resolve(host, port):
        assert (host, port) == ("hooks.example.com", 443)
        return ["8.8.8.8", "10.0.0.5"]

    with pytest.raises(WebhookTargetRefused, match=r"hooks\.example\.com \(10\.0\.0\.5\)"):
        check_target("https://hooks.example.com/x", (), resolve)
    target = check_target("https://hooks.example.com/x?a=1", (), lambda h, p: ["8.8.8.8"])
    assert (target.host, target.port, target.path, target.addresses) == (
        "hooks.example.com",
        443,
        "/x?a=1",
        ("8.8.8.8",),
    )


def test_an_unresolvable_host_is_refused_clearly():
    def resolve(host, port):
        raise OSError("Name or service not known")

    with pytest.raises(WebhookTargetRefused, match="does not resolve"):
        check_target("https://nowhere.invalid/", (), resolve)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/", "https://"),
        ("file:///etc/passwd", "https://"),
        ("gopher://127.0.0.1:6379/_", "https://"),
        ("https://user:pw@example.com/", "credentials"),
        ("https://example.com/#frag", "fragment"),
        ("https:///path", "no host"),
        ("https://example.com:99999/", "valid URL"),
        ("https://example.com/" + "a" * 2100, "longer than"),
    ],
)
def test_urls_that_are_not_plain_http_targets_are_refused(url, message):
    with pytest.raises(WebhookTargetRefused, match=message):
        parse_target(url)


# -- sealing ---------------------------------------------------------------------------


def test_a_sealed_secret_opens_with_its_key_and_after_a_rotation():
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    sealed = seal(Settings(secret_key=old), "the-webhook-secret")
    assert "the-webhook-secret" not in sealed
    assert unseal(Settings(secret_key=old), sealed) == "the-webhook-secret"
    rotated = Settings(secret_key=f"{new},{old}")  # the new key seals, both open
    assert unseal(rotated, sealed) == "the-webhook-secret"
    assert unseal(Settings(secret_key=new), seal(rotated, "x" * 20)) == "x" * 20
    with pytest.raises(SecretUnreadable):
        unseal(Settings(secret_key=new), sealed)  # the old key was dropped


def test_no_key_is_a_clear_error_and_a_malformed_key_stops_the_settings():
    with pytest.raises(SecretKeyMissing, match="REPOSYNC_SECRET_KEY"):
        seal(Settings(), "secret")
    for bad in ("short", "x" * 44, Fernet.generate_key().decode() + ",nope"):
        with pytest.raises(ConfigurationError, match="REPOSYNC_SECRET_KEY must be Fernet keys"):
            Settings.from_env({"REPOSYNC_SECRET_KEY": bad})


def test_allowed_networks_are_parsed_from_cidrs_and_refused_when_malformed():
    settings = Settings.from_env({"REPOSYNC_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8, ::1"})
    assert settings.webhook_allowed_networks == (
        ipaddress.ip_network("127.0.0.0/8"),
        ipaddress.ip_network("::1/128"),
    )
    with pytest.raises(ConfigurationError, match="REPOSYNC_WEBHOOK_ALLOWED_NETWORKS"):
        Settings.from_env({"REPOSYNC_WEBHOOK_ALLOWED_NETWORKS": "10.0.0.0/33"})


# -- the body and the filters ----------------------------------------------------------


def test_the_envelope_is_stable_compact_json():
    at = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
    body = envelope(
        "g-1", "run.completed", {"b": 1, "a": [1]}, occurred_at=at, binding_id=3, branch=None
    )
    assert body == (
        '{"binding_id":3,"branch":null,"data":{"a":[1],"b":1},"event":"run.completed",'
        '"id":"g-1","occurred_at":"2026-12-05T09:00:00+00:00"}'
    )


@pytest.mark.parametrize(
    ("wanted", "branch", "matches"),
    [
        (None, "refs/heads/x", True),
        ("main", None, True),
        ("main", "refs/heads/main", True),
        ("refs/heads/main", "main", True),
        ("main", "refs/heads/dev", False),
        ("refs/tags/v1", "refs/tags/v1", True),
        ("v1", "refs/tags/v1", False),
    ],
)
def test_a_branch_filter_narrows_branch_events_only(wanted, branch, matches):
    assert branch_matches(wanted, branch) is matches


# -- one POST, for real ----------------------------------------------------------------


def test_post_goes_to_the_checked_address_and_never_follows_a_redirect():
    """The name is resolved once (a fake resolver: no DNS here) and the connection goes
    to that address, with the URL's host in the Host header; a 302 is the answer."""
    with receiver() as hook:
        port = int(hook.url.rsplit(":", 1)[1].split("/")[0])
        lookups: list[str] = []

        def resolve(host, p):
            lookups.append(host)
            return ["127.0.0.1"]

        hook.answer(200, (302, {"Location": "http://127.0.0.1:1/elsewhere"}))
        url = f"http://hooks.test:{port}/hook?x=1"
        first = post(url, b"{}", {"X-T": "1"}, timeout=5, networks=LOOPBACK, resolve=resolve)
        second = post(url, b"{}", {}, timeout=5, networks=LOOPBACK, resolve=resolve)
        assert (first.status, second.status) == (200, 302)
        assert lookups == ["hooks.test", "hooks.test"]
        requests = hook.wait(2)
        assert len(hook.requests) == 2  # the redirect was not followed
        assert requests[0].headers["host"] == f"hooks.test:{port}"
        assert requests[0].path == "/hook?x=1"
        assert requests[0].headers["x-t"] == "1"
        assert requests[0].headers["content-type"] == "application/json"

        # DNS changed to an internal address since: refused at send time.
        with pytest.raises(WebhookTargetRefused, match="private"):
            post(url, b"{}", {}, timeout=5, networks=LOOPBACK, resolve=lambda h, p: ["10.0.0.7"])
        assert len(hook.requests) == 2


def test_post_gives_up_after_its_timeout_as_a_whole():
    with receiver() as hook:
        hook.answer(HANG)
        answer = post(hook.url, b"{}", {}, timeout=0.5, networks=LOOPBACK)
        assert answer.status is None
        assert answer.error == "no answer within 0.5s"


def test_post_says_the_same_when_the_sockets_timeout_fires_before_the_watchdog(monkeypatch):
    """Both last ``timeout``; on a loaded machine the socket's came first, and the
    answer said ``TimeoutError: timed out`` instead of the time it waited (CI saw it)."""
    from reposync.service.webhooks import webhook_transport

    class Late(threading.Timer):
        def start(self) -> None:  # the watchdog never fires: the socket's timeout does
            pass

    monkeypatch.setattr(webhook_transport.threading, "Timer", Late)
    with receiver() as hook:
        hook.answer(HANG)
        answer = post(hook.url, b"{}", {}, timeout=0.5, networks=LOOPBACK)
    assert (answer.status, answer.error) == (None, "no answer within 0.5s")


def test_post_reports_a_refused_connection_as_no_answer():
    from tests.servers import free_port

    answer = post(f"http://127.0.0.1:{free_port()}/", b"{}", {}, timeout=2, networks=LOOPBACK)
    assert answer.status is None
    assert answer.error is not None
    assert "ConnectionRefused" in answer.error
