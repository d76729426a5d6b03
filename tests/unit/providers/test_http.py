"""A forge write request is asked of the stage's write guard last, right before it goes."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from reposync.errors import LeaseLost, RunCancelled
from reposync.guards import guarded
from reposync.providers.http import send_once


class _Recording(requests.Session):
    """Records what would have been sent instead of sending it."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, str]] = []

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> Any:
        self.sent.append((str(method), str(url)))
        response = requests.Response()
        response.status_code = 201
        return response


def _send(session: _Recording) -> requests.Response:
    return send_once(
        session, "POST", "https://forge.test/repos/a/b/issues", path="/repos/a/b/issues", timeout=5
    )


@pytest.mark.parametrize("stop", [LeaseLost("generation 3 lost"), RunCancelled("run 7 cancelled")])
def test_a_write_whose_guard_refuses_is_never_sent(stop: Exception) -> None:
    """A lost lease or a cancel raised by the guard: the request does not leave."""
    session = _Recording()

    def refuse() -> None:
        raise stop

    with guarded(refuse), pytest.raises(type(stop)):
        _send(session)
    assert session.sent == []


def test_a_write_the_guard_allows_is_sent_once() -> None:
    """The guard is asked once per request; allowed, the request goes out once."""
    session = _Recording()
    asked: list[int] = []
    with guarded(lambda: asked.append(len(session.sent))):
        assert _send(session).status_code == 201
    assert asked == [0]
    assert session.sent == [("POST", "https://forge.test/repos/a/b/issues")]
