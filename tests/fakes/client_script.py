"""A client library's script against a test server: calls made one after another, each
failure recorded and the script going on, so that one run counts every call a client
library (PyGithub, pyforgejo) finds failing, not only the first."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

#: How much of a failure's message a finding keeps.
MESSAGE_CHARS = 400


@dataclass
class Script:
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    @contextmanager
    def call(self, name: str) -> Iterator[None]:
        """One call: an exception or a failed ``pytest.raises`` inside is its finding."""
        try:
            yield
        except (Exception, pytest.fail.Exception) as exc:
            self.failed.append(f"{name}: {type(exc).__name__}: {str(exc)[:MESSAGE_CHARS]}")
        else:
            self.passed.append(name)

    @property
    def total(self) -> int:
        return len(self.passed) + len(self.failed)
