"""Forge objects through each provider, end to end (local, GitHub, Forgejo)."""
