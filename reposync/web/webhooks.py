"""``/webhooks/github``: GitHub tells reposync that a repository changed.

No API token: the delivery's ``X-Hub-Signature-256`` authenticates it. The view only
reads the body (streamed, capped at GitHub's 25 MB, hashed as it comes), checks the
signature and hands the bytes to ``service.intake``: validation, deduplication and the
Runs are the service's. Nothing is recorded for a delivery whose signature fails, and
without a configured secret every delivery is refused (503) rather than taken unsigned.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from flask import request
from flask.views import MethodView
from flask_smorest import Blueprint
from werkzeug.exceptions import RequestEntityTooLarge

from reposync.errors import ReposyncError, WebhookMalformed, WebhookTooLarge
from reposync.metrics import record_webhook
from reposync.models import utcnow
from reposync.service.changes import Outcome
from reposync.service.intake import Receipt, receive_github
from reposync.service.signatures import SIGNATURE_HEADER, SignedBody, accepted_secrets
from reposync.web.auth import service_context
from reposync.web.errors import documents
from reposync.web.limits import WEBHOOK_MAX_BODY_BYTES
from reposync.web.schemas.webhooks import WebhookReceiptSchema

blueprint = Blueprint("webhooks", __name__, description="Forges reporting their changes")

#: Bytes read from the request at a time.
CHUNK = 64 * 1024
#: The security scheme of the OpenAPI document (registered by ``create_app``).
SIGNATURE_SCHEME = {
    "type": "apiKey",
    "in": "header",
    "name": SIGNATURE_HEADER,
    "description": "sha256=<hex HMAC-SHA256 of the raw body with the hook's secret>",
}
_HEADERS = [
    {
        "in": "header",
        "name": "X-GitHub-Event",
        "required": True,
        "schema": {"type": "string", "maxLength": 64},
        "description": "the event (push, issues, ...)",
    },
    {
        "in": "header",
        "name": "X-GitHub-Delivery",
        "required": True,
        "schema": {"type": "string", "maxLength": 100},
        "description": "the delivery's id; a redelivery keeps it (deduplicated)",
    },
]
_BODY = {
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
    "description": "the event's payload, as GitHub's webhook schema describes it (a hook "
    "whose content type is form sends it as the payload= field)",
}


def _signed_body() -> bytes:
    """The raw body, at most the cap, once its signature holds."""
    secrets = accepted_secrets(service_context().settings, utcnow())  # 503 before reading
    length = request.content_length
    if length is not None and length > WEBHOOK_MAX_BODY_BYTES:
        raise WebhookTooLarge(
            f"the delivery is {length} bytes; GitHub sends at most {WEBHOOK_MAX_BODY_BYTES}"
        )
    # Werkzeug's own guard on the stream as well (a body without Content-Length).
    request.max_content_length = WEBHOOK_MAX_BODY_BYTES
    body = SignedBody(secrets, WEBHOOK_MAX_BODY_BYTES)
    stream = request.stream
    try:
        while chunk := stream.read(CHUNK):
            body.update(chunk)
    except RequestEntityTooLarge:  # Werkzeug's guard hit first: the same refusal
        raise WebhookTooLarge(
            f"the delivery is larger than {WEBHOOK_MAX_BODY_BYTES} bytes, the most GitHub sends"
        ) from None
    return body.verified(request.headers.get(SIGNATURE_HEADER))


def _payload(body: bytes) -> bytes:
    """The JSON payload of a signed body: the body itself, or its ``payload=`` field for a
    hook whose content type is ``form`` (GitHub's default; it signs the form body)."""
    if request.mimetype == "application/json":
        return body
    if request.mimetype == "application/x-www-form-urlencoded":
        try:
            fields = parse_qs(body.decode("utf-8"), strict_parsing=True, max_num_fields=10)
        except (UnicodeDecodeError, ValueError):
            fields = {}
        if len(fields.get("payload", [])) == 1:
            return fields["payload"][0].encode()
        raise WebhookMalformed("the form-encoded delivery has no single payload= field")
    raise WebhookMalformed(
        f"the delivery's content type is {request.mimetype or 'missing'}; GitHub sends "
        "application/json (or application/x-www-form-urlencoded)"
    )


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
        try:
            body = _payload(_signed_body())
            receipt = receive_github(
                service_context(),
                request.headers.get("X-GitHub-Event"),
                request.headers.get("X-GitHub-Delivery"),
                body,
            )
        except ReposyncError as refused:  # counted by why (bounded: the error codes)
            record_webhook("inbound", refused.code)
            raise
        status = 200 if receipt.outcome in (Outcome.DUPLICATE, Outcome.PONG) else 202
        return _receipt(receipt), status


def _receipt(receipt: Receipt) -> dict[str, Any]:
    return {
        "delivery_id": receipt.delivery_id,
        "event": receipt.event,
        "action": receipt.action,
        "outcome": receipt.outcome.value,
        "bindings": {str(k): v for k, v in receipt.bindings.items()},
    }
