"""What a forge says changed, whichever forge said it: the normalized form of a webhook.

A forge's delivery (read by its provider's ``WebhookReader``: GitHub's is
``providers/github/webhooks.py``) and a local repository's hook (``service/webhooks/intake.py``)
both become a ``Notification`` of ``RepositoryChange``s, and ``intake.receive`` is the one
function that acts on it. This is what a provider hands the service, so it lives where
providers may import it and names no forge. Nothing here is trusted to be complete: a
change only asks for a Run (which reads the source itself) or refreshes what a Binding
knows of a side (its locator, its visibility, a notice about access). Hints (refs, object
types) are recorded with the delivery; a Run does not narrow its inventory by them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from reposync.errors import WebhookMalformed


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
class ConnectionAccess:
    """An access change of every side opened through one set of credentials, told without
    naming its repositories (GitHub: an App installation suspended or uninstalled)."""

    #: The ``connection_id`` of the sides it concerns (``github:installation:<id>``).
    connection_id: str
    #: Whether the sides without a ``connection_id`` are concerned too: they are opened
    #: with the provider's configured credentials, and these are they.
    configured: bool
    access: AccessChange


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
    #: An access change of every side opened through one connection, whose delivery
    #: lists no repositories (a whole GitHub App installation).
    connection_access: ConnectionAccess | None = None


#: The widths of a delivery record's event and id (``models/incoming_webhook.py``).
MAX_EVENT = 64
MAX_DELIVERY_ID = 100


@dataclass(frozen=True, slots=True)
class Delivery:
    """What a delivery's headers say before its body is read: its event, and the id a
    redelivery keeps (the service's deduplication key, with the provider)."""

    event: str
    delivery_id: str

    @classmethod
    def from_headers(
        cls, event: str | None, delivery_id: str | None, *, event_header: str, id_header: str
    ) -> Delivery:
        """Both values, each present and short enough to be recorded; ``WebhookMalformed``
        naming the forge's own headers otherwise."""
        if not event or not delivery_id:
            raise WebhookMalformed(f"the delivery has no {event_header} or {id_header} header")
        if len(delivery_id) > MAX_DELIVERY_ID or len(event) > MAX_EVENT:
            raise WebhookMalformed(f"the {event_header} or {id_header} header is too long")
        return cls(event, delivery_id)
