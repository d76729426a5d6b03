"""A forge's whole REST API by name, so that what a test server does not model is said plainly.

A request no route of a test server serves is either an operation the forge has and the
server does not model, or a path the forge does not have either. The first must never pass
for a missing resource: it is answered 501 with the operation's method and path template
in the message ("GET /repos/{owner}/{repo}/actions/runs is not modelled by the GitHub
test server"), and the server records it, so ``assert_clean()`` fails the test that sent
it. The second is the forge's own 404.

Each server keeps a file listing every operation of its forge's descriptions, generated
from the same source as its contract subset (tests/contracts/README.md has the commands):
``github/github-operations.txt`` (api.github.com and GitHub Enterprise Server) and
``forgejo/forgejo-operations.txt`` (Forgejo's whole description).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from tests.fakes.forge_server.routing import specificity, template_pattern

FAKES = Path(__file__).resolve().parent
#: Path parameters whose values contain slashes (``contents/{path}``, ``git/refs/{ref}``).
MULTI_SEGMENT = frozenset({"path", "ref"})
#: The one operation GitHub serves on its uploads host.
GITHUB_UPLOADS = "POST /repos/{owner}/{repo}/releases/{release_id}/assets"


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    pattern: re.Pattern[str]

    def __str__(self) -> str:
        return f"{self.method} {self.template}"


@functools.cache
def operations(listing: str) -> tuple[Operation, ...]:
    """The operations ``listing`` (a path below tests/fakes/) names, literal segments
    first as any router matches them: /issues/comments is not /issues/{number}."""
    found = []
    for line in (FAKES / listing).read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        method, template = line.split(" ", 1)
        found.append(Operation(method, template, template_pattern(template, MULTI_SEGMENT)))
    found.sort(key=lambda op: specificity(op.template))
    return tuple(found)


def find(listing: str, method: str, path: str) -> Operation | None:
    """The operation of ``listing`` that ``method path`` (relative to the API's base)
    calls, if the forge has one."""
    for op in operations(listing):
        if op.method == method.upper() and op.pattern.match(path):
            return op
    return None


def github_operation(host: str, method: str, path: str) -> Operation | None:
    """The operation of GitHub's API that ``method path`` on ``host`` ("api" or
    "uploads", the path relative to that host's base) calls, if GitHub has one."""
    op = find("github/github-operations.txt", method, path)
    if op is None:
        return None
    return op if (str(op) == GITHUB_UPLOADS) == (host == "uploads") else None


def forgejo_operation(method: str, path: str) -> Operation | None:
    """The operation of Forgejo's API (below ``/api/v1``) that ``method path`` calls."""
    return find("forgejo/forgejo-operations.txt", method, path)
