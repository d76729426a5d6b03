"""A repository's LFS store through the Git LFS Batch API (git-lfs ``docs/api/batch.md``),
as every hosted forge serves it.

``POST <remote url>/info/lfs/objects/batch`` with ``application/vnd.git-lfs+json``,
authenticated as Git over HTTPS is (the forge's provider gives the ``Authorization``
value). The answer gives each object ``actions`` (``download``; or ``upload`` and
``verify``, none when the forge already has it) with an ``href``, the ``header`` to send
there and an ``expires_in``, or a per-object ``error``. Our credentials go only to the
Batch endpoint; an action's ``href`` gets only the headers the forge put in that action
(basic transfer adapter: ``docs/api/basic-transfers.md``). GitHub and Forgejo answer
alike; what differs (the forge's name in messages, how the header is made) is given.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, BinaryIO, cast

import requests

from reposync.errors import (
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
from reposync.sync.lfs import LfsPointer

MEDIA_TYPE = "application/vnd.git-lfs+json"
#: An action used this close to its expiry is asked for again first.
_EXPIRY_MARGIN = 30.0
_RECEIVED = "received_at"


class LfsBatchClient:
    """One repository's LFS endpoint (``<remote url>/info/lfs``) on ``forge``."""

    def __init__(
        self,
        session: requests.Session,
        remote_url: str,
        authorization: Callable[[], str],
        *,
        timeout: float,
        clock: Clock,
        forge: str,
    ) -> None:
        self.session = session
        self.endpoint = remote_url.rstrip("/") + "/info/lfs"
        self._authorization = authorization
        self.forge = forge
        self.timeout = timeout
        self.clock = clock

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
        data = self._post_batch(body)
        received = time.monotonic()
        by_oid: dict[str, dict[str, Any]] = {}
        for obj in data.get("objects") or []:
            if isinstance(obj, dict) and isinstance(obj.get("oid"), str):
                by_oid[obj["oid"]] = obj
        return {
            pointer: _answer(operation, pointer, by_oid.get(pointer.oid), received, self.forge)
            for pointer in pointers
        }

    def download(self, transfer: LfsTransfer) -> BinaryIO:
        action = self._fresh(transfer, LfsOperation.DOWNLOAD)["download"]
        try:
            response = self.session.get(
                action["href"],
                headers=dict(action.get("header") or {}),
                stream=True,
                timeout=self.timeout,
            )
        except (requests.Timeout, requests.ConnectionError) as exc:
            raise ProviderUnavailable(f"LFS download: no response ({type(exc).__name__})") from exc
        if response.status_code == 404:
            raise LfsObjectMissing(f"{self.forge} has no LFS object {transfer.pointer.oid}")
        if response.status_code != 200:
            raise ProviderUnavailable(
                f"LFS download of {transfer.pointer.oid} answered {response.status_code}"
            )
        response.raw.decode_content = True
        return cast(BinaryIO, response.raw)

    def upload(self, transfer: LfsTransfer, content: BinaryIO) -> None:
        actions = self._fresh(transfer, LfsOperation.UPLOAD)
        if "upload" not in actions:
            return  # it arrived meanwhile (an earlier, lost upload)
        upload = actions["upload"]
        pointer = transfer.pointer
        headers = {
            **dict(upload.get("header") or {}),
            "Content-Type": "application/octet-stream",
            "Content-Length": str(pointer.size),
        }
        response = self._send("PUT", upload["href"], headers=headers, data=content)
        if response.status_code == 422:
            raise LfsObjectCorrupt(
                f"{self.forge} refused LFS object {pointer.oid}: {_text(response)}"
            )
        if response.status_code not in (200, 201):
            raise ResultUnknown(
                f"LFS upload of {pointer.oid} answered {response.status_code}: {_text(response)}"
            )
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
                f"{self.forge} did not verify LFS object {pointer.oid}: {_text(response)}"
            )
        if response.status_code != 200:
            raise ResultUnknown(f"LFS verify of {pointer.oid} answered {response.status_code}")

    # -- internals ---------------------------------------------------------------------

    def _fresh(self, transfer: LfsTransfer, operation: LfsOperation) -> Mapping[str, Any]:
        """The transfer's actions, asked for again when they expire (or expired) soon."""
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
        if actions and (expires is None or time.monotonic() + _EXPIRY_MARGIN < received + expires):
            return actions
        (again,) = self.batch(operation, [transfer.pointer])
        if again.error is not None:
            raise LfsObjectError(again.error.message)
        return again.action

    def _post_batch(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The Batch request: not a write (nothing is stored), so retried on 5xx and
        connection faults like any read."""
        url = self.endpoint + "/objects/batch"
        delay = 0.5
        for attempt in range(4):
            try:
                response = self.session.post(
                    url,
                    json=body,
                    headers={
                        "Accept": MEDIA_TYPE,
                        "Content-Type": MEDIA_TYPE,
                        "Authorization": self._authorization(),
                    },
                    timeout=self.timeout,
                )
            except (requests.Timeout, requests.ConnectionError) as exc:
                if attempt == 3:
                    raise ProviderUnavailable(
                        f"{self.forge}'s LFS endpoint did not answer: {type(exc).__name__}"
                    ) from exc
            else:
                if response.status_code == 200:
                    data = response.json()
                    return data if isinstance(data, dict) else {}
                if response.status_code < 500 or attempt == 3:
                    _raise_for_batch(response, self.clock, self.forge)
            self.clock.sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

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
                method, url, headers=dict(headers), data=data, json=json_body, timeout=self.timeout
            )
        except (requests.Timeout, requests.ConnectionError) as exc:
            raise ResultUnknown(f"LFS {method}: no response ({type(exc).__name__})") from exc


def _answer(
    operation: LfsOperation,
    pointer: LfsPointer,
    obj: Mapping[str, Any] | None,
    received: float,
    forge: str,
) -> LfsTransfer:
    """What the forge's answer object says of one pointer."""
    if obj is None:
        return LfsTransfer(
            pointer, ItemError(LfsObjectError.code, f"{forge}'s batch answer left it out")
        )
    error = obj.get("error")
    actions = obj.get("actions") or {}
    if isinstance(error, dict):
        return LfsTransfer(pointer, _object_error(pointer, error, forge))
    if operation is LfsOperation.UPLOAD and "upload" not in actions:
        return LfsTransfer(pointer, present=True)  # the forge has it
    if operation is LfsOperation.DOWNLOAD and "download" not in actions:
        return LfsTransfer(
            pointer, ItemError(LfsObjectError.code, f"{forge} gave no download action")
        )
    return LfsTransfer(pointer, action={**actions, _RECEIVED: received})


def _object_error(pointer: LfsPointer, error: Mapping[str, Any], forge: str) -> ItemError:
    code, message = error.get("code"), str(error.get("message") or "")
    text = f"{forge}: LFS object {pointer.oid} ({pointer.size} bytes): {code} {message}".strip()
    if code in (404, 410):
        return ItemError(LfsObjectMissing.code, text)
    if code == 422 and "size" in message.lower():
        return ItemError(LfsObjectTooLarge.code, text)
    if code == 422 and "is not" in message and "bytes" in message:
        # Forgejo: the OID is stored with another size, so this pointer's size is false.
        return ItemError(LfsObjectCorrupt.code, text)
    return ItemError(LfsObjectError.code, text)


def _raise_for_batch(response: requests.Response, clock: Clock, forge: str) -> None:
    status, message = response.status_code, _text(response)
    if status == 429 or (status == 403 and "rate limit" in message.lower()):
        retry_after = response.headers.get("retry-after", "")
        wait = timedelta(seconds=int(retry_after) if retry_after.isdigit() else 60)
        raise RateLimited(f"{forge} LFS rate limit: {message}", retry_at=clock.now() + wait)
    if status in (401, 403, 404):
        raise PermissionDenied(f"{forge}'s LFS endpoint refused the request ({status}): {message}")
    if status in (507, 509):
        raise QuotaExceeded(f"{forge}'s LFS storage or bandwidth is used up ({status}): {message}")
    if status >= 500:
        raise ProviderUnavailable(f"{forge}'s LFS endpoint answered {status}: {message}")
    raise LfsObjectError(f"{forge}'s LFS endpoint refused the batch ({status}): {message}")


def _text(response: requests.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:200]
    return str(data.get("message", "")) if isinstance(data, dict) else ""
