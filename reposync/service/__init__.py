"""Domain operations. The only package that writes Run, RunItem and Binding state.

The CLI, the API and the Celery tasks call these modules; from the top down (a module
imports only from lines below its own, checked by the import contract "Inside the
service" in ``pyproject.toml``):

* ``bindings`` (create a Binding for a pair, change it, confirm its visibility, forget
  it), ``embedded`` (``reposync sync`` in one process), ``handoff``, ``recovery``
  (stalled Runs, proving unknown writes), ``schedules`` (beat's tick), ``users`` (users,
  tokens, grants), ``confinement`` (where ``local:`` locators from the API may point);
* ``pipeline``: how a Run executes, stage by stage (``pipeline.stages``);
* ``runs``: create, enqueue, retry and cancel Runs (finalizing queues follow-ups);
  ``authorization``: what an entry point acting for a user checks before it calls an
  operation (operations take no user; reads take one and filter);
* ``queries``: the API's reads, and which Bindings a user may see;
* the pieces all of them share: ``context`` (``ServiceContext``, ``Step``), ``lookups``
  (a Binding or Run by id), ``events`` (a Run's event log), ``budgets`` (the write
  budget), ``cron`` (cron expressions) and ``unknown_outcomes`` (writes of unknown
  outcome block the Binding).
"""
