"""What a request may weigh before the API reads it.

Bodies are capped (``MAX_CONTENT_LENGTH``: Werkzeug answers 413 before reading more) and
JSON nesting is measured on the raw bytes before any parser recurses into it: a
100,000-deep array made Python's JSON decoder raise ``RecursionError`` (a 500).

Webhook deliveries are the exception: a forge sends up to 25 MB, which the endpoints
of the ``webhooks`` blueprint (``RAW_BODY_BLUEPRINTS``: every forge's route) stream
themselves under that cap, and parse only once the signature holds (a
``RecursionError`` of the parser is a 400 there).
"""

from __future__ import annotations

from flask import request
from werkzeug.exceptions import BadRequest

#: Every body this API takes is a few fields; 1 MiB leaves room and stops floods.
MAX_BODY_BYTES = 1024 * 1024
#: Far beyond any body this API defines (three levels at most), far below recursion.
MAX_JSON_DEPTH = 32
#: GitHub caps webhook payloads at 25 MB (and never delivers a larger event).
WEBHOOK_MAX_BODY_BYTES = 25 * 1024 * 1024
#: Blueprints whose endpoints read their body themselves, under their own cap.
RAW_BODY_BLUEPRINTS = frozenset({"webhooks"})


def json_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in a JSON text (strings skipped)."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):  # ] }
            depth -= 1
    return deepest


def refuse_deep_json() -> None:
    """``before_request``: 400 for a JSON body nested deeper than any the API defines."""
    if request.blueprint in RAW_BODY_BLUEPRINTS:
        return
    if not request.is_json or not request.content_length:
        return
    if json_depth(request.get_data(cache=True)) > MAX_JSON_DEPTH:
        raise BadRequest(f"the JSON body is nested deeper than {MAX_JSON_DEPTH} levels")
