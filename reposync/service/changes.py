"""What a forge says changed, whichever forge said it: the normalized form of a webhook.

A GitHub delivery (``github_events``) and a local repository's hook (``intake``) both
become a ``Notification`` of ``RepositoryChange``s, and ``intake.receive`` is the one
function that acts on it. Nothing here is trusted to be complete: a change only asks for
a Run (which reads the source itself) or refreshes what a Binding knows of a side (its
locator, its visibility, a notice about access). Hints (refs, object types) are recorded
with the delivery; a Run does not narrow its inventory by them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class Outcome(StrEnum):
    """What became of a delivery (stored with it, answered to the forge)."""

    #: Recorded; its effects were applied (a Run requested, a locator refreshed, ...).
    ACCEPTED = "accepted"
    #: An event reposync does not act on: recorded, nothing else.
    IGNORED = "ignored"
    #: A ping: the hook works.
    PONG = "pong"
    #: Seen before (a redelivery, or two copies at once): nothing changed. Never stored.
    DUPLICATE = "duplicate"


@dataclass(frozen=True, slots=True)
class RefMove:
    """One ref's move as the forge reported it (``before``/``after`` None: created/deleted)."""

    ref: str
    before: str | None
    after: str | None


@dataclass(frozen=True, slots=True)
class AccessChange:
    """The forge's word on reposync's access to a repository: ``notice`` says what was
    lost (a GitHub App uninstalled, the repository archived); None says access is back."""

    notice: str | None


@dataclass(frozen=True, slots=True)
class RepositoryChange:
    """One repository's change in one notification."""

    provider: str
    #: The immutable id (GitHub's numeric id as a string; a local repository's UUID).
    repository_id: str
    #: The locator the forge gives it now (``owner/name``; a local path).
    full_name: str | None
    event: str
    action: str | None = None
    refs: tuple[RefMove, ...] = ()
    #: Object types the payload says changed (values of ``ObjectType``).
    object_types: tuple[str, ...] = ()
    #: When it happened by the forge's clock, where the payload says; orders renames and
    #: visibility changes that arrive out of order.
    occurred_at: datetime | None = None
    #: Synced content may have changed: the Bindings whose authority this is owe a Run.
    content_changed: bool = False
    #: The repository was renamed or transferred: Binding sides follow to this locator.
    new_locator: str | None = None
    #: The repository's visibility changed to this (``public``, ``private``, ``internal``).
    visibility: str | None = None
    access: AccessChange | None = None

    @property
    def hints(self) -> dict[str, object]:
        """What the delivery record keeps of the change besides its key."""
        hints: dict[str, object] = {}
        if self.refs:
            hints["refs"] = [[m.ref, m.before, m.after] for m in self.refs]
        if self.object_types:
            hints["object_types"] = list(self.object_types)
        if self.new_locator:
            hints["new_locator"] = self.new_locator
        if self.visibility:
            hints["visibility"] = self.visibility
        if self.access is not None:
            hints["access"] = self.access.notice or "restored"
        return hints


@dataclass(frozen=True, slots=True)
class Notification:
    """One delivery from a forge: its key, its event, and the changes it reports."""

    provider: str
    delivery_id: str
    event: str
    action: str | None
    outcome: Outcome
    changes: tuple[RepositoryChange, ...] = ()
    #: An access change of a whole GitHub App installation whose payload lists no
    #: repositories: (installation id, change). It applies to every Binding side of the
    #: provider when the installation is the one reposync is configured with.
    installation_access: tuple[str, AccessChange] | None = None
