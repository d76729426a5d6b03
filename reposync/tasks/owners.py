"""The owner binding pass task: one pass of one owner binding per message.

Thin like every task: the service claims the pass, lists both owners, binds what is new
and keeps its report (``service/owners.py``). A duplicate message, or one that arrives
while another pass of the row runs, finds the claim taken and ends.
"""

from __future__ import annotations

import logging

from reposync.errors import OwnerBindingBusy, RecordNotFound
from reposync.lifecycle import Trigger
from reposync.service import owners
from reposync.tasks.app import app
from reposync.tasks.base import OWNER_PASS_TASK, context

log = logging.getLogger(__name__)


@app.task(name=OWNER_PASS_TASK)
def owner_pass(owner_binding_id: int, trigger: str = Trigger.SCHEDULE.value) -> None:
    try:
        owners.run_pass(context(), owner_binding_id, trigger=Trigger(trigger))
    except (OwnerBindingBusy, RecordNotFound) as exc:  # running already, or forgotten
        log.info("owner binding %s: no pass: %s", owner_binding_id, exc.message)
