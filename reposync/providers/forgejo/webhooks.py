"""Forgejo's and Gitea's webhook deliveries: each instance's own secret, its headers.

A Forgejo hook (type ``forgejo`` or ``gitea``) signs each delivery with its secret:
``X-Forgejo-Signature`` is the hex HMAC-SHA256 of the raw body, no prefix (Forgejo sends
the same as ``X-Gitea-Signature``; Gitea sends only the latter). The delivery's id is
``X-Forgejo-Delivery`` (a UUID a redelivery keeps) and its event ``X-Forgejo-Event``,
with the finer ``X-Forgejo-Event-Type``. ``/webhooks/forgejo`` reads the ``X-Forgejo-*``
headers and names repositories as the ``forgejo`` provider does; ``/webhooks/gitea``
reads ``X-Gitea-*`` and names them as ``gitea`` does (a Binding made with ``gitea:``
locators hears the hooks pointed there).

**Which instance**: one deployment reaches several instances, each configured with its
own ``webhook_secret`` (``reposync/forge_instances.py``). No header names the instance, so
the payload does: its repository's ``html_url`` is the instance's web address followed by
``OWNER/NAME``, and that address is matched to the configured instance whose name or URL
it is (``instance_of``; Forgejo builds it from its ``ROOT_URL``). The delivery must then
be signed with *that* instance's secret: one instance's secret never authenticates a
delivery about another's repository. ``verify`` first checks the signature against every
instance's secret without reading the body (a delivery signed by none is refused before
its JSON is parsed), then the instance the body names; ``notification`` names the
repository ``<Forgejo's id>@<instance>`` (``locators.repository_id``). What a delivery
says is read by ``events`` (with ``payloads``, the tolerant reader).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import unquote, urlsplit

from reposync.config import Settings
from reposync.errors import (
    WebhookMalformed,
    WebhookPayloadInvalid,
    WebhookSignatureInvalid,
    WebhooksNotConfigured,
)
from reposync.forge_instances import ForgejoInstance
from reposync.providers import webhooks
from reposync.providers.base import WebhookReader
from reposync.providers.forgejo import events, payloads
from reposync.providers.notifications import Delivery, Notification

#: Where the instances and their secrets are configured (named in refusals).
SETTINGS = "REPOSYNC_FORGEJO_INSTANCES or REPOSYNC_FORGEJO_INSTANCES_FILE"
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class Headers:
    """The headers a kind of hook names its delivery with."""

    signature: str
    event: str
    event_type: str
    delivery: str

    @classmethod
    def named(cls, prefix: str) -> Headers:
        return cls(
            f"{prefix}-Signature", f"{prefix}-Event", f"{prefix}-Event-Type", f"{prefix}-Delivery"
        )


#: By provider: the headers its route reads.
HEADERS = {"forgejo": Headers.named("X-Forgejo"), "gitea": Headers.named("X-Gitea")}


def sign(secret: str | bytes, body: bytes) -> str:
    """The ``X-Forgejo-Signature`` value Forgejo sends for ``body`` (tests, the bench)."""
    key = secret.encode() if isinstance(secret, str) else secret
    return webhooks.hmac_sha256(key, body)


def web_name(url: str) -> str | None:
    """``HOST[:PORT][/PATH]`` of a web address, as an instance's name spells it (host in
    lower case, no default port, no trailing slash); None for no http(s) address."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if parts.scheme not in _DEFAULT_PORTS or not host:
        return None
    shown = "" if port is None or port == _DEFAULT_PORTS[parts.scheme] else f":{port}"
    return host + shown + unquote(parts.path).rstrip("/")


def instance_of(
    html_url: str, full_name: str, instances: Sequence[ForgejoInstance]
) -> tuple[str, list[ForgejoInstance]]:
    """The web address (``HOST[:PORT][/PATH]``) a repository's ``html_url`` puts it on,
    and the configured instances of that address: named so first, then those whose URL it
    is. ``WebhookPayloadInvalid`` when the address does not end with ``OWNER/NAME``."""
    name = web_name(html_url)
    suffix = "/" + full_name.lower()
    if name is None or not name.lower().endswith(suffix):
        raise WebhookPayloadInvalid(
            f"the delivery's $.repository.html_url {html_url[:200]!r} is no web address "
            f"of {full_name[:200]!r}, so it names no instance"
        )
    root = name[: -len(suffix)]
    named = [i for i in instances if i.name == root]
    by_url = [i for i in instances if i not in named and web_name(i.url) == root]
    return root, named + by_url


class ForgejoWebhookReader(WebhookReader):
    """``POST /webhooks/forgejo`` (or ``/webhooks/gitea``): the hooks of the configured
    instances, each signed with its own instance's secret."""

    def __init__(
        self, settings: Settings, provider: str = "forgejo", forge: str = "Forgejo"
    ) -> None:
        self.provider = provider
        self.forge = forge
        self.headers = HEADERS[provider]
        self.signature_headers = (self.headers.signature,)
        self._instances = tuple(settings.forgejo_instances)

    def secrets(self, now: datetime) -> tuple[bytes, ...]:
        found = tuple(
            dict.fromkeys(i.webhook_secret.encode() for i in self._instances if i.webhook_secret)
        )
        if not found:
            raise WebhooksNotConfigured(
                f"no {self.forge} instance has a webhook_secret ({SETTINGS}); deliveries "
                "are refused until one has"
            )
        return found

    def verify(self, headers: Mapping[str, str], body: bytes, secrets: Sequence[bytes]) -> None:
        given = headers.get(self.headers.signature.lower(), "").strip()
        if not given:
            raise WebhookSignatureInvalid(
                f"the delivery has no {self.headers.signature} header; give the hook the "
                f"webhook_secret of its instance ({SETTINGS})"
            )
        if not webhooks.signed_by_one(secrets, body, given):
            raise WebhookSignatureInvalid(
                f"{self.headers.signature} does not match the body with any instance's "
                f"webhook_secret ({SETTINGS})"
            )
        named = payloads.address(_payload(headers, body))
        if named is None:  # nothing it names is acted on (ignored, or refused 422)
            return
        if self._signer(headers, body, *named) is None:
            root, _ = instance_of(*named, self._instances)
            raise WebhookSignatureInvalid(
                f"the delivery's repository is on {root[:200]}, and {self.headers.signature} "
                f"is not made with the webhook_secret of a {self.forge} instance configured "
                f"there (by name or url, {SETTINGS}): one instance's secret never "
                "authenticates another's deliveries"
            )

    def delivery(self, headers: Mapping[str, str]) -> Delivery:
        event = headers.get(self.headers.event.lower()) or None
        # Forgejo leaves the event empty for types it gives no event name (package).
        event = event or headers.get(self.headers.event_type.lower())
        return Delivery.from_headers(
            event,
            headers.get(self.headers.delivery.lower()),
            event_header=self.headers.event,
            id_header=self.headers.delivery,
        )

    def notification(
        self, delivery: Delivery, headers: Mapping[str, str], body: bytes
    ) -> Notification:
        def signer(html_url: str, full_name: str) -> ForgejoInstance:
            instance = self._signer(headers, body, html_url, full_name)
            if instance is None:  # verify refused it already: never taken unverified
                raise WebhookSignatureInvalid(
                    f"{self.headers.signature} is not made with the webhook_secret of the "
                    "instance the delivery's repository is on"
                )
            return instance

        return events.notification(
            self.provider,
            self.forge,
            delivery,
            headers.get(self.headers.event_type.lower()) or None,
            lambda: _payload(headers, body),
            signer,
        )

    def _signer(
        self, headers: Mapping[str, str], body: bytes, html_url: str, full_name: str
    ) -> ForgejoInstance | None:
        """The configured instance of the repository's address whose secret signed the
        body (None: none did)."""
        given = headers.get(self.headers.signature.lower(), "").strip()
        _, candidates = instance_of(html_url, full_name, self._instances)
        for instance in candidates:
            secret = instance.webhook_secret.encode()
            if secret and webhooks.signed_by_one((secret,), body, given):
                return instance
        return None


def _payload(headers: Mapping[str, str], body: bytes) -> Any:
    """The decoded JSON payload of a signed body: the body itself, or its ``payload=``
    field for a hook whose content type is ``form`` (the form body is what is signed)."""
    media_type = webhooks.media_type(headers)
    if media_type == webhooks.JSON:
        return webhooks.json_body(body)
    if media_type == webhooks.FORM:
        return webhooks.json_body(webhooks.form_payload(body))
    raise WebhookMalformed(
        f"the delivery's content type is {media_type or 'missing'}; Forgejo sends "
        f"{webhooks.JSON} (or {webhooks.FORM})"
    )
