"""Forgejo's issues endpoints as the number allocator's ``NumberSpace`` (``forge.numbers``
holds the rules: placeholders, gaps, counting afresh).

Forgejo gives issues and pull requests the next number of one per-repository counter; a
deleted one's number is not given again. A placeholder is created closed in one request
(``closed``), so keeping a number free costs one write.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reposync.providers.forgejo.client import ForgejoClient


class ForgejoNumbers:
    """One repository's issue numbers through Forgejo's REST API."""

    def __init__(self, client: ForgejoClient, repo: str) -> None:
        self.client = client
        self.repo = repo  # "owner/name"
        #: Placeholders this batch created closed (their close is then nothing to do).
        self._closed: set[int] = set()

    def _path(self, suffix: str) -> str:
        return f"/repos/{self.repo}{suffix}"

    def highest(self) -> int:
        """The newest issue's or pull request's number (Forgejo numbers in creation order)."""
        newest = self.client.get(
            self._path("/issues"), {"state": "all", "sort": "latest", "limit": 1}
        )
        return int(newest[0]["number"]) if newest else 0

    def body_at(self, number: int) -> str | None:
        body = self.client.get(self._path(f"/issues/{number}")).get("body")
        return None if body is None else str(body)

    def create_placeholder(self, title: str, body: str) -> int:
        created = self.client.write(
            "POST", self._path("/issues"), json_body={"title": title, "body": body, "closed": True}
        )
        taken = int(created["number"])
        if created.get("state") == "closed":
            self._closed.add(taken)
        return taken

    def close_placeholder(self, number: int) -> None:
        if number in self._closed:
            return  # created closed
        self.client.write("PATCH", self._path(f"/issues/{number}"), json_body={"state": "closed"})

    def reopen_as(self, number: int, fields: Mapping[str, Any]) -> None:
        """Take the placeholder over: its fields, its labels (their own request: Forgejo's
        issue edit takes none), and the state the write wants (open unless ``closed``)."""
        wanted = dict(fields)
        labels = wanted.pop("labels", None) or []
        closed = bool(wanted.pop("closed", False))
        wanted["state"] = "closed" if closed else "open"
        self.client.write("PATCH", self._path(f"/issues/{number}"), json_body=wanted)
        if labels:
            self.client.write(
                "PUT", self._path(f"/issues/{number}/labels"), json_body={"labels": labels}
            )
        self._closed.discard(number)

    def create_issue(self, fields: Mapping[str, Any], *, sudo: str | None = None) -> int:
        created = self.client.write(
            "POST", self._path("/issues"), json_body=dict(fields), sudo=sudo
        )
        return int(created["number"])
