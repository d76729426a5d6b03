"""Calling a webhook target: the request-forgery guard, the signature, one bounded POST.

The service calls URLs its users chose, from inside the operator's network. A target
is therefore refused when its host resolves to an address that is not public
(loopback, private, link-local, unique-local, multicast, unspecified, or any other
special-purpose range, IPv6 forms that embed such an IPv4 address included) unless
``REPOSYNC_WEBHOOK_ALLOWED_NETWORKS`` permits it. The check runs when a subscription is
saved (a clear 422) and again before every send, because DNS answers change (DNS
rebinding): the request then goes to the very address that was checked, never to a
second lookup's answer. Redirects are never followed (a 3xx is the target's answer).

Every send is bounded as a whole (``timeout``: connection, request and response
together), so a delivery's claim, which lasts longer, never expires while it is sent.

A delivery is signed twice with the subscription's one secret: reposync's own
``X-Reposync-Signature-256`` (kept for the receivers written against it) and the
Standard Webhooks scheme (``webhook-id``, ``webhook-timestamp``, ``webhook-signature``;
https://www.standardwebhooks.com), which receivers verify with that project's libraries
instead of code of their own.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hmac
import http.client
import ipaddress
import socket
import ssl
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from reposync.config import Network
from reposync.errors import WebhookTargetRefused

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
#: ``(host, port) -> addresses``: ``socket.getaddrinfo`` unless a test gives its own.
Resolver = Callable[[str, int], list[str]]

SIGNATURE_HEADER = "X-Reposync-Signature-256"
TIMESTAMP_HEADER = "X-Reposync-Timestamp"
DELIVERY_HEADER = "X-Reposync-Delivery"
EVENT_HEADER = "X-Reposync-Event"
ATTEMPT_HEADER = "X-Reposync-Attempt"
#: The Standard Webhooks headers, spelled as the specification spells them.
WEBHOOK_ID_HEADER = "webhook-id"
WEBHOOK_TIMESTAMP_HEADER = "webhook-timestamp"
WEBHOOK_SIGNATURE_HEADER = "webhook-signature"
#: How the specification serializes a symmetric key: this prefix, then the key in base64.
STANDARD_SECRET_PREFIX = "whsec_"
#: The key sizes the specification allows for HMAC-SHA256 (192 to 512 bits).
STANDARD_KEY_BYTES = (24, 64)
USER_AGENT = "reposync-webhooks/1"
MAX_URL_LENGTH = 2048

_RFC1918 = tuple(ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT (RFC 6598)
_UNIQUE_LOCAL = ipaddress.ip_network("fc00::/7")
_SITE_LOCAL = ipaddress.ip_network("fec0::/10")  # deprecated, still routed by some
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """``sha256=<hex>``: HMAC-SHA256 with ``secret`` over ``timestamp + "." + body``.

    The timestamp is signed with the body so a captured delivery cannot be replayed
    later under a fresh timestamp; receivers should refuse old timestamps.
    """
    digest = hmac.new(secret.encode("utf-8"), timestamp.encode("ascii") + b"." + body, "sha256")
    return "sha256=" + digest.hexdigest()


def verify(secret: str, timestamp: str, body: bytes, signature: str) -> bool:
    """What a receiver does: recompute and compare in constant time."""
    return hmac.compare_digest(sign(secret, timestamp, body), signature)


def _standard_key(secret: str) -> bytes | None:
    """The key a ``whsec_<base64>`` secret serializes, or None when ``secret`` is not one.

    Only padded, canonical standard base64 counts: it is what every library of the
    specification decodes to the same bytes (the JavaScript one refuses what Python's
    lenient decoder would quietly skip)."""
    if not secret.startswith(STANDARD_SECRET_PREFIX):
        return None
    encoded = secret[len(STANDARD_SECRET_PREFIX) :]
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return None
    if not key or base64.b64encode(key).decode("ascii") != encoded:
        return None
    return key


def signing_key(secret: str) -> bytes:
    """The Standard Webhooks HMAC key of a subscription secret.

    A ``whsec_<base64>`` secret is the key its base64 holds, as the specification
    serializes keys; any other secret is its own UTF-8 bytes, so a secret chosen before
    reposync spoke the scheme keeps working: its receiver gives a library
    ``"whsec_" + base64(secret)``. (A ``whsec_`` secret that is not valid base64 is
    refused when saved; one stored before that rule signs as its UTF-8 bytes.)
    """
    key = _standard_key(secret)
    return key if key is not None else secret.encode("utf-8")


def standard_secret_problem(secret: str) -> str | None:
    """Why ``secret`` may not be saved as a Standard Webhooks secret (None: it may).

    Only secrets that claim the ``whsec_`` form are judged here: such a secret must be
    one the specification's libraries read as its author meant, a key of the sizes it
    allows."""
    if not secret.startswith(STANDARD_SECRET_PREFIX):
        return None
    key = _standard_key(secret)
    low, high = STANDARD_KEY_BYTES
    if key is None:
        return (
            "a secret starting with whsec_ must continue in padded standard base64 "
            "(A-Z, a-z, 0-9, +, /, =), the Standard Webhooks serialization of a key"
        )
    if not low <= len(key) <= high:
        return (
            f"a whsec_ secret must hold a key of {low} to {high} bytes (Standard "
            f"Webhooks); this one holds {len(key)}"
        )
    return None


def standard_signature(secret: str, message_id: str, timestamp: str, body: bytes) -> str:
    """``v1,<base64>``: HMAC-SHA256 with ``signing_key(secret)`` over ``id.timestamp.body``.

    The id is the delivery's UUID and the timestamp its decimal seconds: neither holds a
    ``.``, which the specification requires so that no two (id, timestamp, body) sign the
    same bytes."""
    message = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.digest(signing_key(secret), message, "sha256")
    return "v1," + base64.b64encode(digest).decode("ascii")


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4, Teredo)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    packed = int(address)
    if any(address in network for network in _NAT64) or packed >> 32 == 0:
        # NAT64 and the deprecated IPv4-compatible ``::a.b.c.d`` end in the IPv4 address
        # (``::`` and ``::1`` are themselves: unspecified and loopback).
        if packed >> 32 == 0 and packed <= 1:
            return None
        return ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    return None


def _in(address: Address, networks: Sequence[Network]) -> bool:
    return any(address.version == n.version and address in n for n in networks)


def refusal(address: Address) -> str | None:
    """Why ``address`` is not a public one (None: it is)."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            inner = refusal(embedded)
            if inner is not None:
                return f"{inner} (IPv4 {embedded} inside IPv6)"
            if int(address) >> 32 != 0:
                # Mapped, NAT64, 6to4, Teredo: the IPv4 address is where it goes. (The
                # deprecated IPv4-compatible form goes on to the checks: reserved.)
                return None
    checks: Sequence[tuple[bool, str]] = (
        (address.is_unspecified, "unspecified"),
        (address.is_loopback, "loopback"),
        (address.is_link_local, "link-local"),
        (address.is_multicast, "multicast"),
        (isinstance(address, ipaddress.IPv4Address) and _in(address, _RFC1918), "private"),
        (isinstance(address, ipaddress.IPv6Address) and address in _UNIQUE_LOCAL, "unique-local"),
        (isinstance(address, ipaddress.IPv6Address) and address in _SITE_LOCAL, "site-local"),
        (isinstance(address, ipaddress.IPv4Address) and address in _SHARED, "shared (CGNAT)"),
        (address.is_reserved, "reserved"),
        (not address.is_global, "not globally routable"),
    )
    for refused, why in checks:
        if refused:
            return why
    return None


def allowed(address: Address, networks: Sequence[Network]) -> bool:
    """Whether the operator's allow-list names ``address`` (or the IPv4 it carries)."""
    candidates: list[Address] = [address]
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            candidates.append(embedded)
    return any(
        candidate.version == network.version and candidate in network
        for candidate in candidates
        for network in networks
    )


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True, slots=True)
class Target:
    """A checked target: where to connect, and what to ask for there."""

    scheme: str
    host: str
    port: int
    path: str
    #: Every address the host resolved to, each one permitted; tried in order.
    addresses: tuple[str, ...]


def parse_target(url: str) -> tuple[str, str, int, str]:
    """(scheme, ASCII host, port, path with query) of an acceptable URL, or a refusal."""
    if len(url) > MAX_URL_LENGTH:
        raise WebhookTargetRefused(f"the URL is longer than {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise WebhookTargetRefused(f"not a valid URL: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise WebhookTargetRefused("the URL must start with https:// or http://")
    if parts.username is not None or parts.password is not None:
        raise WebhookTargetRefused(
            "the URL must not carry credentials; the signature authenticates deliveries"
        )
    if parts.fragment:
        raise WebhookTargetRefused("the URL must not have a #fragment (it is never sent)")
    host = parts.hostname or ""
    if not host:
        raise WebhookTargetRefused("the URL names no host")
    if any(ch in host for ch in "\x00\r\n \t"):
        raise WebhookTargetRefused("the URL's host is not a host name")
    try:
        ascii_host = host if ":" in host else host.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise WebhookTargetRefused(f"the URL's host {host!r} is not a valid name") from exc
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if any(ch in path for ch in "\r\n"):
        raise WebhookTargetRefused("the URL's path must not contain line breaks")
    return scheme, ascii_host, port or (443 if scheme == "https" else 80), path


def check_target(
    url: str, networks: Sequence[Network], resolve: Resolver = system_resolver
) -> Target:
    """Resolve ``url``'s host and refuse it unless every address is public or allowed.

    Every address counts, not only the first: a name answering one public and one
    internal address would otherwise reach the internal one on a retry.
    """
    scheme, host, port, path = parse_target(url)
    try:
        literal: Address | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        resolved = [str(literal)]
    else:
        try:
            resolved = resolve(host, port)
        except (OSError, UnicodeError) as exc:
            raise WebhookTargetRefused(f"the host {host!r} does not resolve: {exc}") from exc
        if not resolved:
            raise WebhookTargetRefused(f"the host {host!r} does not resolve")
    for text in resolved:
        address = ipaddress.ip_address(text.split("%", 1)[0])  # drop an IPv6 zone
        why = refusal(address)
        if why is not None and not allowed(address, networks):
            named = host if literal is not None else f"{host} ({address})"
            raise WebhookTargetRefused(
                f"the target {named} is a {why} address; only public addresses are called "
                "unless REPOSYNC_WEBHOOK_ALLOWED_NETWORKS allows it"
            )
    return Target(scheme, host, port, path, tuple(resolved))


@dataclass(frozen=True, slots=True)
class Answer:
    """What one send came to: an HTTP status, or no answer (``error`` says why)."""

    status: int | None
    reason: str = ""
    error: str | None = None
    #: A 429's or 503's ``Retry-After`` in seconds, when it gave one.
    retry_after: float | None = None


class _Pinned:
    """Connects to the checked address, whatever a new DNS lookup would answer, and can
    be cut off from another thread (the watchdog) at any moment, connecting included."""

    def _pin(self, address: str) -> None:
        self._address = address
        self.expired = threading.Event()

    def _open(self, port: int, timeout: float | None) -> socket.socket:
        sock = socket.create_connection((self._address, port), timeout)
        if self.expired.is_set():  # the watchdog fired while connecting
            sock.close()
            raise TimeoutError("the exchange ran out of time while connecting")
        return sock


class _PinnedHTTPConnection(_Pinned, http.client.HTTPConnection):
    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._pin(address)

    def connect(self) -> None:
        self.sock = self._open(self.port, self.timeout)


class _PinnedHTTPSConnection(_Pinned, http.client.HTTPSConnection):
    """TLS to the checked address, the certificate verified for the URL's host name."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        self._tls = ssl.create_default_context()
        super().__init__(host, port, timeout=timeout, context=self._tls)
        self._pin(address)

    def connect(self) -> None:
        raw = self._open(self.port, self.timeout)
        self.sock = self._tls.wrap_socket(raw, server_hostname=self.host)


def post(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    timeout: float,
    networks: Sequence[Network],
    resolve: Resolver = system_resolver,
) -> Answer:
    """POST ``body`` to ``url`` once, after checking it again (``WebhookTargetRefused``).

    Network failures are an ``Answer`` without status (the caller retries them); the
    whole exchange is cut off after ``timeout`` seconds.
    """
    target = check_target(url, networks, resolve)
    last_error = "no address to connect to"
    for address in target.addresses:
        connection: _PinnedHTTPConnection | _PinnedHTTPSConnection
        if target.scheme == "https":
            connection = _PinnedHTTPSConnection(target.host, target.port, address, timeout)
        else:
            connection = _PinnedHTTPConnection(target.host, target.port, address, timeout)
        watchdog = threading.Timer(timeout, _cut, (connection,))
        watchdog.daemon = True
        watchdog.start()
        try:
            connection.request(
                "POST",
                target.path,
                body=body,
                headers={
                    "Content-Type": "application/json",
                    "User-Agent": USER_AGENT,
                    **headers,
                },
            )
            response = connection.getresponse()
            response.read(64 * 1024)  # let the target finish; its body is not kept
            return Answer(
                response.status,
                response.reason,
                retry_after=_retry_after(response.getheader("Retry-After")),
            )
        except (OSError, http.client.HTTPException) as exc:
            # The socket's own timeout is the same length as the watchdog's: whichever
            # fires first, the answer did not come in time (on a loaded machine the
            # socket's won, and the error said "TimeoutError: timed out" instead).
            cut = connection.expired.is_set() or isinstance(exc, TimeoutError)
            last_error = (
                f"no answer within {timeout:g}s" if cut else f"{type(exc).__name__}: {exc}"
            )[:500]
            if cut:
                break  # the time is spent: trying the next address would overrun it
        finally:
            watchdog.cancel()
            connection.close()
    return Answer(None, error=last_error)


def _cut(connection: _PinnedHTTPConnection | _PinnedHTTPSConnection) -> None:
    """The watchdog: end an exchange that overran its time (a blocked read returns)."""
    connection.expired.set()
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _retry_after(value: str | None) -> float | None:
    """Seconds of a ``Retry-After: <seconds>`` header (the date form is not trusted)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None
