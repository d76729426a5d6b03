"""Webhook signatures: ``X-Hub-Signature-256`` over the raw body, with secret rotation.

GitHub signs each delivery with ``sha256=<hex HMAC-SHA256(secret, raw body)>``. The
body is hashed while it is read (``SignedBody``), under a cap, so an oversized body is
refused without being held and a forged one is refused before it is parsed. During a
rotation the previous secret still counts until the configured end of the overlap
(deliveries GitHub signed before it took the new secret, and their redeliveries).
Comparisons are constant-time (``hmac.compare_digest``) and every accepted secret is
compared, whichever matches, so the timing says nothing about which one did.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime

from reposync.config import Settings
from reposync.errors import WebhookSignatureInvalid, WebhooksNotConfigured, WebhookTooLarge

SIGNATURE_HEADER = "X-Hub-Signature-256"
PREFIX = "sha256="


def sign(secret: str | bytes, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub sends for ``body`` (tests, local hooks)."""
    key = secret.encode() if isinstance(secret, str) else secret
    return PREFIX + hmac.new(key, body, hashlib.sha256).hexdigest()


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


class SignedBody:
    """A delivery body read chunk by chunk: at most ``limit`` bytes, hashed as it comes."""

    def __init__(self, secrets: tuple[bytes, ...], limit: int) -> None:
        self._macs = [hmac.new(secret, digestmod=hashlib.sha256) for secret in secrets]
        self._chunks: list[bytes] = []
        self._limit = limit
        self.size = 0

    def update(self, chunk: bytes) -> None:
        """Take the next chunk; ``WebhookTooLarge`` once the body passes the cap."""
        self.size += len(chunk)
        if self.size > self._limit:
            self._chunks.clear()
            raise WebhookTooLarge(
                f"the delivery is larger than {self._limit} bytes, the most GitHub sends"
            )
        for mac in self._macs:
            mac.update(chunk)
        self._chunks.append(chunk)

    def verified(self, header: str | None) -> bytes:
        """The body, once ``header`` is the signature of one accepted secret.

        Raises ``WebhookSignatureInvalid`` for a missing, malformed or wrong signature.
        """
        if not header or not header.startswith(PREFIX):
            raise WebhookSignatureInvalid(
                f"the delivery has no {SIGNATURE_HEADER} header (sha256=...); configure the "
                "hook with a secret"
            )
        given = header[len(PREFIX) :].strip().lower().encode("utf-8", "replace")
        matched = False
        for mac in self._macs:  # every one, whichever matches: constant time overall
            matched |= hmac.compare_digest(mac.hexdigest().encode(), given)
        if not matched:
            raise WebhookSignatureInvalid(
                f"{SIGNATURE_HEADER} does not match the body with the configured secret"
            )
        return b"".join(self._chunks)
