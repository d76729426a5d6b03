"""GitHub's issues endpoints as the number allocator's ``NumberSpace`` (``forge.numbers``
holds the rules: placeholders, gaps, counting afresh)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reposync.providers.github.client import GitHubClient


class GitHubNumbers:
    """One repository's issue numbers through GitHub's REST API."""

    def __init__(self, client: GitHubClient, repo: str) -> None:
        self.client = client
        self.repo = repo  # "owner/name"

    def _path(self, suffix: str) -> str:
        return f"/repos/{self.repo}{suffix}"

    def highest(self) -> int:
        """The newest issue's number: GitHub numbers in creation order."""
        newest = self.client.get(
            self._path("/issues"),
            {"state": "all", "sort": "created", "direction": "desc", "per_page": 1},
        )
        return int(newest[0]["number"]) if newest else 0

    def body_at(self, number: int) -> str | None:
        body = self.client.get(self._path(f"/issues/{number}")).get("body")
        return None if body is None else str(body)

    def create_placeholder(self, title: str, body: str) -> int:
        created = self.client.write(
            "POST", self._path("/issues"), json_body={"title": title, "body": body}
        )
        return int(created["number"])

    def close_placeholder(self, number: int) -> None:
        self.client.write(
            "PATCH",
            self._path(f"/issues/{number}"),
            json_body={"state": "closed", "state_reason": "not_planned"},
        )

    def reopen_as(self, number: int, fields: Mapping[str, Any]) -> None:
        self.client.write(
            "PATCH", self._path(f"/issues/{number}"), json_body={**fields, "state": "open"}
        )

    def create_issue(self, fields: Mapping[str, Any]) -> int:
        created = self.client.write("POST", self._path("/issues"), json_body=dict(fields))
        return int(created["number"])
