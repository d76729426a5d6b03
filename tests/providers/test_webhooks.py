"""What every forge's webhook reader shares: HMAC checks, content types, JSON bodies."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from reposync.errors import WebhookMalformed
from reposync.providers.webhooks import (
    form_payload,
    hmac_sha256,
    json_body,
    media_type,
    signed_by_one,
)


def test_the_hmac_is_the_standard_librarys_sha256_in_lower_case_hex():
    """The hex forges send (GitHub after sha256=, Forgejo and Gitea as it is)."""
    expected = hmac.new(b"key", b"body", hashlib.sha256).hexdigest()
    assert hmac_sha256(b"key", b"body") == expected == expected.lower()


def test_a_signature_of_any_accepted_secret_holds_and_no_other():
    """Each of the secrets signs; a signature of none of them, or nothing, does not."""
    secrets = (b"new", b"old")
    for secret in secrets:
        assert signed_by_one(secrets, b"body", hmac_sha256(secret, b"body"))
        assert signed_by_one(secrets, b"body", " " + hmac_sha256(secret, b"body").upper())
    assert not signed_by_one(secrets, b"body", hmac_sha256(b"other", b"body"))
    assert not signed_by_one(secrets, b"body", "")
    assert not signed_by_one((), b"body", hmac_sha256(b"new", b"body"))


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("application/json", "application/json"),
        ("Application/JSON; charset=utf-8", "application/json"),
        ("", ""),
        (None, ""),
    ],
)
def test_the_media_type_is_read_without_its_parameters(header, expected):
    """Compared in lower case, parameters dropped; a delivery without one has ""."""
    headers = {} if header is None else {"content-type": header}
    assert media_type(headers) == expected


def test_a_form_gives_its_one_payload_field_or_is_malformed():
    """One payload= field is the JSON; two, none or undecodable bytes are a 400."""
    assert form_payload(b"payload=%7B%7D&other=x") == b"{}"
    for body in (b"payload=1&payload=2", b"x=1", b"\xff", b""):
        with pytest.raises(WebhookMalformed):
            form_payload(body)


@pytest.mark.parametrize("raw", [b"not json", b"\xff\xfe", b"[" * 100_000, b""])
def test_a_body_that_is_no_json_is_malformed_not_an_error(raw):
    """Garbage, an empty body and absurd nesting are a 400, never a 500."""
    with pytest.raises(WebhookMalformed):
        json_body(raw)
    assert json_body(b'{"a": [1]}') == {"a": [1]}
