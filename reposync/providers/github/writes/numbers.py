"""Issue and pull request numbers on GitHub, kept equal to the source's.

GitHub gives every new issue or pull request the next free number. On an empty standby
reposync creates in number order and fills gaps with closed **placeholder** issues,
which a later create of that number takes over (an issue by editing the placeholder, a
pull request by converting it with ``issue``).

The next free number is counted once per batch and then kept up to date. Anything that
may have taken a number unseen (a lost response, a create refused midway) makes the
writer ``forget`` the count, so it is read again before the next allocation: a stale
count shifts every later number.
"""

from __future__ import annotations

from typing import Any

from reposync.errors import ObjectNotFound, ProviderUnavailable, ResultUnknown
from reposync.providers.forge.bodies import compose, parse
from reposync.providers.github.client import GitHubClient
from reposync.providers.github.reads import PLACEHOLDER_MARKER

PLACEHOLDER_TITLE = "reposync placeholder"


class NumberAllocator:
    """The next free number of one repository, and the placeholders that keep numbers."""

    def __init__(self, client: GitHubClient, repo: str) -> None:
        self.client = client
        self.repo = repo  # "owner/name"
        self._next_number: int | None = None

    def _path(self, suffix: str) -> str:
        return f"/repos/{self.repo}{suffix}"

    def forget(self) -> None:
        """Count afresh before the next allocation: a number may have been taken unseen."""
        self._next_number = None

    def highest(self) -> int:
        if self._next_number is None:
            newest = self.client.get(
                self._path("/issues"),
                {"state": "all", "sort": "created", "direction": "desc", "per_page": 1},
            )
            self._next_number = (newest[0]["number"] if newest else 0) + 1
        return self._next_number - 1

    def placeholder_at(self, number: int) -> bool:
        """Whether ``number`` is one of our placeholders, free to take over.

        Only a 404 means "no": any other failure propagates (retryably), since treating
        it as "no placeholder" would create a new issue under the next free number.
        """
        try:
            data = self.client.get(self._path(f"/issues/{number}"))
        except ObjectNotFound:
            return False
        return (parse(data.get("body")).marker or "").startswith(PLACEHOLDER_MARKER)

    def fill_gaps_before(self, number: int) -> None:
        """Closed placeholders up to ``number - 1``, so the next create gets ``number``."""
        while self.highest() + 1 < number:
            gap = self.highest() + 1
            try:
                created = self.client.write(
                    "POST",
                    self._path("/issues"),
                    json_body={
                        "title": PLACEHOLDER_TITLE,
                        "body": compose(
                            "Kept free for a number of the source repository.",
                            marker=f"{PLACEHOLDER_MARKER}{gap}",
                        ),
                    },
                )
                taken = int(created["number"])
            except ResultUnknown as unknown:
                # Count again: the placeholder is there (close it) or it is not, and then
                # the stage is tried again later (nothing of this item was sent).
                self.forget()
                if self.highest() < gap or not self.placeholder_at(gap):
                    raise ProviderUnavailable(
                        f"GitHub lost the response to the placeholder for #{gap} and it is "
                        "not there; trying again"
                    ) from unknown
                taken = gap
            self.client.write(
                "PATCH",
                self._path(f"/issues/{taken}"),
                json_body={"state": "closed", "state_reason": "not_planned"},
            )
            self._next_number = taken + 1

    def slot(self, number: int | None) -> int | None:
        """The placeholder to take over for ``number``, after filling any gap before it."""
        if number is None:
            return None
        if number > self.highest():
            self.fill_gaps_before(number)
            return None
        return number if self.placeholder_at(number) else None

    def created(self, number: int) -> None:
        """A create took ``number``: the next one is free."""
        self._next_number = max(self._next_number or 0, number + 1)

    def take_or_create(self, wanted: int | None, fields: dict[str, Any]) -> int:
        """An issue with ``fields`` under number ``wanted`` (its placeholder, taken over
        and reopened) or, without one, under the next free number."""
        slot = self.slot(wanted)
        if slot is not None:
            self.client.write(
                "PATCH", self._path(f"/issues/{slot}"), json_body={**fields, "state": "open"}
            )
            return slot
        created = self.client.write("POST", self._path("/issues"), json_body=fields)
        self.created(created["number"])
        return int(created["number"])
