"""Adapters, one per forge, behind the contract in ``providers.base``."""
