"""``git:URL``: a plain Git remote (refs, default branch, LFS), source and target."""

from reposync.providers.gitremote.provider import GitRemoteProvider

__all__ = ["GitRemoteProvider"]
