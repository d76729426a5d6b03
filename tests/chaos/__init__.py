"""Seeded chaos: the distributed mode under faults, with its promises counted.

Real PostgreSQL and Redis (started here, so they can be killed), ``reposync worker``
processes, ``reposync beat`` and ``reposync api``; a generated Git repository with a
forge of hundreds of objects; rounds of source mutations, each synced by a Run that
workers are SIGKILLed, SIGSTOPped, the broker and the database crashed under, and
task messages delivered twice. After every round the target must equal the source,
with nothing lost, duplicated or written twice, and a follow-up Run must write nothing.

``.venv/bin/python -m tests.chaos --rounds N --seed S`` runs a soak (``--scale``,
``--max-faults``; ``--faults KIND@WINDOW,...`` aims every round at chosen faults);
``test_chaos.py`` runs the CI-sized configuration, ``test_checks.py`` the checks alone.
"""
