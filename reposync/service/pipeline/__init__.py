"""How a Run executes: one stage at a time, each under the Binding's lease.

* ``runner``: claim the lease, run the persisted stage, hand over the next step (Celery
  tasks and the embedded loop both call it).
* ``execution``: ``StageExecution``, what a stage works with: the lease, the Run, the
  opened providers, and every write fenced by the lease.
* ``leases``: claim, heartbeat, release; the lease fence on every state write.
* ``stages``: the stages themselves and the modules only they use.

Nothing here imports the domain operations of ``reposync.service`` above it (bindings,
handoff, recovery, ...); they import the pipeline.
"""
