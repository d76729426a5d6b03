"""The stages of a Run, in order, and what only they use.

``access`` → ``inventory`` (source, then target) → ``planning`` → ``applying`` (one
batch per step; ``appliers`` picks one per type: forge objects there, Git refs and
wikis in ``ref_applier``, the default branch in ``default_branch``; ``applier_contract``
holds the shapes they share; ``lfs_objects`` moves LFS objects before their refs) →
``verifying`` → ``finalizing``. Shared by several stages: ``visibility`` (the
more-public-standby rule), ``mapping`` (canonical objects to target writes), ``links``
and ``link_states`` (ObjectLink writes and reads), ``asset_streams``. Each stage takes a
``StageExecution`` and returns the next stage.
"""
