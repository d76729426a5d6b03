"""GitHub's webhook deliveries: ``X-Hub-Signature-256``, its headers, JSON or form bodies.

GitHub signs each delivery with ``sha256=<hex HMAC-SHA256(secret, raw body)>`` (the raw
body: a hook whose content type is ``form`` has its form body signed). During a rotation
the previous secret still counts until the configured end of the overlap (deliveries
GitHub signed before it took the new secret, and their redeliveries); comparisons are
constant-time and cover every accepted secret (``providers/webhooks.py``). What a
delivery says is read by ``events`` (with ``payloads``, the tolerant reader).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from reposync.config import Settings
from reposync.errors import WebhookMalformed, WebhookSignatureInvalid, WebhooksNotConfigured
from reposync.providers import webhooks
from reposync.providers.base import WebhookReader
from reposync.providers.github import events
from reposync.providers.notifications import Delivery, Notification

SIGNATURE_HEADER = "X-Hub-Signature-256"
EVENT_HEADER = "X-GitHub-Event"
DELIVERY_HEADER = "X-GitHub-Delivery"
PREFIX = "sha256="


def sign(secret: str | bytes, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub sends for ``body`` (tests, the bench)."""
    key = secret.encode() if isinstance(secret, str) else secret
    return PREFIX + webhooks.hmac_sha256(key, body)


def accepted_secrets(settings: Settings, now: datetime) -> tuple[bytes, ...]:
    """The secrets a delivery may be signed with at ``now``.

    Raises ``WebhooksNotConfigured`` without a secret: unsigned input is never accepted.
    """
    if not settings.github_webhook_secret:
        raise WebhooksNotConfigured(
            "no webhook secret is configured (REPOSYNC_GITHUB_WEBHOOK_SECRET); deliveries "
            "are refused until one is"
        )
    secrets = [settings.github_webhook_secret.encode()]
    until = settings.github_webhook_previous_secret_until
    if settings.github_webhook_previous_secret and until is not None and now < until:
        secrets.append(settings.github_webhook_previous_secret.encode())
    return tuple(secrets)


class GitHubWebhookReader(WebhookReader):
    """``POST /webhooks/github``: a GitHub App's or a repository hook's deliveries."""

    provider = events.PROVIDER
    signature_headers = (SIGNATURE_HEADER,)

    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    def secrets(self, now: datetime) -> tuple[bytes, ...]:
        return accepted_secrets(self._settings, now)

    def verify(self, headers: Mapping[str, str], body: bytes, secrets: Sequence[bytes]) -> None:
        header = headers.get(SIGNATURE_HEADER.lower())
        if not header or not header.startswith(PREFIX):
            raise WebhookSignatureInvalid(
                f"the delivery has no {SIGNATURE_HEADER} header (sha256=...); configure the "
                "hook with the secret of REPOSYNC_GITHUB_WEBHOOK_SECRET"
            )
        if not webhooks.signed_by_one(secrets, body, header[len(PREFIX) :]):
            raise WebhookSignatureInvalid(
                f"{SIGNATURE_HEADER} does not match the body with the configured secret "
                "(REPOSYNC_GITHUB_WEBHOOK_SECRET; during a rotation also ..._PREVIOUS_SECRET "
                "until ..._PREVIOUS_SECRET_UNTIL)"
            )

    def delivery(self, headers: Mapping[str, str]) -> Delivery:
        return Delivery.from_headers(
            headers.get(EVENT_HEADER.lower()),
            headers.get(DELIVERY_HEADER.lower()),
            event_header=EVENT_HEADER,
            id_header=DELIVERY_HEADER,
        )

    def notification(
        self, delivery: Delivery, headers: Mapping[str, str], body: bytes
    ) -> Notification:
        return events.notification(
            delivery.event,
            delivery.delivery_id,
            _payload(headers, body),
            configured_installation=self._settings.github_installation_id,
        )


def _payload(headers: Mapping[str, str], body: bytes) -> bytes:
    """The JSON payload of a signed body: the body itself, or its ``payload=`` field for a
    hook whose content type is ``form`` (GitHub's default; it signs the form body)."""
    media_type = webhooks.media_type(headers)
    if media_type == webhooks.JSON:
        return body
    if media_type == webhooks.FORM:
        return webhooks.form_payload(body)
    raise WebhookMalformed(
        f"the delivery's content type is {media_type or 'missing'}; GitHub sends "
        f"{webhooks.JSON} (or {webhooks.FORM})"
    )
