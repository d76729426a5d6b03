"""What every service operation needs, built once per process and passed explicitly."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from reposync.config import Settings
from reposync.git.progress import TransferProgress
from reposync.lifecycle import Stage, Trigger
from reposync.models.db import Database
from reposync.providers.base import EndpointSpec, Provider, ProviderEnvironment
from reposync.providers.registry import open_endpoint
from reposync.service.accounts.budgets import DatabaseWriteBudget


@dataclass(frozen=True, slots=True)
class Step:
    """One stage execution to perform: the message a Celery task carries.

    ``stage is None`` resumes whatever stage the Run persisted (recovery);
    ``generation`` is the lease generation of the execution that dispatched the step.
    ``background``: a scheduled Run's step, which may wait behind an operator's or a
    webhook's (the Celery dispatcher sends it at a lower priority).
    """

    run_id: int
    stage: Stage | None = None
    generation: int | None = None
    background: bool = field(default=False, repr=False)  # logs read the repr as before


class Dispatcher(Protocol):
    def dispatch(self, step: Step) -> None:
        """Hand a step to whoever executes steps (Celery, or the embedded loop)."""

    def dispatch_handoff(self, binding_id: int, run_id: int) -> None:
        """Hand a queued handoff (its forward Run) to a worker."""

    def dispatch_delivery(self, delivery_id: int, delay: float = 0.0) -> None:
        """Hand a committed webhook delivery to a worker, to be sent in ``delay`` seconds."""

    def dispatch_event_run(self, binding_id: int, countdown: float) -> None:
        """In ``countdown`` seconds, start the Run a webhook owes the Binding if it is due
        (``event_runs``); the recovery tick does it should this message be lost."""

    def dispatch_owner_pass(self, owner_binding_id: int, trigger: Trigger) -> None:
        """Hand a pass of the owner binding to a worker (``owners.run_pass``); a lost
        message loses that pass only, the next slot's runs anyway."""


class NoDispatch:
    """The embedded mode: the caller runs the returned steps itself."""

    def dispatch(self, step: Step) -> None:
        return None

    def dispatch_handoff(self, binding_id: int, run_id: int) -> None:
        return None

    def dispatch_delivery(self, delivery_id: int, delay: float = 0.0) -> None:
        return None  # pending rows wait for a worker's recovery tick

    def dispatch_event_run(self, binding_id: int, countdown: float) -> None:
        return None  # no worker: the next ``reposync sync`` of the pair syncs the change

    def dispatch_owner_pass(self, owner_binding_id: int, trigger: Trigger) -> None:
        return None  # no worker: ``reposync bind-all`` runs its pass itself


class ProviderPool:
    """Providers kept open across the steps of a process (the embedded loop).

    Opening a repository per step (a Git repository, a forge database) costs more than
    many a step's work; a pool hands the same connected provider to every step that asks
    for the same endpoint and closes them all once the caller is done.
    """

    def __init__(self, opener: Callable[[EndpointSpec], Provider] = open_endpoint) -> None:
        self._opener = opener
        self._open: dict[EndpointSpec, Provider] = {}

    def get(self, spec: EndpointSpec) -> Provider:
        if spec not in self._open:
            self._open[spec] = self._opener(spec)
        return self._open[spec]

    def close(self) -> None:
        for provider in self._open.values():
            provider.close()
        self._open.clear()


@dataclass(slots=True)
class ServiceContext:
    settings: Settings
    db: Database
    dispatcher: Dispatcher = field(default_factory=NoDispatch)
    #: How endpoints are opened; by default through the registry with ``environment``.
    open_provider: Callable[[EndpointSpec], Provider] | None = None
    #: When set, steps borrow providers from it instead of opening (and closing) their own.
    providers: ProviderPool | None = None
    environment: ProviderEnvironment | None = None
    #: Told (run id, progress) of every update of a push this process runs: the embedded
    #: command line's progress line, which cannot wait for the next step.
    on_transfer: Callable[[int, TransferProgress], None] | None = None

    def __post_init__(self) -> None:
        if self.environment is None:
            self.environment = ProviderEnvironment(
                settings=self.settings, budget=DatabaseWriteBudget(self.db)
            )
        if self.open_provider is None:
            environment = self.environment
            self.open_provider = lambda spec: open_endpoint(spec, environment)
