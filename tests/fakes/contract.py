"""Validate HTTP exchanges against GitHub's own OpenAPI description of the operations we use.

``tests/contracts/github-rest-subset.json`` is loaded once per process, adjusted where
said below (contract_spec.py). A request is matched to a described operation
by method and path and its parameters and JSON body are checked; a response must have a
status the operation describes and, when the description gives one, a body valid against
its schema. Headers the description does not list never fail validation.

Deliberate choices, each because the description cannot express what GitHub does:

* URLs of a test server are rewritten to ``https://api.github.com`` or
  ``https://uploads.github.com`` (the asset upload operation lives on the uploads host).
* ``{ref}`` of ``git/matching-refs`` is ``x-multi-segment`` (it contains ``/``), which
  openapi-core cannot match; its slashes are percent-encoded before matching.
* The upload operation describes only ``application/octet-stream`` although GitHub asks
  for the asset's own media type; any media type is validated as octet-stream there.
* ``nullable: true`` is not honoured by validators in two shapes the description uses:
  next to ``oneOf``/``anyOf`` without a ``type`` (six places, e.g. ``milestone`` of
  create/update issue, where ``null`` clears it) and next to an ``enum`` that lacks
  ``null`` (four places, e.g. ``issue.state_reason``, which GitHub returns as null for
  open issues). The loaded copy (never the file) adds the null explicitly.
* CROSS_CUTTING_STATUSES may come from any operation even where it is not listed
  (authentication, permission, not-found, validation, rate limits, redirects of renamed
  repositories, server errors); their bodies are checked against ``basic-error`` (or
  ``validation-error`` for 422). Any other undescribed status is a violation.
* 304 responses are skipped by the requests integration: they carry no body, and the
  description lists 304 for only a few operations although any conditional GET can get it.
  Requests are still checked. A response to a request that names no described operation
  is not checked either (the request already is the violation).
* Where GitHub's next description (``descriptions-next``, what githubkit is generated
  from) has corrected the stable one, the correction is applied (``CORRECTIONS``): a
  pull request listing's label ``description`` is nullable there, as GitHub answers a
  label without one (the stable copy says string; the full pull request's says nullable).
* Request bodies GitHub's description text allows and its schema left out
  (``DOCUMENTED_BODIES``): "Add labels to an issue" and "Set labels for an issue" take
  a bare JSON array of labels too ("You can also pass an ``array`` of labels directly",
  what PyGithub sends), and "Set labels" a single label name or an empty list ("You can
  pass an empty array to remove all labels"). The loaded copy adds those shapes.
* An empty ``label`` of "Upload a release asset" (``?name=x.bin&label=``, what PyGithub
  sends for an asset without a label) is accepted by GitHub, so it is checked as if
  absent (``EMPTY_ALLOWED``), which OpenAPI would otherwise refuse.
* "Get a release asset" with ``Accept: application/octet-stream`` "will either redirect
  the client to the location, or stream it directly": a 200 that is not JSON is the
  asset's bytes and only its status is checked (the description lists JSON alone).
* Git smart-HTTP URLs (``info/refs``, ``git-upload-pack``, ``git-receive-pack``) speak the
  Git protocol, not the REST API, and URLs outside both REST bases (for example a
  ``browser_download_url``) are not described either; the integration skips both.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, urlsplit

from openapi_core.datatypes import RequestParameters
from openapi_schema_validator import OAS30Validator
from werkzeug.datastructures import Headers, ImmutableMultiDict

from tests.fakes.contract_base import (
    MAX_LISTED_ERRORS,
    BodyError,
    ContractChecks,
    ContractViolation,
    RecordingValidator,
    RequestCheck,
    attach,
    body_error,
    pointer,
    validate_exchange,
)
from tests.fakes.contract_base import Headers as HeaderArg
from tests.fakes.contract_spec import Operation, load

__all__ = [
    "BodyError",
    "ContractViolation",
    "GitHubContract",
    "RecordingValidator",
    "RequestCheck",
    "attach",
    "validate_exchange",
]

API_ORIGIN = "https://api.github.com"
UPLOADS_ORIGIN = "https://uploads.github.com"
CROSS_CUTTING_STATUSES = frozenset({301, 307, 400, 401, 403, 404, 422, 429, 500, 502, 503})
GIT_SMART_HTTP = re.compile(r"/(info/refs|git-upload-pack|git-receive-pack)$")

#: What "Get a release asset" streams when asked for the bytes.
ASSET_BYTES = "repos/get-release-asset"
#: Query parameters GitHub accepts empty: (operation, parameter).
EMPTY_ALLOWED = (("repos/upload-release-asset", "label"),)
_VALIDATION_LOCK = threading.Lock()  # one compiled description is shared by all instances


@dataclass
class _OpenAPIRequest:
    host_url: str
    path: str
    method: str
    body: bytes | None
    content_type: str
    parameters: RequestParameters


@dataclass
class _OpenAPIResponse:
    status_code: int
    headers: Headers
    data: bytes | None
    content_type: str


@dataclass(frozen=True)
class _Target:
    origin: str
    path: str
    query: list[tuple[str, str]]
    operation: Operation | None
    problem: str | None


def _header_map(headers: HeaderArg) -> Headers:
    if headers is None:
        return Headers()
    items = headers.items() if isinstance(headers, Mapping) else headers
    return Headers([(str(k), str(v)) for k, v in items])


class GitHubContract(ContractChecks):
    """GitHub's description of our operations, with test-server URLs mapped onto GitHub's."""

    forge = "GitHub"

    def __init__(
        self,
        *,
        api_url: str = API_ORIGIN,
        uploads_url: str = UPLOADS_ORIGIN,
        cross_cutting_statuses: frozenset[int] = CROSS_CUTTING_STATUSES,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.uploads_url = uploads_url.rstrip("/")
        self.cross_cutting_statuses = cross_cutting_statuses
        self._spec = load()

    @property
    def operations(self) -> tuple[Operation, ...]:
        """Every operation the description holds."""
        return self._spec.operations

    # -- URL handling -------------------------------------------------------------------

    def is_rest_url(self, url: str) -> bool:
        """Whether ``url`` is under one of the REST bases (and not Git smart HTTP)."""
        return self._origin_of(url) is not None and not is_git_smart_http(url)

    def _origin_of(self, url: str) -> tuple[str, str] | None:
        for base, origin in (
            (self.api_url, API_ORIGIN),
            (self.uploads_url, UPLOADS_ORIGIN),
            (API_ORIGIN, API_ORIGIN),
            (UPLOADS_ORIGIN, UPLOADS_ORIGIN),
        ):
            if url == base or url.startswith(base + "/") or url.startswith(base + "?"):
                return origin, url[len(base) :]
        return None

    def operation_for(self, method: str, url: str) -> Operation | None:
        """The described operation that ``method url`` calls, if any."""
        return self._target(method, url).operation

    def documentation_url(self, method: str, url: str) -> str:
        """The page GitHub's error answers of ``method url`` link to: the operation's own,
        or the REST overview for a request no operation describes."""
        op = self.operation_for(method, url)
        return op.docs_url if op is not None and op.docs_url else "https://docs.github.com/rest"

    def describes(self, method: str, url: str) -> bool:
        """Whether ``method url`` is a described operation on the right host."""
        return self._target(method, url).problem is None

    def _target(self, method: str, url: str) -> _Target:
        mapped = self._origin_of(url)
        if mapped is None:
            return _Target(
                "",
                "",
                [],
                None,
                f"{url} is under neither the API base {self.api_url} "
                f"nor the uploads base {self.uploads_url}",
            )
        origin, rest = mapped
        parts = urlsplit(rest)
        path = parts.path or "/"
        query = parse_qsl(parts.query, keep_blank_values=True)
        on_path = [op for op in self._spec.operations if op.pattern.match(path)]
        if not on_path:
            return _Target(origin, path, query, None, f"no path of the contract matches {path}")
        same_method = [op for op in on_path if op.method == method.lower()]
        if not same_method:
            described = sorted({op.method.upper() for op in on_path})
            return _Target(
                origin,
                path,
                query,
                None,
                f"{method.upper()} is not described for {on_path[0].template} "
                f"(described: {', '.join(described)})",
            )
        op = same_method[0]
        if op.origin != origin:
            return _Target(
                origin, path, query, op, f"{op.label()} is served by {op.origin}, not {origin}"
            )
        return _Target(origin, path, query, op, None)

    def _openapi_request(
        self,
        target: _Target,
        method: str,
        headers: Headers,
        body: bytes | None,
    ) -> _OpenAPIRequest:
        op = target.operation
        assert op is not None
        path = target.path
        if op.multi_segment:
            match = op.pattern.match(path)
            assert match is not None
            for name in op.multi_segment:
                start, end = match.span(name)
                path = path[:start] + quote(match.group(name), safe="") + path[end:]
        content_type = headers.get("content-type", "")
        query = [
            (name, value)
            for name, value in target.query
            if value or (op.operation_id, name) not in EMPTY_ALLOWED
        ]
        if op.operation_id == "repos/upload-release-asset":
            content_type = "application/octet-stream"
            body = None  # raw asset bytes; nothing to check beyond the media type
        return _OpenAPIRequest(
            host_url=target.origin,
            path=path,
            method=method.lower(),
            body=body if body else None,
            content_type=content_type.lower(),
            parameters=RequestParameters(
                query=ImmutableMultiDict(query),
                header=headers,
                cookie=ImmutableMultiDict(),
            ),
        )

    # -- requests -----------------------------------------------------------------------

    def check_request(
        self, method: str, url: str, headers: HeaderArg = None, body: bytes | None = None
    ) -> RequestCheck:
        """Every way the request breaks the contract, and the body's schema errors."""
        target = self._target(method, url)
        if target.problem is not None:
            kind = (
                "server" if target.operation is not None else "url" if not target.path else "path"
            )
            return RequestCheck([(kind, target.problem)], [])
        request = self._openapi_request(target, method, _header_map(headers), body)
        with _VALIDATION_LOCK:
            errors = list(self._spec.openapi.request_validator.iter_errors(request))
        problems: list[tuple[str, str]] = []
        body_errors: list[BodyError] = []
        for error in errors:
            kind = "parameter" if "Parameter" in type(error).__name__ else "body"
            problems.append((kind, _explain(error)))
            if kind == "body":
                body_errors += _body_errors(error)
        return RequestCheck(problems, body_errors)

    # -- responses ----------------------------------------------------------------------

    def response_problems(
        self,
        method: str,
        url: str,
        status: int,
        headers: HeaderArg = None,
        body: bytes | None = None,
    ) -> list[tuple[str, str]]:
        """Every way the response breaks the contract, as ``(kind, message)`` pairs."""
        target = self._target(method, url)
        if target.problem is not None or target.operation is None:
            return [("path", target.problem or "no operation")]
        op = target.operation
        header_map = _header_map(headers)
        content_type = header_map.get("content-type", "").lower()
        if op.operation_id == ASSET_BYTES and status == 200 and "json" not in content_type:
            return []  # the asset's bytes, streamed (module docstring)
        if str(status) not in op.statuses and "default" not in op.statuses:
            if status in self.cross_cutting_statuses:
                return self._cross_cutting_problems(status, header_map, body)
            described = ", ".join(sorted(op.statuses))
            return [("status", f"status {status} is not described (described: {described})")]
        request = self._openapi_request(target, method, Headers(), None)
        response = _OpenAPIResponse(
            status_code=status,
            headers=header_map,
            data=body if body else None,
            content_type=header_map.get("content-type", "").lower(),
        )
        with _VALIDATION_LOCK:
            errors = list(self._spec.openapi.response_validator.iter_errors(request, response))
        return [("response", _explain(error)) for error in errors]

    def _cross_cutting_problems(
        self, status: int, headers: Headers, body: bytes | None
    ) -> list[tuple[str, str]]:
        if not body:
            return []
        if "json" not in headers.get("content-type", ""):
            return []  # e.g. an HTML error page from a proxy: nothing described to check
        try:
            data = json.loads(body)
        except ValueError as exc:
            return [("response", f"status {status}: body is not JSON ({exc})")]
        name = "validation-error" if status == 422 else "basic-error"
        schema = self._spec.raw["components"]["schemas"][name]
        errors = sorted(OAS30Validator(schema).iter_errors(data), key=lambda e: list(e.path))
        return [
            ("response", f"status {status} body is not a {name}: {pointer(e)}: {e.message}")
            for e in errors[:MAX_LISTED_ERRORS]
        ]


def _explain(error: BaseException) -> str:
    cause = error.__cause__
    schema_errors = getattr(cause, "schema_errors", None) or getattr(error, "schema_errors", None)
    name = type(error).__name__
    if schema_errors:
        if name == "InvalidRequestBody":
            head = "request body does not match its schema"
        elif name in ("InvalidData", "InvalidHeader"):
            head = f"{'body' if name == 'InvalidData' else 'header'} does not match its schema"
        else:
            head = str(error)
        listed = sorted(schema_errors, key=lambda e: list(map(str, e.absolute_path)))
        details = "; ".join(f"{pointer(e)}: {e.message}" for e in listed[:MAX_LISTED_ERRORS])
        more = len(listed) - MAX_LISTED_ERRORS
        return f"{head}: {details}" + (f" (and {more} more)" if more > 0 else "")
    text = str(error)
    if cause is not None and str(cause) not in text:
        text = f"{text}: {cause}"
    return text


def _body_errors(error: BaseException) -> list[BodyError]:
    schema_errors = getattr(error.__cause__, "schema_errors", None)
    if not schema_errors:
        return []
    return [
        body_error(
            e,
            lambda name: f'"{name}" wasn\'t supplied.',
            lambda where, e: f"For '{where or 'body'}', {e.message}.",
        )
        for e in schema_errors
    ]


def is_git_smart_http(url: str) -> bool:
    return bool(GIT_SMART_HTTP.search(urlsplit(url).path))
