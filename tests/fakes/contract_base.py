"""What every forge's contract harness shares: violations, their recording, and hooking a
client's HTTP exchanges to a contract.

A forge's contract (``contract.py``: GitHub's OpenAPI 3 description;
``contract_forgejo.py``: Forgejo's Swagger 2 description) answers ``check_request`` and
``response_problems`` in its own way; what a violation says, how a test server or a
client's session records one, and which exchanges are checked at all are the same for
both, so they live here once.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import requests

Headers = Mapping[str, str] | Iterable[tuple[str, str]] | None
MAX_LISTED_ERRORS = 8


class ContractViolation(AssertionError):
    """An exchange that the forge's description does not allow."""

    def __init__(self, message: str, what: str = "") -> None:
        super().__init__(message)
        self.what = what  # "request" or "response <status>"

    @property
    def is_request(self) -> bool:
        return self.what == "request"


@dataclass(frozen=True)
class BodyError:
    """One schema error of a JSON request body (what the forge answers 422 for)."""

    field: str  # dotted path of the field ("" for the body itself)
    code: str  # "missing_field" or "invalid"
    message: str


@dataclass(frozen=True)
class RequestCheck:
    problems: list[tuple[str, str]]
    body_errors: list[BodyError]


def header_value(headers: Headers, name: str) -> str:
    """The first ``name`` header's value ("" when absent), whatever shape ``headers`` has."""
    if headers is None:
        return ""
    items = headers.items() if isinstance(headers, Mapping) else headers
    wanted = name.lower()
    for key, value in items:
        if str(key).lower() == wanted:
            return str(value)
    return ""


class Operation(Protocol):
    """What a violation's label needs of a described operation."""

    @property
    def operation_id(self) -> str: ...


class ContractChecks:
    """A forge's contract: raising, listing and wording its violations, over what each
    forge's contract answers in its own way (the checks of a request and of a response,
    the operation a URL calls, which URLs are its REST API's)."""

    forge = ""
    #: ``(url)``: whether it is under the REST API (not Git, not LFS).
    is_rest_url: Callable[[str], bool]
    #: ``(method, url)``: whether a described operation answers it.
    describes: Callable[[str, str], bool]
    #: ``(method, url)``: the described operation it calls, if any.
    operation_for: Callable[[str, str], Operation | None]
    #: ``(method, url, headers, body)``: every way a request breaks the contract.
    check_request: Callable[[str, str, Headers, bytes | None], RequestCheck]
    #: ``(method, url, status, headers, body)``: every way a response breaks it.
    response_problems: Callable[[str, str, int, Headers, bytes | None], list[tuple[str, str]]]

    def request_problems(
        self, method: str, url: str, headers: Headers = None, body: bytes | None = None
    ) -> list[tuple[str, str]]:
        """Every way the request breaks the contract, as ``(kind, message)`` pairs.

        Kinds: ``url``, ``path``, ``server``, ``parameter``, ``body``.
        """
        return self.check_request(method, url, headers, body).problems

    def validate_request(
        self, method: str, url: str, headers: Headers = None, body: bytes | None = None
    ) -> None:
        """Raise ContractViolation unless the request is one the description allows."""
        problems = self.request_problems(method, url, headers, body)
        if problems:
            raise self.violation(method, url, "request", problems)

    def validate_response(
        self, method: str, url: str, status: int, headers: Headers = None, body: bytes | None = None
    ) -> None:
        """Raise ContractViolation unless the description allows this response."""
        problems = self.response_problems(method, url, status, headers, body)
        if problems:
            raise self.violation(method, url, f"response {status}", problems)

    def violation(
        self, method: str, url: str, what: str, problems: list[tuple[str, str]]
    ) -> ContractViolation:
        """A violation with the same message validate_request/validate_response raise."""
        op = self.operation_for(method, url)
        label = f" [{op.operation_id}]" if op else ""
        return ContractViolation(
            violation_message(self.forge, method, url, what, label, problems), what
        )


def violation_message(
    forge: str, method: str, url: str, what: str, label: str, problems: list[tuple[str, str]]
) -> str:
    """The one wording of a violation: ``METHOD url [operation]: what breaks <forge>'s
    description:`` and a line per problem."""
    lines = [f"{method.upper()} {url}{label}: {what} breaks {forge}'s description:"]
    lines += [f"  - {message}" for _, message in problems]
    return "\n".join(lines)


def body_error(
    error: Any, missing: Callable[[str], str], invalid: Callable[[str, Any], str]
) -> BodyError:
    """A jsonschema error of a request body as the forge says it: a required field left
    out (``missing(name)``, the name dotted), or anything else (``invalid(where, error)``)."""
    where = ".".join(str(p) for p in error.absolute_path)
    left_out = re.match(r"'(.+)' is a required property", error.message)
    if error.validator == "required" and left_out:
        name = f"{where}.{left_out.group(1)}" if where else left_out.group(1)
        return BodyError(name, "missing_field", missing(name))
    return BodyError(where, "invalid", invalid(where, error))


def pointer(error: Any) -> str:
    """Where a jsonschema error is, as ``$.a.b[0]``."""
    out = "$"
    for part in error.absolute_path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


@dataclass
class RecordingValidator:
    """Collects violations instead of raising them (thread-safe)."""

    contract: ContractChecks
    violations: list[ContractViolation] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def _record(self, check: Callable[[], None]) -> ContractViolation | None:
        try:
            check()
        except ContractViolation as violation:
            with self._lock:
                self.violations.append(violation)
            return violation
        return None

    def validate_request(
        self, method: str, url: str, headers: Headers = None, body: bytes | None = None
    ) -> ContractViolation | None:
        return self._record(lambda: self.contract.validate_request(method, url, headers, body))

    def validate_response(
        self, method: str, url: str, status: int, headers: Headers = None, body: bytes | None = None
    ) -> ContractViolation | None:
        return self._record(
            lambda: self.contract.validate_response(method, url, status, headers, body)
        )

    def messages(self) -> list[str]:
        with self._lock:
            return [str(v) for v in self.violations]

    def assert_clean(self) -> None:
        messages = self.messages()
        assert not messages, "contract violations:\n" + "\n".join(messages)


def request_body(body: Any) -> bytes | None:
    """A sent request's body as bytes, when it can be read again."""
    if body is None or isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return None  # a file or generator: already streamed, nothing to re-read


def check_exchange(
    recorder: RecordingValidator,
    method: str,
    url: str,
    request_headers: Headers,
    sent: bytes | None,
    status: int,
    response_headers: Mapping[str, str],
    content: Callable[[], bytes],
) -> None:
    """Check one request a client sent and the answer it got: a 304 has no body to check,
    and a request to no described operation has no described answer."""
    if not recorder.contract.is_rest_url(url):
        return
    recorder.validate_request(method, url, request_headers, sent)
    if status == 304 or not recorder.contract.describes(method, url):
        return
    content_type = response_headers.get("content-type", "")
    body = content() if "json" in content_type or not content_type else None
    recorder.validate_response(method, url, status, response_headers, body)


def validate_exchange(recorder: RecordingValidator, response: requests.Response) -> None:
    """Check one exchange of a requests session (see ``check_exchange``)."""
    request = response.request
    check_exchange(
        recorder,
        request.method or "GET",
        request.url or "",
        request.headers,
        request_body(request.body),
        response.status_code,
        response.headers,
        lambda: response.content,
    )


def attach(
    session: requests.Session, recorder: RecordingValidator
) -> Callable[..., requests.Response]:
    """Validate every request ``session`` sends and every response it receives.

    Returns the hook, so a test can remove it from ``session.hooks["response"]``.
    """

    def hook(response: requests.Response, *args: Any, **kwargs: Any) -> requests.Response:
        validate_exchange(recorder, response)
        return response

    session.hooks.setdefault("response", []).append(hook)
    return hook
