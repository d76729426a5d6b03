"""Secrets at rest: sealed with Fernet (AES-128-CBC + HMAC-SHA256) under REPOSYNC_SECRET_KEY.

A webhook subscription's signing secret must be usable by the workers (they sign every
delivery with it), so it cannot be hashed like an API token; it is sealed instead, and a
copy of the database alone does not reveal it. Several keys may be configured: the first
seals, every one opens (``MultiFernet``), which is how a key is rotated.
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from reposync.config import Settings
from reposync.errors import SecretKeyMissing, SecretUnreadable


def _keys(settings: Settings) -> MultiFernet:
    keys = settings.secret_keys  # validated when the settings were built
    if not keys:
        raise SecretKeyMissing(
            "REPOSYNC_SECRET_KEY is not set: webhook secrets cannot be sealed or opened"
        )
    return MultiFernet([Fernet(key.encode("ascii")) for key in keys])


def seal(settings: Settings, secret: str) -> str:
    """``secret`` sealed with the first configured key (a url-safe text token)."""
    return _keys(settings).encrypt(secret.encode("utf-8")).decode("ascii")


def unseal(settings: Settings, sealed: str) -> str:
    """The secret in ``sealed``; ``SecretUnreadable`` when no configured key opens it."""
    try:
        return _keys(settings).decrypt(sealed.encode("ascii")).decode("utf-8")
    except InvalidToken as exc:
        raise SecretUnreadable(
            "no key of REPOSYNC_SECRET_KEY opens this secret (was its key removed?)"
        ) from exc
