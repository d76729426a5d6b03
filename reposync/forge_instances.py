"""The Forgejo and Gitea instances reposync reaches: their addresses, tokens and account maps.

A locator names an instance the way people write its address without the scheme
(``forgejo:git.example.com/acme/app``, ``forgejo:127.0.0.1:3000/acme/app``,
``gitea:example.com/gitea/acme/app`` for one served under a path); the instance must be
configured under that **name**, with its base URL (the scheme comes from there: a
locator never chooses between HTTPS and plain HTTP) and a token. Several instances
live side by side, each with its own token, so one deployment reaches Codeberg and an
in-house Forgejo at once.

Two sources, both read once when the settings are made and checked whole there:

* ``REPOSYNC_FORGEJO_INSTANCES``: JSON, ``{"<name>": {"url": ..., "token": ...,
  "accounts": {...}, "webhook_secret": ...}, ...}`` (the deployment's environment, like
  ``REPOSYNC_GITHUB_TOKEN``);
* ``REPOSYNC_FORGEJO_INSTANCES_FILE``: the same as TOML, one table per instance, in a
  file only its owner may read (refused otherwise, as the hooks' settings file is).

``accounts`` maps a source login to the instance's account of the same person. When the
token is a site administrator's, what that person wrote on the source is written as
their account on the instance (Forgejo's ``Sudo``); anyone else's stays attributed in a
header. ``webhook_secret`` is the secret of the instance's hooks that deliver to
reposync (``/webhooks/forgejo``, ``/webhooks/gitea``): each instance has its own, and a
delivery is taken only when signed with the secret of the instance its repository is
on. Tokens and secrets live in the settings only: never in the database, a Git URL,
argv or a log line (``repr`` leaves them out).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from reposync.errors import ConfigurationError

#: An instance's name: a host (letters, digits, dots, dashes), an optional port and path.
NAME = re.compile(
    r"^(?P<host>[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)(?::(?P<port>[0-9]{1,5}))?"
    r"(?P<path>(?:/[A-Za-z0-9._~-]+)*)$"
)
#: What an account map may name: Forgejo's user names (and GitHub's, a local forge's).
LOGIN = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
_KEYS = frozenset({"url", "token", "accounts", "webhook_secret"})


@dataclass(frozen=True, slots=True)
class ForgejoInstance:
    """One instance: what locators call it, where it is, and the token that opens it."""

    #: ``host[:port][/path]``, the host in lower case: the locator's instance part.
    name: str
    #: The base URL (``https://git.example.com``, no trailing slash): web, Git and LFS
    #: under it, the REST API under ``/api/v1``.
    url: str
    token: str = field(repr=False)
    #: Source login -> the instance's login of the same person.
    accounts: Mapping[str, str] = field(default_factory=dict)
    #: The secret its webhooks sign deliveries with ("" : none configured, refused).
    webhook_secret: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "accounts", dict(self.accounts))

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/v1"

    @property
    def scheme(self) -> str:
        return urlsplit(self.url).scheme


def instance_name(text: str) -> str:
    """The canonical spelling of an instance's name (host lower-cased), or
    ``ConfigurationError`` for one that is no ``host[:port][/path]``."""
    host, slash, path = text.strip().rstrip("/").partition("/")
    name = host.lower() + slash + path
    if not NAME.match(name):
        raise ConfigurationError(
            f"{text!r} is not a Forgejo instance name: expected HOST[:PORT][/PATH] "
            "(for example git.example.com or 127.0.0.1:3000)"
        )
    return name


def _instance(name: str, entry: Any, where: str) -> ForgejoInstance:
    if not isinstance(entry, Mapping):
        raise ConfigurationError(f"{where}: instance {name!r} must be a table of settings")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise ConfigurationError(
            f"{where}: instance {name!r} has unknown settings {', '.join(unknown)} "
            f"(known: {', '.join(sorted(_KEYS))})"
        )
    canonical = instance_name(name)
    url = str(entry.get("url") or f"https://{canonical}").rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
        raise ConfigurationError(
            f"{where}: instance {canonical!r} has url {url!r}; expected http(s)://HOST[:PORT][/PATH]"
        )
    if parts.username or parts.password:
        raise ConfigurationError(
            f"{where}: instance {canonical!r}'s url carries credentials; give the token "
            "as its token setting instead"
        )
    token = entry.get("token")
    if not isinstance(token, str) or not token.strip():
        raise ConfigurationError(f"{where}: instance {canonical!r} needs a token")
    accounts = entry.get("accounts") or {}
    if not isinstance(accounts, Mapping):
        raise ConfigurationError(f"{where}: {canonical!r}'s accounts must map logins to logins")
    for source, target in accounts.items():
        if not (isinstance(target, str) and LOGIN.match(str(source)) and LOGIN.match(target)):
            raise ConfigurationError(
                f"{where}: {canonical!r}'s accounts: {source!r} = {target!r} is not a "
                "login = login pair"
            )
    targets = [login.casefold() for login in accounts.values()]
    if len(set(targets)) != len(targets):
        raise ConfigurationError(
            f"{where}: {canonical!r}'s accounts map two source logins to one account; "
            "reads could not tell whose an object is"
        )
    secret = entry.get("webhook_secret", "")
    if not isinstance(secret, str) or (secret and not secret.strip()):
        raise ConfigurationError(
            f"{where}: {canonical!r}'s webhook_secret must be the text its hooks are given"
        )
    return ForgejoInstance(canonical, url, token.strip(), dict(accounts), secret)


def parse_instances(data: Any, where: str) -> tuple[ForgejoInstance, ...]:
    """Instances from a decoded table ``{name: {url, token, accounts}}``."""
    if not isinstance(data, Mapping):
        raise ConfigurationError(f"{where}: expected a table of instances by name")
    instances = tuple(_instance(str(name), entry, where) for name, entry in data.items())
    return merge_instances((), instances)


def instances_from_json(raw: str) -> tuple[ForgejoInstance, ...]:
    """``REPOSYNC_FORGEJO_INSTANCES``' JSON."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ConfigurationError(f"REPOSYNC_FORGEJO_INSTANCES is not JSON: {exc}") from exc
    return parse_instances(data, "REPOSYNC_FORGEJO_INSTANCES")


def instances_from_file(path: Path) -> tuple[ForgejoInstance, ...]:
    """The instances of a TOML file that its owner alone may read (it holds tokens)."""
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(
            f"cannot read REPOSYNC_FORGEJO_INSTANCES_FILE {path}: {exc.strerror}"
        ) from exc
    if mode & 0o077:
        raise ConfigurationError(
            f"{path} may be read by others (mode {mode & 0o777:o}): it holds Forgejo tokens, "
            f"so only its owner may read it (chmod 600 {path})"
        )
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"{path} is not TOML: {exc}") from exc
    return parse_instances(data, str(path))


def merge_instances(
    first: tuple[ForgejoInstance, ...], second: tuple[ForgejoInstance, ...]
) -> tuple[ForgejoInstance, ...]:
    """Both lists; an instance named twice must be configured the same both times."""
    merged: dict[str, ForgejoInstance] = {}
    for instance in (*first, *second):
        known = merged.get(instance.name)
        if known is not None and known != instance:
            raise ConfigurationError(
                f"Forgejo instance {instance.name!r} is configured twice, differently "
                "(REPOSYNC_FORGEJO_INSTANCES and REPOSYNC_FORGEJO_INSTANCES_FILE?)"
            )
        merged[instance.name] = instance
    return tuple(merged.values())
