"""``/webhooks/<forge>``: a forge tells reposync that a repository changed.

No API token: the delivery's signature authenticates it (GitHub's
``X-Hub-Signature-256``, Forgejo's ``X-Forgejo-Signature``, Gitea's
``X-Gitea-Signature``). Every forge's route is the same view (``receive``), which only
reads the body (streamed, capped at 25 MB, GitHub's own cap and more than any forge
sends) and hands the headers and bytes to ``service.intake``: the forge's reader checks
the signature and reads the payload; deduplication and the Runs are the service's.
Nothing is recorded for a delivery whose signature fails, and without a configured
secret every delivery is refused (503) rather than taken unsigned. What differs by forge
here is only its route's description in the API's document.
"""

from __future__ import annotations

from typing import Any

from flask import request
from flask.views import MethodView
from flask_smorest import Blueprint
from werkzeug.exceptions import RequestEntityTooLarge

from reposync.errors import ReposyncError, WebhookTooLarge
from reposync.metrics import record_webhook
from reposync.providers.notifications import Outcome
from reposync.service.webhooks.intake import Receipt, receive_delivery, webhook_reader
from reposync.web.auth import service_context
from reposync.web.errors import documents
from reposync.web.limits import WEBHOOK_MAX_BODY_BYTES
from reposync.web.schemas.webhooks import WebhookReceiptSchema

blueprint = Blueprint("webhooks", __name__, description="Forges reporting their changes")

#: Bytes read from the request at a time.
CHUNK = 64 * 1024
#: Each forge's security scheme in the OpenAPI document (registered by ``create_app``;
#: the header is its reader's ``signature_headers``: a test holds them equal, so
#: building the document imports no provider).
SIGNATURE_SCHEME = {
    "type": "apiKey",
    "in": "header",
    "name": "X-Hub-Signature-256",
    "description": "sha256=<hex HMAC-SHA256 of the raw body with the hook's secret>",
}
FORGEJO_SIGNATURE_SCHEME = {
    "type": "apiKey",
    "in": "header",
    "name": "X-Forgejo-Signature",
    "description": "<hex HMAC-SHA256 of the raw body with the webhook_secret of the "
    "instance the repository is on> (no prefix)",
}
GITEA_SIGNATURE_SCHEME = FORGEJO_SIGNATURE_SCHEME | {
    "name": "X-Gitea-Signature",
}
SECURITY_SCHEMES = {
    "githubSignature": SIGNATURE_SCHEME,
    "forgejoSignature": FORGEJO_SIGNATURE_SCHEME,
    "giteaSignature": GITEA_SIGNATURE_SCHEME,
}


def _headers(prefix: str, event: str, with_type: bool = False) -> list[dict[str, Any]]:
    """The event and delivery headers of a forge's deliveries, as parameters."""
    found = [
        {
            "in": "header",
            "name": f"{prefix}-Event",
            "required": True,
            "schema": {"type": "string", "maxLength": 64},
            "description": f"the event ({event})",
        },
        {
            "in": "header",
            "name": f"{prefix}-Delivery",
            "required": True,
            "schema": {"type": "string", "maxLength": 100},
            "description": "the delivery's id; a redelivery keeps it (deduplicated)",
        },
    ]
    if with_type:
        found.insert(
            1,
            {
                "in": "header",
                "name": f"{prefix}-Event-Type",
                "required": False,
                "schema": {"type": "string", "maxLength": 64},
                "description": "the finer event type (issue_label, pull_request_comment, "
                "...), read first where reposync knows it",
            },
        )
    return found


def _body(as_sent: str) -> dict[str, Any]:
    return {
        "required": True,
        "content": {
            "application/json": {"schema": {"type": "object"}},
            "application/x-www-form-urlencoded": {
                "schema": {
                    "type": "object",
                    "properties": {"payload": {"type": "string"}},
                    "required": ["payload"],
                }
            },
        },
        "description": f"the event's payload, {as_sent} (a hook whose content type is "
        "form sends it as the payload= field)",
    }


_HEADERS = _headers("X-GitHub", "push, issues, ...")
_BODY = _body("as GitHub's webhook schema describes it")
_FORGEJO_EVENTS = "push, issues, pull_request, pull_request_approved, ..."


def receive(provider: str) -> tuple[dict[str, Any], int]:
    """The view of every forge's webhooks: the body read under the cap, then the service's.

    ``service.intake`` finds the forge's reader (404 for a provider without one; 503,
    before a byte is read, without a secret), checks the signature, deduplicates and
    acts; this only streams the body, which no forge signs for more than 25 MB.
    """
    ctx = service_context()
    try:
        webhook_reader(ctx, provider)
        body = _capped_body()
        receipt = receive_delivery(ctx, provider, dict(request.headers.items()), body)
    except ReposyncError as refused:  # counted by why (bounded: the error codes)
        record_webhook("inbound", refused.code)
        raise
    status = 200 if receipt.outcome in (Outcome.DUPLICATE, Outcome.PONG) else 202
    return _receipt(receipt), status


def _capped_body() -> bytes:
    """The raw body, read in chunks: refused (413) past the cap without being held, by its
    declared length before a byte is read."""
    length = request.content_length
    if length is not None and length > WEBHOOK_MAX_BODY_BYTES:
        raise WebhookTooLarge(
            f"the delivery is {length} bytes; forges send at most {WEBHOOK_MAX_BODY_BYTES}"
        )
    # Werkzeug's own guard on the stream as well (a body without Content-Length).
    request.max_content_length = WEBHOOK_MAX_BODY_BYTES
    chunks: list[bytes] = []
    size = 0
    stream = request.stream
    try:
        while size <= WEBHOOK_MAX_BODY_BYTES and (chunk := stream.read(CHUNK)):
            size += len(chunk)
            chunks.append(chunk)
    except RequestEntityTooLarge:  # Werkzeug's guard hit first: the same refusal
        size = WEBHOOK_MAX_BODY_BYTES + 1
    if size > WEBHOOK_MAX_BODY_BYTES:
        chunks.clear()
        raise WebhookTooLarge(
            f"the delivery is larger than {WEBHOOK_MAX_BODY_BYTES} bytes, the most forges send"
        )
    return b"".join(chunks)


# -- one route per forge, each the same view with the forge's own description ------------
# A forge's route: its path, an operationId ``receive_<provider>_webhook`` (pinned in
# tests/integration/web/api/test_openapi.py), its headers and signature scheme documented,
# and ``return receive("<provider>")``.


@blueprint.route("/webhooks/github")
class GitHubWebhookView(MethodView):
    @blueprint.doc(operationId="receive_github_webhook")
    @blueprint.doc(security=[{"githubSignature": []}], parameters=_HEADERS, requestBody=_BODY)
    @blueprint.response(202, WebhookReceiptSchema)
    @blueprint.alt_response(
        200, schema=WebhookReceiptSchema, description="A ping, or a delivery seen before"
    )
    @documents(blueprint, 400, 401, 413, 422, 503)
    def post(self) -> Any:
        """Receive a GitHub webhook delivery (authenticated by its signature, not a token).

        202 when recorded (a Run is requested where the repository is a Binding's
        authority), 200 for a ping or a redelivery (nothing changes), 401 for a bad or
        missing signature (nothing is recorded), 413 beyond 25 MB, 422 for a payload
        that does not match GitHub's schema, 503 when no webhook secret is configured.
        """
        return receive("github")


@blueprint.route("/webhooks/forgejo")
class ForgejoWebhookView(MethodView):
    @blueprint.doc(operationId="receive_forgejo_webhook")
    @blueprint.doc(
        security=[{"forgejoSignature": []}],
        parameters=_headers("X-Forgejo", _FORGEJO_EVENTS, with_type=True),
        requestBody=_body("as Forgejo sends it"),
    )
    @blueprint.response(202, WebhookReceiptSchema)
    @blueprint.alt_response(200, schema=WebhookReceiptSchema, description="A redelivery")
    @documents(blueprint, 400, 401, 413, 422, 503)
    def post(self) -> Any:
        """Receive a Forgejo webhook delivery (authenticated by its signature, not a token).

        The instance is the one the repository's html_url is on; the signature must be
        made with that instance's webhook_secret. 202 when recorded (a Run is requested
        where the repository, ``<id>@<instance>``, is a Binding's authority), 200 for a
        redelivery, 401 for a bad or missing signature or one made with another
        instance's secret (nothing is recorded), 413 beyond 25 MB, 422 for a payload
        without what reposync reads, 503 when no instance has a webhook_secret.
        """
        return receive("forgejo")


@blueprint.route("/webhooks/gitea")
class GiteaWebhookView(MethodView):
    @blueprint.doc(operationId="receive_gitea_webhook")
    @blueprint.doc(
        security=[{"giteaSignature": []}],
        parameters=_headers("X-Gitea", _FORGEJO_EVENTS, with_type=True),
        requestBody=_body("as Gitea sends it"),
    )
    @blueprint.response(202, WebhookReceiptSchema)
    @blueprint.alt_response(200, schema=WebhookReceiptSchema, description="A redelivery")
    @documents(blueprint, 400, 401, 413, 422, 503)
    def post(self) -> Any:
        """Receive a Gitea webhook delivery (authenticated by its signature, not a token).

        As ``/webhooks/forgejo``, with Gitea's headers (``X-Gitea-*``), for Bindings made
        with ``gitea:`` locators: 202 recorded, 200 a redelivery, 401 a bad signature or
        another instance's secret, 413 beyond 25 MB, 422 a payload without what reposync
        reads, 503 when no instance has a webhook_secret.
        """
        return receive("gitea")


def _receipt(receipt: Receipt) -> dict[str, Any]:
    return {
        "delivery_id": receipt.delivery_id,
        "event": receipt.event,
        "action": receipt.action,
        "outcome": receipt.outcome.value,
        "bindings": {str(k): v for k, v in receipt.bindings.items()},
    }
