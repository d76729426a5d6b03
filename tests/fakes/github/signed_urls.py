"""Signed download URLs: what the API's redirect to an asset's bytes carries.

GitHub redirects ``Accept: application/octet-stream`` reads of an asset to a storage host
with a pre-signed, short-lived URL: it needs no credentials, and clients drop
``Authorization`` when they follow a redirect to another host. The fake signs the query of
its own download URL the same way (HMAC-SHA256 with the state's key), and the download
accepts a live signature in place of credentials.
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import parse_qsl, urlencode

LIFETIME = 300  # seconds, as GitHub's storage URLs


def _mac(key: bytes, asset_id: int, expires: int) -> str:
    return hmac.new(key, f"{asset_id}:{expires}".encode(), hashlib.sha256).hexdigest()


def sign(key: bytes, asset_id: int, now: float) -> str:
    """The query that lets anyone download asset ``asset_id`` for ``LIFETIME`` seconds."""
    expires = int(now) + LIFETIME
    return urlencode(
        {"asset": asset_id, "expires": expires, "signature": _mac(key, asset_id, expires)}
    )


def valid(key: bytes, asset_id: int, query: str, now: float) -> bool:
    """Whether ``query`` is a live signature of ``sign`` for this asset."""
    params = dict(parse_qsl(query))
    try:
        expires = int(params.get("expires", ""))
    except ValueError:
        return False
    if str(asset_id) != params.get("asset") or expires < now:
        return False
    return hmac.compare_digest(_mac(key, asset_id, expires), params.get("signature", ""))
