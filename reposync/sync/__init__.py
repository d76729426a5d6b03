"""The pure engine: canonical objects, hashing, planning, batching and reports.

No database, network, Celery or provider code may be imported here (import-linter
checks it); everything is plain data in, plain data out.
"""
