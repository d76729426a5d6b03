"""GitHub's description of the operations the tests use, loaded once and adjusted.

``tests/contracts/github-rest-subset.json`` is data, extracted from GitHub's own
description and never edited by hand (tests/contracts/README.md). What the tests load is
a copy adjusted where the description cannot say what GitHub does; each adjustment is one
of the deliberate choices listed in tests/fakes/contract.py's docstring.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openapi_core import OpenAPI

from tests.fakes.forge_server.routing import specificity, template_pattern

SPEC_PATH = Path(__file__).resolve().parents[1] / "contracts" / "github-rest-subset.json"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
#: Operations whose request bodies GitHub's description text documents beyond its schema.
DOCUMENTED_BODIES = ("issues/add-labels", "issues/set-labels")
#: Schemas GitHub's next description corrects: (component schema, path to a property) that
#: is nullable there.
CORRECTIONS = (
    ("pull-request-simple", ("properties", "labels", "items", "properties", "description")),
)


@dataclass(frozen=True)
class Operation:
    """One described operation, with what matching a request to it needs."""

    method: str
    template: str
    operation_id: str
    origin: str
    pattern: re.Pattern[str]
    multi_segment: tuple[str, ...]
    statuses: frozenset[str]
    #: The operation's page (``externalDocs.url``): what GitHub's errors link to.
    docs_url: str = ""

    def label(self) -> str:
        return f"{self.method.upper()} {self.template} [{self.operation_id}]"


@dataclass(frozen=True)
class Spec:
    openapi: OpenAPI
    raw: dict[str, Any]
    operations: tuple[Operation, ...]


@functools.cache
def load() -> Spec:
    """The adjusted description (openapi-core takes about two seconds to check and compile
    it, so once per process)."""
    raw = json.loads(SPEC_PATH.read_text())
    raw = _with_explicit_nulls(_with_documented_bodies(_with_corrections(raw)))
    return Spec(openapi=OpenAPI.from_dict(raw), raw=raw, operations=_operations(raw))


def _with_explicit_nulls(raw: dict[str, Any]) -> dict[str, Any]:
    """A copy in which ``nullable`` next to ``oneOf``/``anyOf`` really admits null."""
    raw = copy.deepcopy(raw)
    null_branch = {"type": "string", "nullable": True, "enum": [None]}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("nullable") is True and None not in node.get("enum", [None]):
                node["enum"] = [*node["enum"], None]
            if node.get("nullable") is True and "type" not in node:
                for key in ("oneOf", "anyOf"):
                    if key in node:
                        node[key] = [*node[key], null_branch]
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(raw)
    return raw


def _with_corrections(raw: dict[str, Any]) -> dict[str, Any]:
    """``CORRECTIONS`` applied (module docstring)."""
    for name, path in CORRECTIONS:
        node = raw["components"]["schemas"][name]
        for key in path:
            node = node[key]
        node["nullable"] = True
    return raw


def _with_documented_bodies(raw: dict[str, Any]) -> dict[str, Any]:
    """The label bodies GitHub's text documents (module docstring), added to the schemas:
    a bare array of what the object form's ``labels`` holds, and for "Set labels" also a
    single name and no ``minItems`` (an empty list clears)."""
    for item in raw["paths"].values():
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict) or op.get("operationId") not in DOCUMENTED_BODIES:
                continue
            schema = op["requestBody"]["content"]["application/json"]["schema"]
            setting = op["operationId"] == "issues/set-labels"
            bare = []
            for branch in schema["oneOf"]:
                labels = branch["properties"]["labels"]
                if setting:
                    labels.pop("minItems", None)
                bare.append({k: v for k, v in labels.items() if k != "description"})
            bare_array = {"type": "array", "items": {"anyOf": [b["items"] for b in bare]}}
            if not setting:
                bare_array["minItems"] = 1
            schema["oneOf"].append(bare_array)
            if setting:
                schema["oneOf"].append({"type": "string"})
                # ``{"labels": []}`` now fits both object forms: they are alternatives.
                schema["anyOf"] = schema.pop("oneOf")
    return raw


def _operations(raw: dict[str, Any]) -> tuple[Operation, ...]:
    default_origin = raw["servers"][0]["url"].rstrip("/")
    parameters = raw["components"]["parameters"]
    found = []
    for template, item in raw["paths"].items():
        for method in METHODS:
            if method not in item:
                continue
            op = item[method]
            multi = []
            for param in op.get("parameters", []):
                if "$ref" in param:
                    param = parameters[param["$ref"].rsplit("/", 1)[1]]
                if param.get("in") == "path" and param.get("x-multi-segment"):
                    multi.append(param["name"])
            servers = op.get("servers") or item.get("servers")
            found.append(
                Operation(
                    method=method,
                    template=template,
                    operation_id=op.get("operationId", "?"),
                    origin=servers[0]["url"].rstrip("/") if servers else default_origin,
                    pattern=template_pattern(template, multi),
                    multi_segment=tuple(multi),
                    statuses=frozenset(op["responses"]),
                    docs_url=str(op.get("externalDocs", {}).get("url", "")),
                )
            )
    found.sort(key=lambda op: specificity(op.template))
    return tuple(found)
