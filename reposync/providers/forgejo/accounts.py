"""Whose an object is: the instance's accounts of the source's people, and acting as them.

The instance's settings map a source login to the instance's account of the same person
(``reposync/forge_instances.py``). Reads take the map backwards: what that account wrote
on the instance is the source login's, so an object written as the person reads back as
theirs, and one they wrote on the instance reads as theirs on the other side too. Writes
take it forwards, through Forgejo's ``Sudo``, only when the token is a site
administrator's (Forgejo refuses ``Sudo`` to anyone else): the object is then the
person's own on the instance, and its author needs no header (its times still do: the
API sets none).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class People:
    """An instance's account map, and whether its token may act as the accounts."""

    def __init__(self, accounts: Mapping[str, str], *, may_sudo: bool) -> None:
        self._forward = {source: target for source, target in accounts.items()}
        self._backward = {target.casefold(): source for source, target in accounts.items()}
        self.may_sudo = may_sudo
        #: Accounts Forgejo refused to act as here (no access to the repository): their
        #: objects are written by the token's account, with the author in a header.
        self._refused: set[str] = set()

    def refused(self, account: str) -> None:
        """Forgejo would not let ``account`` write here: stop acting as it."""
        self._refused.add(account)

    def login(self, user: Mapping[str, Any] | None) -> str:
        """The source login of an instance's user (JSON): mapped back, else its own."""
        name = str((user or {}).get("login") or "ghost")
        return self._backward.get(name.casefold(), name)

    def acting_as(self, author: object) -> str | None:
        """The account a write by ``author`` (a source login) is sent as, or ``None``:
        the token's own, with the author in a header."""
        if not self.may_sudo or not isinstance(author, str):
            return None
        account = self._forward.get(author)
        return None if account in self._refused else account


#: Nobody mapped, nobody acted as: what reads of an instance without a map use.
NOBODY = People({}, may_sudo=False)
