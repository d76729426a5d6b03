"""A Git LFS store behind the Batch API (git-lfs ``docs/api/batch.md``), for any forge.

``POST <endpoint>/objects/batch`` with ``application/vnd.git-lfs+json``; the answer gives
each object ``actions`` (``download``; or ``upload`` and ``verify``, none when the store
already has it) with an ``href``, the ``header`` to send there and an ``expires_in``, or
a per-object ``error``. Transfers use the basic adapter (``docs/api/basic-transfers.md``):
an action's ``href`` gets only the headers the store put in that action, never the
credentials of the Batch request.

What differs between forges is how the Batch request is authenticated and where its
endpoint is, which ``LfsAccess`` says: GitHub's token as HTTP Basic, a plain Git remote's
credentials from git's own helpers, or what ``git-lfs-authenticate`` answered over SSH.
Whether a "not found" from the endpoint means "no access" (GitHub hides what a caller may
not see) or "this server serves no LFS" (a bare ``git http-backend``) is the forge's
word too (``missing_means``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, BinaryIO, Protocol, cast

import requests

from reposync.errors import (
    LfsNotServed,
    LfsObjectCorrupt,
    LfsObjectError,
    LfsObjectMissing,
    LfsObjectTooLarge,
    PermissionDenied,
    ProviderUnavailable,
    QuotaExceeded,
    RateLimited,
    ResultUnknown,
)
from reposync.providers.base import Clock, ItemError, LfsOperation, LfsTransfer
from reposync.providers.http import guarded_body
from reposync.sync.lfs import LfsPointer

MEDIA_TYPE = "application/vnd.git-lfs+json"
#: An action used this close to its expiry is asked for again first.
_EXPIRY_MARGIN = 30.0
_RECEIVED = "received_at"
#: Attempts of one Batch request (it stores nothing, so it is retried like a read).
_ATTEMPTS = 4


@dataclass(frozen=True, slots=True)
class BatchRequest:
    """Where one Batch request goes and the headers that authenticate it."""

    #: The LFS endpoint (``<remote>/info/lfs``); ``/objects/batch`` is appended.
    endpoint: str
    headers: Mapping[str, str]


class LfsAccess(Protocol):
    """How one store's Batch requests are authenticated (never its transfers')."""

    def request(self, operation: LfsOperation) -> BatchRequest:
        """The endpoint and headers of a Batch request for ``operation``."""

    def refused(self, request: BatchRequest) -> bool:
        """The endpoint answered 401 to ``request``: forget what it was sent and say
        whether other credentials are worth one more try."""

    def accepted(self, request: BatchRequest) -> None:
        """The endpoint took ``request``'s credentials (a helper may store them now)."""


class LfsBatchStore:
    """One repository's LFS store through its Batch endpoint.

    ``name`` is how messages call the store (``GitHub``, ``git:https://host/app.git``).
    ``missing_means``: what a 404 (or 405/501) from the endpoint says, ``"denied"``
    (``PermissionDenied`` for the whole request) or ``"not_served"`` (each object is
    answered ``lfs_not_served``: the refs needing them stay out, the others move).
    """

    def __init__(
        self,
        session: requests.Session,
        access: LfsAccess,
        *,
        name: str,
        timeout: float,
        clock: Clock,
        missing_means: str = "denied",
    ) -> None:
        self.session = session
        self.access = access
        self.name = name
        self.timeout = timeout
        self.clock = clock
        self.missing_means = missing_means

    def batch(self, operation: LfsOperation, pointers: Sequence[LfsPointer]) -> list[LfsTransfer]:
        """One answer per pointer, in order. An object is its OID and size, and the
        Batch API answers by OID: one OID asked with two sizes (a pointer's false size
        beside the true one) goes in two requests, so each answer reaches the pointer it
        was asked for."""
        answers: dict[LfsPointer, LfsTransfer] = {}
        pending = list(dict.fromkeys(pointers))
        while pending:
            by_oid: dict[str, LfsPointer] = {}
            for pointer in pending:
                by_oid.setdefault(pointer.oid, pointer)
            answers.update(self._batch_round(operation, list(by_oid.values())))
            pending = [p for p in pending if p not in answers]
        return [answers[pointer] for pointer in pointers]

    def _batch_round(
        self, operation: LfsOperation, pointers: Sequence[LfsPointer]
    ) -> dict[LfsPointer, LfsTransfer]:
        """One Batch request, of distinct OIDs."""
        body = {
            "operation": operation.value,
            "transfers": ["basic"],
            "objects": [{"oid": p.oid, "size": p.size} for p in pointers],
            "hash_algo": "sha256",
        }
        try:
            data = self._post_batch(operation, body)
        except LfsNotServed as error:
            return {pointer: LfsTransfer(pointer, ItemError.of(error)) for pointer in pointers}
        received = time.monotonic()
        by_oid: dict[str, dict[str, Any]] = {}
        for obj in data.get("objects") or []:
            if isinstance(obj, dict) and isinstance(obj.get("oid"), str):
                by_oid[obj["oid"]] = obj
        return {
            pointer: self._answer(operation, pointer, by_oid.get(pointer.oid), received)
            for pointer in pointers
        }

    def download(self, transfer: LfsTransfer) -> BinaryIO:
        """The object's bytes. An action the host refuses when used is asked for once
        more (``_action_refused``)."""
        actions = self._fresh(transfer, LfsOperation.DOWNLOAD)
        response = self._get(actions["download"])
        if self._action_refused(response):
            response.close()
            actions = self._fresh(transfer, LfsOperation.DOWNLOAD, renew=True)
            response = self._get(actions["download"])
        if response.status_code == 200:
            response.raw.decode_content = True
            return cast(BinaryIO, response.raw)
        with closing(response):
            if response.status_code == 404:
                raise LfsObjectMissing(f"{self.name} has no LFS object {transfer.pointer.oid}")
            raise self._transfer_refused(
                "download", transfer.pointer, response, ProviderUnavailable
            )

    def upload(self, transfer: LfsTransfer, content: BinaryIO) -> None:
        """Send the object, and verify it where the store asks to. An upload action the
        host refuses when used is asked for once more and the bytes sent again from where
        they started (``_action_refused``): the store took nothing, so nothing can land
        twice, and a Batch answer that the object is there now ends it."""
        start = content.tell() if content.seekable() else None
        actions = self._fresh(transfer, LfsOperation.UPLOAD)
        if "upload" not in actions:
            return  # it arrived meanwhile (an earlier, lost upload)
        pointer = transfer.pointer
        response = self._put(pointer, actions["upload"], content)
        if self._action_refused(response) and start is not None:
            actions = self._fresh(transfer, LfsOperation.UPLOAD, renew=True)
            if "upload" not in actions:
                return
            content.seek(start)
            response = self._put(pointer, actions["upload"], content)
        if response.status_code == 422:
            raise LfsObjectCorrupt(
                f"{self.name} refused LFS object {pointer.oid}: {_text(response)}"
            )
        if response.status_code not in (200, 201):
            # A server error may come after the store took the object: unknown, read back.
            raise self._transfer_refused("upload", pointer, response, ResultUnknown)
        verify = actions.get("verify")
        if verify is None:
            return
        response = self._send(
            "POST",
            verify["href"],
            headers={
                **dict(verify.get("header") or {}),
                "Accept": MEDIA_TYPE,
                "Content-Type": MEDIA_TYPE,
            },
            json_body={"oid": pointer.oid, "size": pointer.size},
        )
        if response.status_code in (404, 422):
            raise LfsObjectCorrupt(
                f"{self.name} did not verify LFS object {pointer.oid}: {_text(response)}"
            )
        if response.status_code != 200:
            raise ResultUnknown(f"LFS verify of {pointer.oid} answered {response.status_code}")

    # -- internals ---------------------------------------------------------------------

    def _get(self, action: Mapping[str, Any]) -> requests.Response:
        try:
            return self.session.get(
                action["href"],
                headers=dict(action.get("header") or {}),
                stream=True,
                timeout=self.timeout,
            )
        except (requests.Timeout, requests.ConnectionError) as exc:
            raise ProviderUnavailable(f"LFS download: no response ({type(exc).__name__})") from exc

    def _put(
        self, pointer: LfsPointer, action: Mapping[str, Any], content: BinaryIO
    ) -> requests.Response:
        headers = {
            **dict(action.get("header") or {}),
            "Content-Type": "application/octet-stream",
            "Content-Length": str(pointer.size),
        }
        return self._send("PUT", action["href"], headers=headers, data=content)

    def _action_refused(self, response: requests.Response) -> bool:
        """Whether a transfer was refused the credentials its action carried (401, or
        403 that is no rate limit): they may have stopped working before the
        ``expires_in`` the Batch answer gave (a token revoked or rotated, a signed
        storage URL past its time, which S3 answers 403), and the store took nothing. A
        new Batch answer, asked with reposync's own credentials, says whether they still
        open the store; git-lfs asks again for expired actions too."""
        return response.status_code in (401, 403) and self._limited(response) is None

    def _fresh(
        self, transfer: LfsTransfer, operation: LfsOperation, *, renew: bool = False
    ) -> Mapping[str, Any]:
        """The transfer's actions, asked for again when they expire (or expired) soon,
        or with ``renew`` when the host refused them."""
        actions = transfer.action
        received = float(actions.get(_RECEIVED, 0.0))
        expires = min(
            (
                float(a["expires_in"])
                for a in actions.values()
                if isinstance(a, dict) and isinstance(a.get("expires_in"), int | float)
            ),
            default=None,
        )
        fresh = expires is None or time.monotonic() + _EXPIRY_MARGIN < received + expires
        if actions and fresh and not renew:
            return actions
        (again,) = self.batch(operation, [transfer.pointer])
        if again.error is not None:
            raise LfsObjectError(again.error.message)
        return again.action

    def _post_batch(self, operation: LfsOperation, body: Mapping[str, Any]) -> dict[str, Any]:
        """The Batch request: not a write (nothing is stored), so retried on 5xx and
        connection faults like any read; a 401 is retried once with the credentials
        ``access`` finds then."""
        delay = 0.5
        retried_auth = False
        attempt = 0
        while True:
            attempt += 1
            request = self.access.request(operation)
            try:
                response = self.session.post(
                    request.endpoint.rstrip("/") + "/objects/batch",
                    json=body,
                    headers={
                        **dict(request.headers),
                        "Accept": MEDIA_TYPE,
                        "Content-Type": MEDIA_TYPE,
                    },
                    timeout=self.timeout,
                )
            except (requests.Timeout, requests.ConnectionError) as exc:
                if attempt >= _ATTEMPTS:
                    raise ProviderUnavailable(
                        f"{self.name}'s LFS endpoint did not answer: {type(exc).__name__}"
                    ) from exc
            else:
                if response.status_code == 200:
                    self.access.accepted(request)
                    data = response.json()
                    return data if isinstance(data, dict) else {}
                if response.status_code == 401 and not retried_auth:
                    retried_auth = True
                    if self.access.refused(request):
                        continue
                elif response.status_code == 401:
                    self.access.refused(request)
                if response.status_code < 500 or attempt >= _ATTEMPTS:
                    self._raise_for_batch(response)
            self.clock.sleep(delay)
            delay *= 2

    def _raise_for_batch(self, response: requests.Response) -> None:
        status, message = response.status_code, _text(response)
        limited = self._limited(response)
        if limited is not None:
            raise limited
        if status in (404, 405, 501) and self.missing_means == "not_served":
            raise LfsNotServed(f"{self.name} serves no Git LFS (its Batch API answered {status})")
        if status in (401, 403, 404):
            raise PermissionDenied(
                f"{self.name}'s LFS endpoint refused the request ({status}): {message}"
            )
        if status >= 500:
            raise ProviderUnavailable(f"{self.name}'s LFS endpoint answered {status}: {message}")
        raise LfsObjectError(f"{self.name}'s LFS endpoint refused the batch ({status}): {message}")

    def _limited(self, response: requests.Response) -> RateLimited | QuotaExceeded | None:
        """A rate limit (429, or GitHub's 403 saying so) or used-up storage or bandwidth
        (507, 509), from the Batch API or a transfer alike."""
        status, message = response.status_code, _text(response)
        if status == 429 or (status == 403 and "rate limit" in message.lower()):
            retry_after = response.headers.get("retry-after", "")
            wait = timedelta(seconds=int(retry_after) if retry_after.isdigit() else 60)
            return RateLimited(
                f"{self.name}'s LFS rate limit: {message}", retry_at=self.clock.now() + wait
            )
        if status in (507, 509):
            return QuotaExceeded(
                f"{self.name}'s LFS storage or bandwidth is used up ({status}): {message}"
            )
        return None

    def _transfer_refused(
        self,
        what: str,
        pointer: LfsPointer,
        response: requests.Response,
        otherwise: type[ResultUnknown | ProviderUnavailable],
    ) -> Exception:
        """What a transfer answered otherwise than done means. A refusal before the
        store did anything (its credentials, after one renewal; a limit) is said as such:
        refused credentials fail at once, as the Batch API's do, instead of an outcome
        "unknown" that read-back finds absent and the stage retries with the same
        credentials. Anything else is ``otherwise``."""
        status, message = response.status_code, _text(response)
        limited = self._limited(response)
        if limited is not None:
            return limited
        if status in (401, 403):
            return PermissionDenied(
                f"{self.name} refused the {what} of LFS object {pointer.oid} ({status}): {message}"
            )
        return otherwise(f"LFS {what} of {pointer.oid} answered {status}: {message}")

    def _send(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        data: BinaryIO | None = None,
        json_body: Any = None,
    ) -> requests.Response:
        """A transfer request: sent once; a lost answer is ``ResultUnknown`` (the caller
        asks the Batch API whether the object landed, never re-sends blindly)."""
        try:
            return self.session.request(
                method,
                url,
                headers=dict(headers),
                data=guarded_body(data, headers),
                json=json_body,
                timeout=self.timeout,
            )
        except (requests.Timeout, requests.ConnectionError) as exc:
            raise ResultUnknown(f"LFS {method}: no response ({type(exc).__name__})") from exc

    def _answer(
        self,
        operation: LfsOperation,
        pointer: LfsPointer,
        obj: Mapping[str, Any] | None,
        received: float,
    ) -> LfsTransfer:
        """What the store's answer object says of one pointer."""
        if obj is None:
            return LfsTransfer(
                pointer, ItemError(LfsObjectError.code, f"{self.name}'s batch answer left it out")
            )
        error = obj.get("error")
        actions = obj.get("actions") or {}
        if isinstance(error, dict):
            return LfsTransfer(pointer, self._object_error(pointer, error))
        if operation is LfsOperation.UPLOAD and "upload" not in actions:
            return LfsTransfer(pointer, present=True)  # the store has it
        if operation is LfsOperation.DOWNLOAD and "download" not in actions:
            return LfsTransfer(
                pointer, ItemError(LfsObjectError.code, f"{self.name} gave no download action")
            )
        return LfsTransfer(pointer, action={**actions, _RECEIVED: received})

    def _object_error(self, pointer: LfsPointer, error: Mapping[str, Any]) -> ItemError:
        code, message = error.get("code"), str(error.get("message") or "")
        text = (
            f"{self.name}: LFS object {pointer.oid} ({pointer.size} bytes): {code} {message}"
        ).strip()
        if code in (404, 410):
            return ItemError(LfsObjectMissing.code, text)
        if code == 422 and "size" in message.lower():
            return ItemError(LfsObjectTooLarge.code, text)
        if code == 422 and "is not" in message and "bytes" in message:
            # Forgejo: the OID is stored with another size, so this pointer's is false.
            return ItemError(LfsObjectCorrupt.code, text)
        return ItemError(LfsObjectError.code, text)


def _text(response: requests.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:200]
    return str(data.get("message", "")) if isinstance(data, dict) else ""
