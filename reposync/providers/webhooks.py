"""What every forge's webhook reader shares: HMAC signatures, JSON and form bodies, and
the tolerant reading of a payload.

Forges differ in their header names and payloads, much less in how a delivery is
carried: GitHub and Forgejo/Gitea both sign the body with HMAC-SHA256 in hex, send JSON,
and can send it as a form's ``payload=`` field instead. A reader (``base.WebhookReader``)
takes these from here, so the signature check is written (and made constant-time) once.

Each reader checks a payload against a JSON Schema of its own, of only the properties it
reads (``read_object``: any other property may be anything, or absent), and refuses one
that lacks them or holds them out of range with the same words (``checked``: 422
``webhook_payload_invalid`` naming the JSON path), whichever forge sent it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qs

from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator

from reposync.errors import WebhookMalformed, WebhookPayloadInvalid

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"


def hmac_sha256(secret: bytes, body: bytes) -> str:
    """The lower-case hex HMAC-SHA256 of ``body`` with ``secret``."""
    return hmac.new(secret, body, hashlib.sha256).hexdigest()


def signed_by_one(secrets: Sequence[bytes], body: bytes, given: str) -> bool:
    """Whether ``given`` (hex, any case) is the HMAC-SHA256 of ``body`` with one of
    ``secrets``. Every secret is compared, whichever matches, and each comparison is
    constant-time, so the timing says nothing about which one did (or how close a
    forgery came)."""
    wanted = given.strip().lower().encode("utf-8", "replace")
    matched = False
    for secret in secrets:
        matched |= hmac.compare_digest(hmac_sha256(secret, body).encode(), wanted)
    return matched


def media_type(headers: Mapping[str, str]) -> str:
    """The delivery's ``Content-Type`` without its parameters, in lower case ("" when it
    has none); ``headers`` are named in lower case, as readers receive them."""
    return headers.get("content-type", "").partition(";")[0].strip().lower()


def form_payload(body: bytes) -> bytes:
    """The JSON of a form-encoded delivery: its one ``payload=`` field.

    Raises ``WebhookMalformed`` when the body is no form or has not exactly one.
    """
    try:
        fields = parse_qs(body.decode("utf-8"), strict_parsing=True, max_num_fields=10)
    except (UnicodeDecodeError, ValueError):
        fields = {}
    if len(fields.get("payload", [])) == 1:
        return fields["payload"][0].encode()
    raise WebhookMalformed("the form-encoded delivery has no single payload= field")


def json_body(body: bytes) -> Any:
    """The JSON value of a delivery body (``WebhookMalformed`` when it is none, or nested
    past what the parser holds: a 400, never a 500)."""
    try:
        return json.loads(body)
    except RecursionError:
        raise WebhookMalformed("the delivery body is JSON nested too deeply") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WebhookMalformed(f"the delivery body is not JSON: {exc}") from None


def read_object(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    """The schema of an object of which a reader reads these properties (``required``:
    they must be there); any other property is left alone."""
    return {
        "type": "object",
        "required": list(required),
        "properties": {**required, **(optional or {})},
    }


def checked(validator: Validator, event: str, payload: Any) -> dict[str, Any]:
    """``payload`` once it holds what the reader reads of ``event`` (``validator``: the
    reader's schema of it); ``WebhookPayloadInvalid`` naming the first path that does not."""
    error = best_match(validator.iter_errors(payload))
    if error is not None:
        raise WebhookPayloadInvalid(f"the {event} delivery {problem(error)}")
    assert isinstance(payload, dict)
    return payload


def problem(error: ValidationError) -> str:
    """What is wrong at the error's path, in words that name the path and never echo more
    than a few hundred characters of what the sender wrote."""
    where = error.json_path
    if error.validator == "required":
        required: list[str] = list(error.validator_value)  # type: ignore[arg-type]
        present: dict[str, Any] = error.instance  # type: ignore[assignment]
        missing = [name for name in required if name not in present]
        return f"lacks {where}.{missing[0]}, which reposync reads"
    if error.validator in ("minimum", "maximum"):
        return f"has {where} out of range: {error.message}"
    if error.validator == "format":
        cause = error.cause if error.cause is not None else error.message
        return f"has {where} that is no date-time reposync can read: {cause}"
    message = error.message if len(error.message) <= 200 else error.message[:197] + "..."
    return f"has {where} that reposync cannot read: {message}"
