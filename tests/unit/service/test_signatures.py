"""Webhook signatures: GitHub's test vector, constant-time checks, rotation, the cap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from reposync.config import Settings
from reposync.errors import WebhookSignatureInvalid, WebhooksNotConfigured, WebhookTooLarge
from reposync.service.signatures import SignedBody, accepted_secrets, sign

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def body_of(
    secrets: tuple[bytes, ...], data: bytes, limit: int = 1000, chunk: int = 7
) -> SignedBody:
    body = SignedBody(secrets, limit)
    for start in range(0, len(data), chunk):
        body.update(data[start : start + chunk])
    return body


def test_github_documented_test_vector():
    """The example of GitHub's "Validating webhook deliveries" page signs the same."""
    assert sign("It's a Secret to Everybody", b"Hello, World!") == (
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    )


def test_a_body_read_in_chunks_verifies_with_its_signature():
    """Hashing chunk by chunk equals hashing the whole body; the body comes back whole."""
    data = b'{"zen": "Design for failure."}' * 10
    body = body_of((b"s3cret",), data)
    assert body.verified(sign("s3cret", data)) == data


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "sha1=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
        "sha256=",
        "sha256=zz",
        "sha256=\u00e9\u00e9",
        sign("wrong", b"data"),
        sign("s3cret", b"dat"),  # the signature of another body
    ],
)
def test_missing_malformed_or_wrong_signatures_are_refused(header):
    """Anything but the HMAC of this body with an accepted secret: webhook_signature_invalid."""
    body = body_of((b"s3cret",), b"data")
    with pytest.raises(WebhookSignatureInvalid) as refused:
        body.verified(header)
    assert refused.value.http_status == 401


def test_no_secret_configured_refuses_rather_than_accepting_unsigned_input():
    """Without REPOSYNC_GITHUB_WEBHOOK_SECRET every delivery is refused (503)."""
    with pytest.raises(WebhooksNotConfigured) as refused:
        accepted_secrets(Settings(), NOW)
    assert refused.value.http_status == 503


def test_rotation_accepts_the_previous_secret_until_the_overlap_ends():
    """During the overlap both secrets verify; from its end only the new one does."""
    settings = Settings(
        github_webhook_secret="new",
        github_webhook_previous_secret="old",
        github_webhook_previous_secret_until=NOW + timedelta(hours=1),
    )
    data = b"payload"
    during = accepted_secrets(settings, NOW)
    assert body_of(during, data).verified(sign("old", data)) == data
    assert body_of(during, data).verified(sign("new", data)) == data
    after = accepted_secrets(settings, NOW + timedelta(hours=1))
    assert after == (b"new",)
    with pytest.raises(WebhookSignatureInvalid):
        body_of(after, data).verified(sign("old", data))


def test_the_cap_refuses_one_byte_more_and_keeps_nothing():
    """Exactly the cap is read; one byte beyond it raises webhook_too_large (413)."""
    body = body_of((b"k",), b"x" * 100, limit=100)
    assert body.verified(sign("k", b"x" * 100)) == b"x" * 100
    over = SignedBody((b"k",), 100)
    over.update(b"x" * 60)
    with pytest.raises(WebhookTooLarge) as refused:
        over.update(b"x" * 41)
    assert refused.value.http_status == 413
    assert over.size == 101
