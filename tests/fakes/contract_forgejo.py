"""Validate HTTP exchanges against Forgejo's own Swagger 2.0 description of the operations
the Forgejo test server models (``tests/contracts/forgejo-api-subset.json``).

openapi-core reads OpenAPI 3 only, and a Swagger 2 document would have to be converted
first; the checks here are simpler and need no conversion: a request is matched to an
operation by method and path under the API base (``/api/v1``), its path and query
parameters are checked against their declared types and enums and its JSON body against
the body parameter's schema; a response must have a status the operation describes and a
body valid against that status's schema. Schemas are checked with jsonschema's draft-4
validator over the whole document, so ``#/definitions/...`` references resolve as they
are.

Deliberate choices, each because Swagger 2 cannot say what Forgejo does:

* Nulls (``NULLABLE``): Go's encoding/json writes a nil pointer, slice or map as ``null``
  and Swagger 2 has no ``nullable``; so a property that is an object (a ``$ref``), an
  array or a map admits null, and so do the date-times Forgejo keeps as pointers (an
  issue's ``closed_at`` and ``due_date``, a pull request's ``merged_at`` and
  ``merge_commit_sha``, a milestone's ``due_on`` and ``closed_at``). Any other null is a violation.
* Completeness: Forgejo's structs have no ``omitempty`` on the fields the description
  lists (modules/structs), so every property a response schema lists must be present:
  a missing one is a violation (the fake renders what Forgejo renders). Error bodies
  are exempt: some of Forgejo's refusals are a bare ``{"message"}`` written from a map
  (the ``Sudo`` refusal), although ``APIError`` lists ``url``.
* Statuses any operation may answer although its description lists only some
  (``CROSS_CUTTING_STATUSES``): 401 (no or a bad credential), 403 (a token's scopes,
  ``Sudo`` by a non-admin), 404, 422 (the request's binding) and 500. Their bodies are
  checked against ``APINotFound`` (404) or ``APIError`` (the others), Forgejo's shapes.
* Statuses one operation answers undescribed (``UNDESCRIBED_STATUSES``): creating an
  organization's repository answers 409 for a taken name, as creating the user's own
  does (both are ``CreateUserRepo``, routers/api/v1/repo/repo.go; only the latter's
  description lists 409). Their bodies are checked as a cross-cutting status's.
* ``{ref}`` of ``/git/refs/{ref}`` holds slashes (``heads/main``), as Forgejo's route
  ``/git/refs/*`` takes them; it is matched as one parameter.
* An error status the description lists without a body (404 of "is merged", 405 of
  "merge") still carries Forgejo's error JSON (``ctx.NotFound()``, ``ctx.Error``); it is
  checked as a cross-cutting status's body.
* A field the body's definition requires is refused empty too (``""``, ``0``, ``null``):
  Forgejo's binding ``Required`` refuses a Go zero value, so the fake answers 422 as
  Forgejo does, and a client sending one has broken the contract.
* Multipart bodies (the release attachment upload) are not parsed; the operation's
  declared ``consumes`` is checked instead.
* Git smart HTTP and LFS (``*.git/...``) and everything outside ``/api/v1`` are no REST
  operations and are not checked.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from jsonschema import Draft4Validator

from tests.fakes.contract_base import (
    MAX_LISTED_ERRORS,
    BodyError,
    ContractChecks,
    Headers,
    RequestCheck,
    body_error,
    header_value,
    pointer,
)
from tests.fakes.forge_server.routing import specificity, template_pattern

SPEC_PATH = Path(__file__).resolve().parents[1] / "contracts" / "forgejo-api-subset.json"
API_BASE = "/api/v1"
METHODS = ("get", "put", "post", "delete", "patch")
CROSS_CUTTING_STATUSES = frozenset({401, 403, 404, 422, 500})
#: Statuses an operation answers although its description does not list them.
UNDESCRIBED_STATUSES = {"createOrgRepo": frozenset({409})}
#: Date-times Forgejo's structs keep as pointers (null when unset): (definition, property).
NULLABLE_TIMES = (
    ("Issue", "closed_at"),
    ("Issue", "due_date"),
    ("PullRequest", "closed_at"),
    ("PullRequest", "due_date"),
    ("PullRequest", "merged_at"),
    ("PullRequest", "merge_commit_sha"),
    ("PullRequestMeta", "merged_at"),
    ("Milestone", "closed_at"),
    ("Milestone", "due_on"),
)
#: Path parameters that hold slashes (Forgejo routes ``/git/refs/*``).
MULTI_SEGMENT = frozenset({"ref"})
GIT_PATH = re.compile(r"\.git(/|$)")


@dataclass(frozen=True)
class SwaggerOperation:
    """One described operation, with what matching a request to it needs."""

    method: str
    template: str
    operation_id: str
    pattern: re.Pattern[str]
    parameters: tuple[dict[str, Any], ...]
    responses: Mapping[str, Any]
    consumes: tuple[str, ...]

    def label(self) -> str:
        return f"{self.method.upper()} {self.template} [{self.operation_id}]"


@dataclass(frozen=True)
class SwaggerSpec:
    raw: dict[str, Any]
    operations: tuple[SwaggerOperation, ...]


@functools.cache
def load() -> SwaggerSpec:
    """The adjusted description (nulls as Forgejo writes them), once per process."""
    raw = _with_nulls(json.loads(SPEC_PATH.read_text()))
    return SwaggerSpec(raw=raw, operations=_operations(raw))


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        return {"anyOf": [{"$ref": schema["$ref"]}, {"type": "null"}]}
    out = dict(schema)
    kind = out.get("type")
    if isinstance(kind, str):
        out["type"] = [kind, "null"]
    return out


def _with_nulls(raw: dict[str, Any]) -> dict[str, Any]:
    """``NULLABLE`` (module docstring) applied to a copy of the definitions."""
    raw = copy.deepcopy(raw)
    times = set(NULLABLE_TIMES)
    for name, definition in raw["definitions"].items():
        for prop, schema in definition.get("properties", {}).items():
            is_container = (
                "$ref" in schema
                or schema.get("type") == "array"
                or (schema.get("type") == "object" and "properties" not in schema)
            )
            if is_container or (name, prop) in times:
                definition["properties"][prop] = _nullable(schema)
    return raw


def _operations(raw: dict[str, Any]) -> tuple[SwaggerOperation, ...]:
    found = []
    default_consumes = tuple(raw.get("consumes", ()))
    for template, item in raw["paths"].items():
        shared = item.get("parameters", [])
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            found.append(
                SwaggerOperation(
                    method=method,
                    template=template,
                    operation_id=op.get("operationId", "?"),
                    pattern=template_pattern(template, MULTI_SEGMENT),
                    parameters=tuple(shared) + tuple(op.get("parameters", [])),
                    responses=op["responses"],
                    consumes=tuple(op.get("consumes", default_consumes)),
                )
            )
    found.sort(key=lambda op: specificity(op.template))
    return tuple(found)


class ForgejoContract(ContractChecks):
    """Forgejo's description of the modelled operations, on a test server's base URL."""

    forge = "Forgejo"

    def __init__(self, *, base_url: str = "https://forgejo.example") -> None:
        self.base_url = base_url.rstrip("/")
        self._spec = load()
        self._validators: dict[str, Draft4Validator] = {}

    @property
    def operations(self) -> tuple[SwaggerOperation, ...]:
        return self._spec.operations

    # -- matching -----------------------------------------------------------------------

    def _api_path(self, url: str) -> tuple[str, list[tuple[str, str]]] | None:
        """The path under ``/api/v1`` (still percent-encoded) and the query."""
        base = self.base_url + API_BASE
        if not (url == base or url.startswith(base + "/") or url.startswith(base + "?")):
            return None
        parts = urlsplit(url[len(base) :])
        return parts.path or "/", parse_qsl(parts.query, keep_blank_values=True)

    def is_rest_url(self, url: str) -> bool:
        """Whether ``url`` is under the API base (Git and LFS are not)."""
        found = self._api_path(url)
        return found is not None and not GIT_PATH.search(found[0])

    def _match(self, method: str, path: str) -> tuple[SwaggerOperation | None, str | None]:
        on_path = [op for op in self._spec.operations if op.pattern.match(path)]
        if not on_path:
            return None, f"no path of the contract matches {path}"
        for op in on_path:
            if op.method == method.lower():
                return op, None
        described = ", ".join(sorted({op.method.upper() for op in on_path}))
        return None, (
            f"{method.upper()} is not described for {on_path[0].template} (described: {described})"
        )

    def operation_for(self, method: str, url: str) -> SwaggerOperation | None:
        found = self._api_path(url)
        return self._match(method, found[0])[0] if found is not None else None

    def describes(self, method: str, url: str) -> bool:
        return self.operation_for(method, url) is not None

    def _validator(self, key: str, schema: dict[str, Any]) -> Draft4Validator:
        validator = self._validators.get(key)
        if validator is None:
            rooted = {**schema, "definitions": self._spec.raw["definitions"]}
            validator = Draft4Validator(rooted)
            self._validators[key] = validator
        return validator

    # -- requests -----------------------------------------------------------------------

    def check_request(
        self, method: str, url: str, headers: Headers = None, body: bytes | None = None
    ) -> RequestCheck:
        """Every way the request breaks the contract, and the body's schema errors."""
        found = self._api_path(url)
        if found is None:
            return RequestCheck([("url", f"{url} is not under {self.base_url}{API_BASE}")], [])
        path, query = found
        op, problem = self._match(method, path)
        if op is None:
            return RequestCheck([("path", problem or "no operation")], [])
        match = op.pattern.match(path)
        assert match is not None
        problems: list[tuple[str, str]] = []
        body_errors: list[BodyError] = []
        values = {k: unquote(v) for k, v in match.groupdict().items()}
        given = dict(query)
        content_type = header_value(headers, "content-type").split(";")[0].strip().lower()
        for param in op.parameters:
            where, name = param.get("in"), param.get("name", "")
            if where == "path":
                problems += self._scalar(param, values.get(name))
            elif where == "query":
                if name in given:
                    problems += self._scalar(param, given[name])
                elif param.get("required"):
                    problems.append(("parameter", f"query parameter {name} is required"))
            elif where == "body":
                errors = self._body(op, param, body, content_type)
                problems += [("body", e.message) for e in errors]
                body_errors += errors
        if body and op.consumes and content_type and content_type not in op.consumes:
            wanted = ", ".join(op.consumes)
            problems.append(("body", f"content type {content_type} is not one of {wanted}"))
        return RequestCheck(problems, body_errors)

    def _scalar(self, param: dict[str, Any], value: str | None) -> list[tuple[str, str]]:
        name = param.get("name", "")
        if value is None:
            return [("parameter", f"{name} is required")] if param.get("required") else []
        kind = param.get("type")
        if kind == "integer":
            try:
                number: Any = int(value)
            except ValueError:
                return [("parameter", f"{name}={value!r} is not an integer")]
        elif kind == "boolean":
            if value not in ("true", "false"):
                return [("parameter", f"{name}={value!r} is not a boolean")]
            number = value
        else:
            number = value
        enum = param.get("enum")
        if kind == "array":
            items = param.get("items", {}).get("enum")
            parts = [p for p in value.split(",") if p]
            bad = [p for p in parts if items and p not in items]
            return [("parameter", f"{name}: {p!r} is not one of {items}") for p in bad]
        if enum and number not in enum:
            return [("parameter", f"{name}={value!r} is not one of {enum}")]
        return []

    def _body(
        self, op: SwaggerOperation, param: dict[str, Any], body: bytes | None, content_type: str
    ) -> list[BodyError]:
        if not body or not body.strip():
            if param.get("required"):
                return [BodyError("", "missing_field", "the request body is required")]
            return []
        if content_type and "json" not in content_type:
            return [BodyError("", "invalid", f"a JSON body was expected, not {content_type}")]
        try:
            data = json.loads(body)
        except ValueError as exc:
            return [BodyError("", "invalid", f"the body is not JSON ({exc})")]
        validator = self._validator(f"{op.operation_id}:body", param["schema"])
        errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.path)))
        found = []
        required = self._resolve(param["schema"]).get("required", [])
        for name in required:  # the binding's Required refuses a zero value too
            if isinstance(data, dict) and name in data and data[name] in ("", 0, None, [], {}):
                found.append(BodyError(name, "missing_field", f"{name} is required"))
        return found + [
            body_error(
                e, lambda name: f"{name} is required", lambda _, e: f"{pointer(e)}: {e.message}"
            )
            for e in errors[:MAX_LISTED_ERRORS]
        ]

    # -- responses ----------------------------------------------------------------------

    def response_problems(
        self, method: str, url: str, status: int, headers: Headers = None, body: bytes | None = None
    ) -> list[tuple[str, str]]:
        """Every way the response breaks the contract, as ``(kind, message)`` pairs."""
        op = self.operation_for(method, url)
        if op is None:
            return [("path", f"{method} {url} is no described operation")]
        described = op.responses.get(str(status))
        if described is None:
            undescribed = UNDESCRIBED_STATUSES.get(op.operation_id, frozenset())
            if status not in CROSS_CUTTING_STATUSES | undescribed:
                listed = ", ".join(sorted(op.responses))
                return [("status", f"status {status} is not described (described: {listed})")]
            name = "notFound" if status == 404 else "error"
            described = {"$ref": f"#/responses/{name}"}
        if "$ref" in described:
            described = self._spec.raw["responses"][described["$ref"].rsplit("/", 1)[1]]
        schema = described.get("schema")
        content_type = header_value(headers, "content-type").lower()
        if schema is None and body and status >= 400:  # an error's JSON (module docstring)
            name = "notFound" if status == 404 else "error"
            schema = self._spec.raw["responses"][name]["schema"]
        if schema is None:
            if body:
                return [("response", f"status {status} describes no body, got {len(body)} bytes")]
            return []
        if not body:
            return [("response", f"status {status} describes a body, got none")]
        if "json" not in content_type:
            return [("response", f"status {status} body is {content_type or 'untyped'}, not JSON")]
        try:
            data = json.loads(body)
        except ValueError as exc:
            return [("response", f"status {status}: body is not JSON ({exc})")]
        key = f"{op.operation_id}:{status}"
        errors = sorted(
            self._validator(key, schema).iter_errors(data), key=lambda e: list(map(str, e.path))
        )
        problems = [("response", f"{pointer(e)}: {e.message}") for e in errors]
        if status < 400:  # some error paths write a bare {"message"} (module docstring)
            problems += [("response", m) for m in self._missing(schema, data, "$")]
        return problems[:MAX_LISTED_ERRORS]

    def _missing(self, schema: dict[str, Any], data: Any, where: str) -> list[str]:
        """Properties a schema lists that the data leaves out (module docstring)."""
        schema = self._resolve(schema)
        if isinstance(data, list) and schema.get("type") == "array":
            items = schema.get("items", {})
            return [m for i, v in enumerate(data) for m in self._missing(items, v, f"{where}[{i}]")]
        if not isinstance(data, dict) or "properties" not in schema:
            return []
        found = [f"{where}.{p} is missing" for p in schema["properties"] if p not in data]
        for prop, sub in schema["properties"].items():
            if isinstance(data.get(prop), dict | list):
                found += self._missing(sub, data[prop], f"{where}.{prop}")
        return found

    def _resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        for _ in range(8):
            if "$ref" in schema:
                schema = self._spec.raw["definitions"][schema["$ref"].rsplit("/", 1)[1]]
            elif "anyOf" in schema:
                schema = schema["anyOf"][0]
            else:
                break
        return schema

    def go_name(self, method: str, url: str, field: str) -> str:
        """The Go name of a body field (``x-go-name``), as Forgejo's binding names it in
        its 422 answers ("[Title]: Required")."""
        op = self.operation_for(method, url)
        for param in op.parameters if op is not None else ():
            if param.get("in") == "body":
                schema = self._resolve(param["schema"])
                prop = schema.get("properties", {}).get(field.split(".")[0], {})
                return str(prop.get("x-go-name", field[:1].upper() + field[1:]))
        return field

    def schema_problems(self, definition: str, data: Any) -> list[str]:
        """What breaks ``#/definitions/<definition>`` in ``data`` (webhook payloads are
        Forgejo's API structs: webhooks.py checks them with this)."""
        schema = {"$ref": f"#/definitions/{definition}"}
        errors = self._validator(f"definition:{definition}", schema).iter_errors(data)
        found = [f"{pointer(e)}: {e.message}" for e in errors]
        return found + self._missing(schema, data, "$")
