"""The stages of a Run, in order, and what only they use.

``access`` → ``inventory`` (source, then target) → ``planning`` → ``applying`` (one
batch per step; ``appliers``, ``default_branch`` and ``applier_contract`` say how items
reach the target) → ``verifying`` → ``finalizing``. Shared by several stages:
``visibility`` (the more-public-standby rule), ``mapping`` (canonical objects to target
writes), ``links`` and ``link_states`` (ObjectLink writes and reads), ``asset_streams``.
Each stage takes a ``StageExecution`` and returns the next stage.
"""
