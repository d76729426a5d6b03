"""GitHub's webhook reader: its test vector, signatures, rotation, headers and bodies."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from urllib.parse import quote_plus

import pytest

from reposync.config import Settings
from reposync.errors import (
    RecordNotFound,
    WebhookMalformed,
    WebhookSignatureInvalid,
    WebhooksNotConfigured,
)
from reposync.providers.github import GitHubProvider
from reposync.providers.github.webhooks import (
    GitHubWebhookReader,
    accepted_secrets,
    sign,
)
from reposync.providers.notifications import Delivery, Outcome
from reposync.providers.registry import webhook_reader
from reposync.web.endpoints.webhooks import SIGNATURE_SCHEME
from tests import webhooks

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def signed(secret: str, body: bytes) -> dict[str, str]:
    return {"x-hub-signature-256": sign(secret, body)}


def reader(**settings: object) -> GitHubWebhookReader:
    return GitHubWebhookReader(Settings(**settings))


def test_github_documented_test_vector():
    """The example of GitHub's "Validating webhook deliveries" page signs the same."""
    assert sign("It's a Secret to Everybody", b"Hello, World!") == (
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    )


def test_a_body_verifies_with_its_signature_in_either_case():
    """The HMAC of the body with the secret verifies, its hex in upper case too."""
    data = b'{"zen": "Design for failure."}' * 10
    header = sign("s3cret", data)
    reader().verify(signed("s3cret", data), data, (b"s3cret",))
    upper = {"x-hub-signature-256": "sha256=" + header.removeprefix("sha256=").upper()}
    reader().verify(upper, data, (b"s3cret",))


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
    headers = {} if header is None else {"x-hub-signature-256": header}
    with pytest.raises(WebhookSignatureInvalid) as refused:
        reader().verify(headers, b"data", (b"s3cret",))
    assert refused.value.http_status == 401


def test_no_secret_configured_refuses_rather_than_accepting_unsigned_input():
    """Without REPOSYNC_GITHUB_WEBHOOK_SECRET every delivery is refused (503)."""
    with pytest.raises(WebhooksNotConfigured) as refused:
        reader().secrets(NOW)
    assert refused.value.http_status == 503


def test_rotation_accepts_the_previous_secret_until_the_overlap_ends():
    """During the overlap both secrets verify; from its end only the new one does."""
    settings = Settings(
        github_webhook_secret="new",
        github_webhook_previous_secret="old",
        github_webhook_previous_secret_until=NOW + timedelta(hours=1),
    )
    github = GitHubWebhookReader(settings)
    data = b"payload"
    during = github.secrets(NOW)
    github.verify(signed("old", data), data, during)
    github.verify(signed("new", data), data, during)
    after = github.secrets(NOW + timedelta(hours=1))
    assert after == accepted_secrets(settings, NOW + timedelta(hours=1)) == (b"new",)
    with pytest.raises(WebhookSignatureInvalid):
        github.verify(signed("old", data), data, after)


@pytest.mark.parametrize(
    "headers",
    [
        {"x-github-delivery": "d-1"},
        {"x-github-event": "push"},
        {"x-github-event": "push", "x-github-delivery": ""},
        {"x-github-event": "push", "x-github-delivery": "d" * 101},
        {"x-github-event": "p" * 65, "x-github-delivery": "d-1"},
    ],
    ids=["no-event", "no-id", "empty-id", "id-too-long", "event-too-long"],
)
def test_a_delivery_without_its_event_and_id_or_too_long_ones_is_malformed(headers):
    """400, naming GitHub's headers: the record could keep neither."""
    with pytest.raises(WebhookMalformed) as refused:
        reader().delivery(headers)
    assert "X-GitHub-Event" in refused.value.message
    assert "X-GitHub-Delivery" in refused.value.message


def test_a_delivery_is_named_by_its_event_and_id_headers():
    """The longest event and id the record keeps are taken as they are."""
    headers = {"x-github-event": "e" * 64, "x-github-delivery": "d" * 100}
    assert reader().delivery(headers) == Delivery("e" * 64, "d" * 100)


def test_a_form_encoded_body_is_read_from_its_payload_field():
    """GitHub's default content type: the JSON in ``payload=``, a charset allowed."""
    body = webhooks.push(7, "acme/app", "refs/heads/main", "a" * 40, "b" * 40)
    form = ("payload=" + quote_plus(json.dumps(body))).encode()
    headers = {"content-type": "application/x-www-form-urlencoded; charset=utf-8"}
    notification = reader().notification(Delivery("push", "d-1"), headers, form)
    assert notification.outcome is Outcome.ACCEPTED
    assert notification.changes[0].repository_id == "7"


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("application/x-www-form-urlencoded", b"payload=1&payload=2"),
        ("application/x-www-form-urlencoded", b"other=1"),
        ("application/x-www-form-urlencoded", b"\xff=\xfe"),
        ("text/plain", b"{}"),
        ("", b"{}"),
    ],
)
def test_a_body_of_another_shape_is_malformed(content_type, body):
    """A form without one payload field, or a content type GitHub never sends: 400."""
    headers = {"content-type": content_type} if content_type else {}
    with pytest.raises(WebhookMalformed):
        reader().notification(Delivery("ping", "d-1"), headers, body)


def test_the_configured_installation_deleted_concerns_its_unconnected_sides():
    """The installation reposync is configured with covers the sides without a
    connection; another installation covers only the sides that name it."""
    body = webhooks.payload("installation", "deleted")
    body["installation"]["id"] = 99
    raw, json_type = json.dumps(body).encode(), {"content-type": "application/json"}
    delivery = Delivery("installation", "d-1")
    for configured, concerned in [("99", True), ("98", False), ("", False)]:
        notification = reader(github_installation_id=configured).notification(
            delivery, json_type, raw
        )
        assert notification.connection_access is not None
        assert notification.connection_access.connection_id == "github:installation:99"
        assert notification.connection_access.configured is concerned


def test_the_registry_gives_githubs_reader_from_the_class_and_none_for_local():
    """The reader comes from the provider class, unopened; local sends no webhooks."""
    settings = Settings(github_webhook_secret="s")
    github = webhook_reader("github", settings)
    assert isinstance(github, GitHubWebhookReader)
    assert github.provider == GitHubProvider.name
    assert github.secrets(NOW) == (b"s",)
    for name in ("local", "nosuchforge"):
        with pytest.raises(RecordNotFound) as refused:
            webhook_reader(name, settings)
        assert refused.value.http_status == 404


def test_the_api_documents_the_readers_signature_header():
    """The OpenAPI security scheme names the header GitHub's reader verifies."""
    assert (SIGNATURE_SCHEME["name"],) == GitHubWebhookReader.signature_headers
