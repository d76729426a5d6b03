"""reposync: keep two Git forges in sync with full fidelity."""

__version__ = "0.1.0"
