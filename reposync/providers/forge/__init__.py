"""Forge semantics shared by the providers of hosted forges (GitHub, Forgejo/Gitea)."""
