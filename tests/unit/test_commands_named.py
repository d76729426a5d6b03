"""Every ``reposync`` command the product names to a person exists.

The sign-in page told people to run ``reposync users token``; the command is
``reposync user token``. Pages, messages, the README and the docs name commands as code
(`` `reposync …` `` or ``<code>reposync …``) and in shell blocks; each is walked through
the real argument parser, command and action, so a renamed command fails here first.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from reposync.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
#: A command named as code: after a backtick or ``<code>``.
NAMED = re.compile(r"(?:`|<code>)reposync((?: [a-z][a-z-]*)+)")
#: A command run in a fenced shell block of the README or the docs.
FENCE = re.compile(r"^```(?:sh|bash|console|shell)\n(.*?)^```", re.MULTILINE | re.DOTALL)
RUN = re.compile(r"^\s*(?:\$\s+)?reposync((?: [a-z][a-z-]*)+)", re.MULTILINE)


def _places() -> Iterator[Path]:
    yield ROOT / "README.md"
    yield from sorted((ROOT / "docs").rglob("*.md"))
    for suffix in ("*.py", "*.html"):
        yield from sorted((ROOT / "reposync").rglob(suffix))


def _named() -> list[tuple[str, str]]:
    """(place, the command's first two words) for each command named anywhere."""
    found: set[tuple[str, str]] = set()
    for path in _places():
        text = path.read_text(encoding="utf-8")
        spans = [m.group(1) for m in NAMED.finditer(text)]
        if path.suffix == ".md":
            for block in FENCE.finditer(text):
                spans += [m.group(1) for m in RUN.finditer(block.group(1))]
        place = str(path.relative_to(ROOT))
        found |= {(place, " ".join(span.split()[:2])) for span in spans}
    return sorted(found)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


@pytest.mark.parametrize(("place", "words"), _named())
def test_a_named_command_is_one_the_parser_knows(place, words):
    """The command (and its action, where the command has actions) parses."""
    command, *action = words.split()
    commands = _subcommands(build_parser())
    assert command in commands, f"{place} names `reposync {command}`, not a command"
    actions = _subcommands(commands[command])
    if actions and action:
        assert action[0] in actions, (
            f"{place} names `reposync {command} {action[0]}`; {command} has {sorted(actions)}"
        )


def test_the_places_name_commands():
    """The scan reads what it should: the README alone names a dozen commands."""
    readme = {words for place, words in _named() if place == "README.md"}
    assert len(readme) >= 12
