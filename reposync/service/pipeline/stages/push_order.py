"""The order a plan's ref creates and updates take, when they need more than one push.

Batches are cut at planning; a bootstrap of thousands of refs to a forge that takes 500
per push is several pushes, and their order decides whether history crosses the wire
once or slice by slice (``reposync.git.history``). Only a source on this machine can
say when its tips were committed before the applying stage: a remote source's objects
arrive batch by batch, so its refs keep the planner's order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from reposync.errors import GitTransportError, ProviderError
from reposync.git.history import commit_times
from reposync.service.pipeline.execution import StageExecution
from reposync.service.pipeline.stages.ref_applier import REF_REPOSITORIES
from reposync.sync.batching import newest_tips_first
from reposync.sync.planner import PlannedItem
from reposync.sync.vocabulary import Action

#: Actions that send history (a delete sends none).
_SENDING = frozenset({Action.CREATE, Action.UPDATE})


def history_ordered(
    ex: StageExecution, items: Sequence[PlannedItem], refs_per_push: int
) -> list[PlannedItem]:
    """``items`` with each large run of ref creates or updates newest tip first."""
    counts = Counter(i.object_type for i in items if i.action in _SENDING)
    times: dict[str, int] = {}
    for repository in REF_REPOSITORIES:
        if counts[repository.object_type] <= refs_per_push:
            continue
        try:
            remote = repository.remote(ex.source(), False)
            if remote.objects_dir is None:
                continue
            workspace = repository.workspace(ex, remote.objects_dir)
            workspace.prepare()
            times.update(
                commit_times(
                    workspace.path,
                    [
                        i.source_revision
                        for i in items
                        if i.object_type is repository.object_type and i.source_revision
                    ],
                    env=remote.env,
                )
            )
        except (ProviderError, GitTransportError):
            continue  # an order is an optimization: the applier meets the real problem
    return newest_tips_first(items, times) if times else list(items)
