"""Credentials as GitHub checks them: App JWTs, installation tokens, personal tokens.

JWT rules (docs.github.com, "Generating a JSON Web Token for a GitHub App"): RS256,
signed with the app's private key; ``iss`` is the app id or its client id; ``exp`` must be
in the future and no more than ten minutes ahead of the server's clock; ``iat`` must not
lie in the future (60 s of drift are tolerated, which is why clients backdate it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.github.errors import ApiError, bad_credentials, not_accessible, not_found
from tests.fakes.github.models import REPO_SCOPES, App, Repo, Token
from tests.fakes.github.state import State

JWT_MAX_LIFETIME = 600
JWT_IAT_DRIFT = 60
UNDECODABLE = "A JSON web token could not be decoded"
EXP_INVALID = (
    "'Expiration time' claim ('exp') must be a numeric value representing the future time "
    "at which the assertion expires"
)
EXP_TOO_FAR = "'Expiration time' claim ('exp') is too far in the future"
IAT_INVALID = (
    "'Issued at' claim ('iat') must be an Integer representing the time that the assertion "
    "was issued"
)


@dataclass(frozen=True)
class KeyPair:
    private_pem: bytes
    public_pem: bytes


def generate_key_pair(bits: int = 2048) -> KeyPair:
    """A fresh RSA key pair for a test GitHub App."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    return KeyPair(
        private_pem=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
        public_pem=key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
    )


def make_app_jwt(
    private_pem: bytes,
    issuer: str | int,
    *,
    now: float | None = None,
    iat_offset: int = -60,
    lifetime: int = 540,
) -> str:
    """A JWT as GitHub's docs recommend: ``iat`` 60 s back, ``exp`` under 10 min ahead."""
    now = time.time() if now is None else now
    payload = {
        "iat": int(now) + iat_offset,
        "exp": int(now) + lifetime,
        "iss": str(issuer),
    }
    return jwt.encode(payload, private_pem, algorithm="RS256")


def looks_like_jwt(credential: str) -> bool:
    return credential.count(".") == 2 and credential.startswith("eyJ")


def verify_app_jwt(state: State, credential: str) -> App:
    """The app that signed ``credential``; 401 with GitHub's message otherwise."""
    try:
        header = jwt.get_unverified_header(credential)
        claims = jwt.decode(credential, options={"verify_signature": False})
    except jwt.PyJWTError as exc:
        raise ApiError(401, UNDECODABLE) from exc
    if header.get("alg") != "RS256":
        raise ApiError(401, UNDECODABLE)
    issuer = str(claims.get("iss", ""))
    with state.lock:
        app = next(
            (a for a in state.apps.values() if issuer in (str(a.id), a.client_id)),
            None,
        )
    if app is None:
        raise ApiError(401, UNDECODABLE)
    try:
        jwt.decode(
            credential,
            app.public_key_pem,
            algorithms=["RS256"],
            options={"verify_exp": False, "verify_iat": False, "verify_nbf": False},
        )
    except jwt.PyJWTError as exc:
        raise ApiError(401, UNDECODABLE) from exc
    now = state.now().timestamp()
    exp, iat = claims.get("exp"), claims.get("iat")
    if not isinstance(exp, int | float) or isinstance(exp, bool) or exp <= now:
        raise ApiError(401, EXP_INVALID)
    if exp > now + JWT_MAX_LIFETIME:
        raise ApiError(401, EXP_TOO_FAR)
    if not isinstance(iat, int) or isinstance(iat, bool) or iat > now + JWT_IAT_DRIFT:
        raise ApiError(401, IAT_INVALID)
    return app


def credential_from(authorization: str | None) -> str | None:
    """The credential of an ``Authorization: token X`` / ``Bearer X`` header."""
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() in ("token", "bearer") and value.strip():
        return value.strip()
    return ""


def resolve_token(state: State, credential: str) -> Token:
    """The live token for ``credential``; 401 "Bad credentials" if unknown or expired."""
    token = state.token(credential)
    if token is None:
        raise bad_credentials()
    if token.expires_at is not None and state.now() >= token.expires_at:
        raise bad_credentials()
    return token


def scopes_allow(token: Token, repo: Repo, write: bool) -> bool:
    """Whether a classic token's scopes let it at ``repo`` (always true for other kinds):
    a private repository needs ``repo``; a write needs ``repo`` or ``public_repo``."""
    if token.scopes is None:
        return True
    if repo.private and "repo" not in token.scopes:
        return False
    return not write or any(scope in token.scopes for scope in REPO_SCOPES)


def reaches(state: State, token: Token, repo: Repo) -> bool:
    """Whether the token was granted this repository at all."""
    if not scopes_allow(token, repo, write=False):
        return False
    if token.installation is not None:
        allowed = token.repository_ids
        if allowed is None:
            allowed = state.installation_repo_ids(token.installation)
        return repo.id in allowed
    if token.repository_ids is not None and repo.id not in token.repository_ids:
        return False
    if token.app is not None and not any(  # a user access token: the App must reach it too
        inst.app.id == token.app.id and repo.id in state.installation_repo_ids(inst)
        for inst in state.installations.values()
    ):
        return False
    login = token.user.login
    return login == repo.owner.login or login in repo.collaborators


def can(token: Token, permissions: tuple[str, ...], write: bool) -> bool:
    """Whether the token holds one of ``permissions`` at the needed level."""
    if token.scopes is not None:  # classic: a write needs a repository scope
        return not write or any(scope in token.scopes for scope in REPO_SCOPES)
    if token.installation is None:
        return token.write or not write
    if permissions == ("metadata",) and not write:
        return True
    levels = [token.permissions.get(p) for p in permissions]
    if write:
        return "write" in levels
    return any(level in ("read", "write") for level in levels)


def check_repo_access(
    state: State, token: Token, repo: Repo, permissions: tuple[str, ...], write: bool
) -> None:
    """GitHub's answers: 404 for a repository the token cannot see, 403 when it may only
    read; a classic token whose scopes do not cover the request gets 404 too (GitHub does
    not tell a token what it may not see; ``X-Accepted-OAuth-Scopes`` says what it needs)."""
    if not scopes_allow(token, repo, write):
        raise not_found()
    if not reaches(state, token, repo):
        if repo.private:
            raise not_found()
        if write:
            raise not_accessible(token.kind)
        return
    if not can(token, permissions, write):
        raise not_accessible(token.kind)
