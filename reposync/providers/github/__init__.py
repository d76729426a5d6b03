from reposync.providers.github.provider import GitHubProvider

__all__ = ["GitHubProvider"]
