"""What reposync writes into a forge's Markdown bodies, and how it reads it back out.

A hosted forge's API (GitHub's, Forgejo's) cannot set an author or a timestamp, nor
store a pull request whose branch is gone. Such facts travel in the body:

* an **attribution header**: a hidden JSON comment with every field the API cannot set
  (exact, machine-read on read-back) and one visible line for humans;
* a **marker** at the end: the object's source identity, hidden, so a create whose
  response was lost is found again instead of created twice.

Reading strips both, so the canonical object read back equals the one written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_ATTRIBUTION = re.compile(
    r"\A<!-- reposync:attribution (?P<json>\{.*?\}) -->\n(?:> [^\n]*\n)?\n?", re.DOTALL
)
#: Exactly what ``compose`` appends: the body's own trailing newlines are the body's.
_MARKER = re.compile(r"\n\n<!-- reposync:marker (?P<marker>\S+) -->\Z")


@dataclass(frozen=True, slots=True)
class Parsed:
    body: str
    marker: str | None
    attribution: dict[str, Any] | None


def compose(
    body: str,
    *,
    marker: str | None,
    attribution: dict[str, Any] | None = None,
    source_label: str | None = None,
    headline: str | None = None,
    note: str | None = None,
) -> str:
    """``headline`` replaces the visible "Originally by" line (an object with no author of
    its own, such as a review request); ``note`` is appended to it: what the forge shows
    differently from the source (a state it cannot give, a reply it threads elsewhere)."""
    text = body
    if attribution:
        # "-->" cannot appear inside the comment: escape ">" (JSON reads it back).
        data = json.dumps(attribution, sort_keys=True, ensure_ascii=False).replace(">", "\\u003e")
        who = attribution.get("author") or "unknown"
        when = attribution.get("created_at") or attribution.get("submitted_at") or ""
        where = f" in {source_label}" if source_label else ""
        line = headline or f"Originally by **{who}**{' on ' + when if when else ''}{where}"
        if note:
            line = f"{line} ({note})"
        # One line only: the header's visible part is exactly one "> " line.
        line = " ".join(line.splitlines())
        text = f"<!-- reposync:attribution {data} -->\n> {line}\n\n{text}"
    if marker:
        text = f"{text}\n\n<!-- reposync:marker {marker} -->"
    return text


def parse(body: str | None) -> Parsed:
    text = body or ""
    attribution = None
    match = _ATTRIBUTION.match(text)
    if match:
        try:
            attribution = json.loads(match.group("json"))
            text = text[match.end() :]
        except ValueError:
            attribution = None  # not ours after all: leave the body as it is
    marker = None
    found = _MARKER.search(text)
    if found:
        marker = found.group("marker")
        text = text[: found.start()]
    return Parsed(text, marker, attribution)


def marker_of(body: str | None) -> str | None:
    found = _MARKER.search(body or "")
    return found.group("marker") if found else None
