"""Credentials for HTTP requests git itself does not make (the LFS Batch API), from git's
own credential helpers: ``git credential fill``, then ``approve`` once the server took
them or ``reject`` when it refused them (gitcredentials(7)).

Whatever helper the service's user configured (``credential.helper`` in its
``~/.gitconfig``: ``store``, ``cache``, a keyring's) answers exactly as it answers git's
own fetches and pushes. The secret travels on the helper's standard input and output
only: never in an argument list, a log line, an exception's message or the database.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from reposync.git.process import run_git


@dataclass(frozen=True, slots=True)
class Credential:
    """What a helper answered. ``repr`` hides the password."""

    username: str
    password: str = field(repr=False)
    #: The description it was asked with (protocol, host, ...), which approve and
    #: reject must repeat.
    asked: Mapping[str, str] = field(default_factory=dict, repr=False)

    def description(self) -> str:
        lines = {**self.asked, "username": self.username, "password": self.password}
        return "".join(f"{key}={value}\n" for key, value in lines.items()) + "\n"


def fill(url: str, env: Mapping[str, str] | None = None) -> Credential | None:
    """The credential git's helpers hold for ``url`` (None: they hold none).

    Asked by URL, as git asks: for HTTP it keeps only protocol, host and user (and the
    path when ``credential.useHttpPath`` says so). No prompt: the environment of every
    git child forbids terminal prompts, so a helper-less setup answers nothing.
    """
    asked = {"url": url}
    result = run_git(
        ["git", "credential", "fill"],
        env=env,
        check=False,
        input_text=_text(asked),
    )
    if result.returncode != 0:
        return None
    answer = _parse(result.stdout)
    username, password = answer.get("username"), answer.get("password")
    if not username or password is None:
        return None
    kept = {k: v for k, v in answer.items() if k not in ("username", "password")}
    return Credential(username, password, kept or asked)


def approve(credential: Credential, env: Mapping[str, str] | None = None) -> None:
    """Tell the helpers the server accepted ``credential`` (a caching helper keeps it)."""
    run_git(
        ["git", "credential", "approve"],
        env=env,
        check=False,
        input_text=credential.description(),
    )


def reject(credential: Credential, env: Mapping[str, str] | None = None) -> None:
    """Tell the helpers the server refused ``credential`` (they forget it)."""
    run_git(
        ["git", "credential", "reject"],
        env=env,
        check=False,
        input_text=credential.description(),
    )


def _text(attributes: Mapping[str, str]) -> str:
    return "".join(f"{key}={value}\n" for key, value in attributes.items()) + "\n"


def _parse(text: str) -> dict[str, str]:
    answer: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key:
            answer[key] = value
    return answer
