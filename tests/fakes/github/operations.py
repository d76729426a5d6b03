"""GitHub's whole REST API by name, so that what the fake does not model is said plainly.

A request no route of the fake serves is either an operation GitHub has and the fake does
not model, or a path GitHub does not have either. The first must never pass for a missing
resource: it is answered 501 with the operation's method and path template in the message
("GET /repos/{owner}/{repo}/actions/runs is not modelled by the GitHub test server"), and
the fake records it, so ``assert_clean()`` fails the test that sent it. The second is
GitHub's own 404 (and a request the contract does not describe).

``github-operations.txt`` beside this module lists every operation of GitHub's
descriptions (api.github.com and GitHub Enterprise Server), generated from the same npm
package as the contract subset (tests/contracts/README.md has the command).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

OPERATIONS_FILE = Path(__file__).resolve().parent / "github-operations.txt"
#: Path parameters whose values contain slashes (``contents/{path}``, ``git/refs/{ref}``).
MULTI_SEGMENT = frozenset({"path", "ref"})
#: The one operation GitHub serves on its uploads host.
UPLOADS = "POST /repos/{owner}/{repo}/releases/{release_id}/assets"


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    pattern: re.Pattern[str]

    def __str__(self) -> str:
        return f"{self.method} {self.template}"


def _pattern(template: str) -> re.Pattern[str]:
    regex = re.escape(template)
    for name in re.findall(r"\{(\w+)\}", template):
        part = ".+" if name in MULTI_SEGMENT else "[^/]+"
        regex = regex.replace(re.escape("{" + name + "}"), part, 1)
    return re.compile(f"^{regex}$")


@functools.cache
def _operations() -> tuple[Operation, ...]:
    found = []
    for line in OPERATIONS_FILE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        method, template = line.split(" ", 1)
        found.append(Operation(method, template, _pattern(template)))
    # Literal segments first, as any router: /issues/comments is not /issues/{number}.
    found.sort(key=lambda op: (op.template.count("{"), -len(op.template)))
    return tuple(found)


def github_operation(host: str, method: str, path: str) -> Operation | None:
    """The operation of GitHub's API that ``method path`` on ``host`` ("api" or
    "uploads", the path relative to that host's base) calls, if GitHub has one."""
    for op in _operations():
        if op.method == method.upper() and op.pattern.match(path):
            on_uploads = str(op) == UPLOADS
            return op if on_uploads == (host == "uploads") else None
    return None
