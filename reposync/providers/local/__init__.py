"""The local forge: bare Git repositories on this machine (``local:PATH``)."""

from reposync.providers.local.forge import LocalForge
from reposync.providers.local.provider import LocalProvider

__all__ = ["LocalForge", "LocalProvider"]
