"""What ``git push --porcelain`` said, per ref: pushed, a conflict, or the target's refusal.

A push refused because the target's ref is not what the plan expected (a lease, a
create over an unrelated value) is a conflict: someone changed the standby, and a
person decides. A push the target refused for its own reasons (its disk is full, a hook
declined, its fsck refused an object, a quota) is not: nothing on the standby is in the
way, and once the target's trouble is fixed the next Run pushes the same refs. Telling
the two apart is reading what git prints (git 2.39's ``transport.c`` and
``builtin/receive-pack.c``):

* stdout, one line per ref: ``<flag>\\t<from>:<to>\\t<summary>``, between ``To <url>``
  and ``Done``. ``flag`` is ``!`` for a ref not updated (`` ``, ``+``, ``-``, ``*``,
  ``=``: updated, forced, deleted, created, already so). Its summary says who refused:

  - ``[rejected] (<reason>)``: the pushing git itself, from the values the target
    advertised: ``stale info`` (a lease that no longer holds), ``non-fast-forward``,
    ``fetch first``, ``already exists``, ``needs force``: a **conflict**. ``atomic push
    failed`` is a ref refused only with the others of its atomic push.
  - ``[remote rejected] (<reason>)``: the target's receive-pack, with its own reason:
    ``unpacker error`` (the objects were not stored: no space, a failed write, an
    object its fsck refused), ``pre-receive hook declined``, ``hook declined`` (an
    update hook), ``failed to update ref``, ``atomic transaction failed``, ``deletion
    prohibited``, a forge's own (GitHub: ``protected branch hook declined``): the
    **target's refusal**. ``atomic push failure`` is a ref refused only with the others.
    One case is a conflict after all: the ref moved between the target's advertisement
    and its update, which receive-pack reports as ``cannot lock ref '<ref>': is at <x>
    but expected <y>`` (or ``reference already exists``) among its own words; the other
    refs of that atomic push were refused only with it. Another is no refusal at all:
    ``cannot lock ref '<ref>': Unable to create '<ref>.lock': File exists``, the ref's
    lock held by another git process (or left by one killed moments ago): **locked**,
    pushed again later; the other refs of that atomic push again refused only with it.
  - ``[remote failure]``: receive-pack ended without reporting a status: the target's.

* stderr: the target's own words, ``remote: <line>`` (padded with spaces that clear a
  progress line) and ``error: remote unpack failed: <why>``. They are untrusted text: a
  refusal quotes at most ``MAX_REMOTE_LINES`` of them, each cut to
  ``MAX_REMOTE_LINE_CHARS`` printable characters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

#: How many of the target's lines a refusal quotes, and how long each may be.
MAX_REMOTE_LINES = 6
MAX_REMOTE_LINE_CHARS = 200

#: What git says of the refs of an atomic push refused only with the others: the pushing
#: git for refs it never sent, receive-pack for refs it did not apply.
ATOMIC_SIBLING = ("atomic push failed", "atomic push failure")

_REMOTE = re.compile(r"^remote: ?(.*)$")
_UNPACK = re.compile(r"^error: (remote unpack failed: .*)$")
#: receive-pack's words for a ref that was not at the value the update expected.
_MOVED = re.compile(
    r"cannot lock ref '(?P<ref>[^']+)': (?:is at \S+ but expected|reference already exists"
    r"|reference is missing but expected)"
)
#: receive-pack's words for a ref whose lock file another git process holds (or one
#: killed left behind): "Unable to create '<ref>.lock': File exists".
_LOCKED = re.compile(r"cannot lock ref '(?P<ref>[^']+)': Unable to create '[^']*': File exists")
#: Terminal escapes first, then what is not printable (controls, and the surrogates that
#: stand for bytes that were not UTF-8).
_UNPRINTABLE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[^\x20-\x7e\u00a0-\ud7ff\ue000-\uffff]")

#: The cause a refusal names first, by what the target's words or git's reason contain
#: (lower case), most specific first.
_CAUSES = (
    ("no space left on device", "the target's disk is full"),
    ("disk quota exceeded", "the target is over its disk quota"),
    ("quota", "the target is over a quota"),
    ("read-only file system", "the target's file system is read-only"),
    ("hook declined", "a hook on the target declined it"),
    ("fsck error", "the target's object check (fsck) refused an object"),
    ("unable to write", "the target could not write the objects"),
    ("failed to write", "the target could not write the objects"),
    ("unpacker error", "the target could not store the objects sent"),
)


class Refusal(StrEnum):
    """Why git did not update one ref."""

    #: The target's ref is not what the lease or ancestry expects: a person decides.
    CONFLICT = "conflict"
    #: The target refused for its own reasons; a later push may land.
    TARGET = "target"
    #: Refused only with the other refs of its atomic push: push it again without them.
    SIBLING = "sibling"
    #: Its lock on the target is another git process's: nothing is wrong, push it later.
    LOCKED = "locked"


@dataclass(slots=True)
class PushOutcome:
    """What one ``transport.push`` heard, per ref (``parse_porcelain``, ``refusal``)
    and per push. Read-back still decides the truth."""

    groups: int = 0
    accepted: set[str] = field(default_factory=set)
    #: Refs refused because the target's ref is not what the plan expected (ref -> git's
    #: summary): conflicts.
    rejected: dict[str, str] = field(default_factory=dict)
    #: Refs the target refused for its own reasons (a full disk, a declining hook, an
    #: object its fsck refused), ref -> the cause and the target's own words.
    refused: dict[str, str] = field(default_factory=dict)
    #: Refs not pushed because their own pack exceeds the target's limit (ref -> why).
    too_large: dict[str, str] = field(default_factory=dict)
    #: The gate answered no: no ref was pushed (every ref is still to push).
    gate_closed: bool = False
    #: Sizes of the pushes the target answered with a server error, each then pushed
    #: again in halves (its limit on ref updates per push may be below what we sent).
    refused_sizes: list[int] = field(default_factory=list)
    #: The most refs one push carried after such an answer (None: none came).
    refs_per_push: int | None = None
    #: What git said of the last of those answers.
    server_error: str = ""
    #: Refs refused because another git process holds their lock on the target (a
    #: concurrent push, or one killed moments ago), ref -> the target's words: nothing
    #: is wrong with them, a later push lands them.
    locked: dict[str, str] = field(default_factory=dict)
    #: Refs some push of this call carried past the target's credentials, whatever git
    #: then said: what may have landed. A push refused its credentials wrote nothing, so
    #: its refs are not among them (``GitCredentialsRefused.unsent_refs`` is the rest).
    sent: set[str] = field(default_factory=set)


def parse_porcelain(stdout: str) -> dict[str, tuple[bool, str]]:
    """``git push --porcelain`` lines -> {ref: (accepted, summary)}."""
    parsed: dict[str, tuple[bool, str]] = {}
    for line in stdout.splitlines():
        parts = line.split("\t")
        if len(parts) < 3 or len(parts[0]) != 1:
            continue
        flag, refspec, summary = parts[0], parts[1], "\t".join(parts[2:])
        name = refspec.rsplit(":", 1)[-1]
        parsed[name] = (flag != "!", summary)
    return parsed


def remote_words(stderr: str) -> list[str]:
    """The target's own lines on git's stderr, printable and bounded, in order."""
    words: list[str] = []
    for line in stderr.splitlines():
        match = _REMOTE.match(line) or _UNPACK.match(line)
        if match is None:
            continue
        text = _UNPRINTABLE.sub("", match[1]).strip()
        if text:
            words.append(text[:MAX_REMOTE_LINE_CHARS])
    return words


def refusal(name: str, summary: str, words: Sequence[str]) -> Refusal:
    """Why ``name`` was refused, from its porcelain summary and the target's words."""
    if any(sibling in summary for sibling in ATOMIC_SIBLING):
        return Refusal.SIBLING
    if summary.startswith("[rejected]"):
        return Refusal.CONFLICT
    moved = {m["ref"] for m in map(_MOVED.search, words) if m is not None}
    if name in moved:
        return Refusal.CONFLICT
    locked = {m["ref"] for m in map(_LOCKED.search, words) if m is not None}
    if name in locked:
        return Refusal.LOCKED
    if (moved or locked) and "atomic transaction failed" in summary:
        return Refusal.SIBLING  # the transaction failed for another ref's move or lock
    return Refusal.TARGET


def describe(summary: str, words: Sequence[str]) -> str:
    """A target's refusal for people: its cause first, then git's summary and the
    target's own words (bounded)."""
    quoted = list(words[:MAX_REMOTE_LINES])
    if len(words) > MAX_REMOTE_LINES:
        quoted.append(f"... {len(words) - MAX_REMOTE_LINES} more line(s)")
    haystack = " ".join([summary, *words]).lower()
    cause = next((c for needle, c in _CAUSES if needle in haystack), "the target refused it")
    said = f"; the target said: {' | '.join(quoted)}" if quoted else ""
    return f"{cause} ({summary}){said}"
