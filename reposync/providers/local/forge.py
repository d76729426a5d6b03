"""Forge objects of a local repository, stored beside its Git data.

A ``local:PATH`` repository is a bare Git repository; everything a forge adds on top of
Git (labels, milestones, issues, pull requests, reviews, releases and their assets,
reactions) lives in ``<git_dir>/reposync/``: one SQLite database, ``forge.db``
(``store``), and the release asset bytes, ``assets/<sha256>`` (``assets``).

Why SQLite: one batch of writes must be atomic (a worker killed mid-batch leaves every
object old or new, never torn) while each write of the batch may still be refused on its
own; ``writes`` explains how one transaction per batch gives both.

The parts, one module each:

* ``store``: the SQLite file, its schema, its one connection and the lock around it;
* ``objects``: what a row holds, the rules it obeys, and rows as canonical objects;
* ``reads``: the inventory index and objects in bulk (what the provider reads through);
* ``writes``: the engine's batches, one transaction each (what the provider writes through);
* ``mutations``: validated creates, updates and deletes of rows, which ``writes`` and
  ``authoring`` share;
* ``assets``: the content-addressed asset files and their garbage collection;
* ``authoring``: the Python API of tests, benchmarks and the demo, kept off the
  provider's path;
* ``hooks``: the hooks that report the repository's changes (an authoring edit runs
  ``notify_change``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from reposync.providers.local import hooks
from reposync.providers.local.assets import AssetStore
from reposync.providers.local.reads import ForgeReader
from reposync.providers.local.store import ForgeStore
from reposync.providers.local.writes import BatchWriter


class LocalForge:
    """The forge objects of one local repository, as the provider holds them.

    One store (one SQLite connection under a lock, so a provider may be shared by
    threads) read through ``reader``, written through ``writer`` (one transaction per
    batch), with its asset files in ``assets``. Editing by hand is ``ForgeAuthoring``'s
    business, over this same forge.
    """

    def __init__(
        self,
        git_dir: str | os.PathLike[str],
        *,
        busy_timeout: float = 10.0,
        standby_of: Callable[[], str | None] | None = None,
    ) -> None:
        self.store = ForgeStore(git_dir, busy_timeout=busy_timeout)
        self.assets = AssetStore(self.store)
        self.reader = ForgeReader(self.store)
        self.writer = BatchWriter(self.store, self.assets)
        #: Tells whether this forge is a Binding's standby (then only the sync may write):
        #: the authoring API refuses edits on a standby.
        self.standby_of = standby_of
        self._hooks: Path | None = None

    @property
    def root(self) -> Path:
        """``<git_dir>/reposync``: where the database and the asset files live."""
        return self.store.root

    def notify_change(self, object_types: Sequence[str]) -> None:
        """Report an edit of these object types through the repository's installed
        notify hook (``hooks``), if it has one. Only the authoring API calls it: what the
        sync writes is never reported back."""
        if self._hooks is None:
            self._hooks = hooks.hooks_dir(self.root.parent)
        hooks.notify(self._hooks, "forge", sorted(set(object_types)))

    def close(self) -> None:
        """Close the connection. Idempotent; the next call opens it again."""
        self.store.close()
