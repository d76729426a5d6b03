"""The check every external write of a stage runs under: its lease, and a cancel.

A stage sets it (``guarded``) around the writes it starts; whatever performs them asks
it (``check_guard``) at the points where stopping leaves nothing half-done: before each
git child and while it runs (``git.process``), before each write of a forge's API batch
(``providers.forge.batch``) and again right before its request leaves
(``providers.http.send_once``), before each LFS upload, and before every read of an
upload's body (``providers.http.GuardedBody``: a release asset or an LFS object stops
mid-stream, unfinished). A raised check stops the writes there; what was written is
read back, never assumed.

It is a context variable in a leaf module, so the git transport and the providers obey
it without importing the service that sets it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_guard: ContextVar[Callable[[], None] | None] = ContextVar("reposync_write_guard", default=None)


def current_guard() -> Callable[[], None] | None:
    """The check of the innermost ``guarded`` context (None outside any)."""
    return _guard.get()


def check_guard() -> None:
    """Ask the innermost ``guarded`` check, if any: raises when writing must stop."""
    guard = _guard.get()
    if guard is not None:
        guard()


@contextmanager
def guarded(check: Callable[[], None]) -> Iterator[None]:
    """Run every write started in this context under ``check`` (``Lease.check``, or a
    write's ``Lease.check_write`` that also stops for a cancelled Run); the innermost
    context's.

    For a git child, ``check`` is called before it starts and every
    ``git.process.GUARD_INTERVAL`` seconds while it runs; when it raises, the child and
    all its descendants are killed and the error propagates. A worker frozen mid-push
    notices the moment it is continued that its lease ran out, and ends its
    ``receive-pack`` instead of letting it finish (a race it can lose:
    ``reposync.git.locks`` is what keeps a takeover from writing under the same locks).
    For a forge's API batch it is called before each write: a batch of hundreds of
    requests stops at the next one, not at its end.
    """
    token = _guard.set(check)
    try:
        yield
    finally:
        _guard.reset(token)
