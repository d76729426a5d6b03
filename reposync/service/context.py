"""What every service operation needs, built once per process and passed explicitly."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from reposync.config import Settings
from reposync.models.db import Database
from reposync.providers.base import EndpointSpec, Provider
from reposync.providers.registry import open_endpoint
from reposync.sync.vocabulary import Stage


@dataclass(frozen=True, slots=True)
class Step:
    """One stage execution to perform: the message a Celery task carries.

    ``stage is None`` resumes whatever stage the Run persisted (recovery);
    ``generation`` is the lease generation of the execution that dispatched the step.
    """

    run_id: int
    stage: Stage | None = None
    generation: int | None = None


class Dispatcher(Protocol):
    def dispatch(self, step: Step) -> None:
        """Hand a step to whoever executes steps (Celery, or the embedded loop)."""


class NoDispatch:
    """The embedded mode: the caller runs the returned steps itself."""

    def dispatch(self, step: Step) -> None:
        return None


@dataclass(slots=True)
class ServiceContext:
    settings: Settings
    db: Database
    dispatcher: Dispatcher = field(default_factory=NoDispatch)
    open_provider: Callable[[EndpointSpec], Provider] = open_endpoint
