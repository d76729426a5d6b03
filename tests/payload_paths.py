"""Paths into a webhook payload, by the schema of what a reader reads of it.

Every forge's tolerant reader is tested the same way (GitHub's documented examples, the
Forgejo test server's deliveries): prune a payload to what the reader's schema reads, list
the paths it reads or requires, remove one, and change unread ones to any JSON value.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

#: Any JSON value, small: what a forge might put anywhere.
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def read_tree(schema: dict[str, Any], value: Any) -> Any:
    """``value`` pruned to the properties ``schema`` reads (recursively)."""
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        return {k: read_tree(properties[k], value[k]) for k in properties if k in value}
    if isinstance(value, list) and "items" in schema:
        return [read_tree(schema["items"], v) for v in value]
    return value


def read_paths(schema: dict[str, Any], value: Any, path: str = "$") -> set[str]:
    """The JSON paths of ``value`` that ``schema`` reads."""
    paths = {path}
    if isinstance(value, dict):
        for key, child in schema.get("properties", {}).items():
            if key in value:
                paths |= read_paths(child, value[key], f"{path}.{key}")
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            paths |= read_paths(schema["items"], item, f"{path}[{index}]")
    return paths


def required_paths(schema: dict[str, Any], value: Any, path: str = "$") -> list[str]:
    """The paths of ``value`` that ``schema`` requires."""
    found = []
    if isinstance(value, dict):
        for key, child in schema.get("properties", {}).items():
            if key in value:
                if key in schema.get("required", ()):
                    found.append(f"{path}.{key}")
                found.extend(required_paths(child, value[key], f"{path}.{key}"))
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            found.extend(required_paths(schema["items"], item, f"{path}[{index}]"))
    return found


def remove(payload: dict[str, Any], path: str) -> None:
    """Delete the property at ``path`` (``$.a.b`` or ``$.a[0].b``)."""
    parts = path[2:].replace("[", ".[").split(".")
    node: Any = payload
    for part in parts[:-1]:
        node = node[int(part[1:-1])] if part.startswith("[") else node[part]
    del node[parts[-1]]
