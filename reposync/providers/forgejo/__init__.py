"""Forgejo and Gitea instances: ``forgejo:HOST[:PORT][/PATH]/OWNER/NAME`` (and ``gitea:``)."""

from reposync.providers.forgejo.provider import ForgejoProvider, GiteaProvider

__all__ = ["ForgejoProvider", "GiteaProvider"]
