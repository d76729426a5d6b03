"""The only module that names concrete providers: locator prefix -> provider class."""

from __future__ import annotations

import importlib
import re

from reposync.config import Settings
from reposync.errors import InvalidLocator, RecordNotFound
from reposync.providers.accounts import AccountConnector
from reposync.providers.base import (
    EndpointSpec,
    OwnerLister,
    OwnerSpec,
    Provider,
    ProviderEnvironment,
    WebhookReader,
    WebhookSource,
)

_LOCATOR = re.compile(r"^(?P<provider>[a-z][a-z0-9_-]*):(?P<location>.+)$", re.DOTALL)


#: Imported on first use: a local-only sync never pays for the GitHub client's imports
#: (requests, PyJWT, cryptography), a visible part of a no-change Run's wall time.
_PROVIDERS: dict[str, str] = {
    "local": "reposync.providers.local:LocalProvider",
    "github": "reposync.providers.github:GitHubProvider",
    "git": "reposync.providers.gitremote:GitRemoteProvider",
    "forgejo": "reposync.providers.forgejo:ForgejoProvider",
    "gitea": "reposync.providers.forgejo:GiteaProvider",
}


def provider_names() -> list[str]:
    return sorted(_PROVIDERS)


def provider_class(name: str) -> type[Provider]:
    try:
        module, _, attribute = _PROVIDERS[name].partition(":")
    except KeyError:
        raise InvalidLocator(
            f"unknown provider {name!r}; known providers: {', '.join(provider_names())}"
        ) from None
    cls: type[Provider] = getattr(importlib.import_module(module), attribute)
    return cls


def parse_locator(locator: str) -> EndpointSpec:
    """``local:/srv/app.git`` -> EndpointSpec(provider="local", locator="/srv/app.git")."""
    match = _LOCATOR.match(locator.strip())
    if match is None:
        raise InvalidLocator(
            f"{locator!r} is not a locator; expected PROVIDER:LOCATION "
            f"(providers: {', '.join(provider_names())})"
        )
    cls = provider_class(match["provider"])
    return EndpointSpec(provider=cls.name, locator=cls.normalize_locator(match["location"]))


def parse_owner(locator: str) -> OwnerSpec:
    """``github:acme`` -> OwnerSpec(provider="github", locator="acme"): an owner whose
    repositories a whole-owner binding lists (``InvalidLocator`` when its provider
    cannot list an owner's repositories)."""
    match = _LOCATOR.match(locator.strip())
    if match is None:
        raise InvalidLocator(
            f"{locator!r} is not an owner; expected PROVIDER:OWNER (github:acme, local:/srv/forge)"
        )
    cls = provider_class(match["provider"])
    if not issubclass(cls, OwnerLister):
        raise InvalidLocator(f"{cls.name} cannot list an owner's repositories")
    return OwnerSpec(provider=cls.name, locator=cls.normalize_owner(match["location"]))


def open_endpoint(spec: EndpointSpec, env: ProviderEnvironment | None = None) -> Provider:
    return provider_class(spec.provider).open(spec, env)


def webhook_reader(name: str, settings: Settings) -> WebhookReader:
    """The reader of the forge ``name``'s webhook deliveries (its ``WebhookSource``).
    Raises ``RecordNotFound`` for a provider that sends none reposync reads."""
    cls = provider_class(name) if name in _PROVIDERS else None
    if cls is None or not issubclass(cls, WebhookSource):
        raise RecordNotFound(f"{name!r} sends no webhook deliveries reposync reads")
    return cls.webhook_reader(settings)


#: Forges whose users connect themselves (``providers/accounts.py``), imported on first use.
_CONNECTORS: dict[str, str] = {
    "github": "reposync.providers.github.connect:GitHubConnector",
}


def account_connector(name: str, env: ProviderEnvironment) -> AccountConnector:
    """The self-service connection (OAuth web flow) of the forge ``name``."""
    try:
        module, _, attribute = _CONNECTORS[name].partition(":")
    except KeyError:
        raise InvalidLocator(f"{name!r} has no self-service connection") from None
    connector: AccountConnector = getattr(importlib.import_module(module), attribute)(env)
    return connector
