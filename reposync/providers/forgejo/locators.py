"""``forgejo:HOST[:PORT][/PATH]/OWNER/NAME``: which instance, and which repository on it.

A locator's last two segments are the repository's owner and name; what comes before is
the instance's name (``reposync/forge_instances.py``), which must be configured: its
base URL there says how to reach it (``https`` or ``http``), so the locator never does.
Spelling is checked without the settings (``normalize``, when a Binding is made); the
instance is looked up when a side is opened (``instance_of``), and an unconfigured one
is refused there, naming the configured ones.

A repository's id is Forgejo's, unique on its instance only; reposync's endpoint id is
``<id>@<instance>`` (``repository_id``), so two instances' repositories never share one.
A webhook's reader names repositories the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reposync.config import Settings
from reposync.errors import ConfigurationError, InvalidLocator
from reposync.forge_instances import ForgejoInstance, instance_name

#: Forgejo's owner and repository names: letters, digits, ``-``, ``_``, ``.``; not ``.``
#: or ``..`` (``IsUsableRepoName``/``IsValidUsername`` in Forgejo's source).
_NAME = re.compile(r"^(?!\.\.?$)[A-Za-z0-9._-]{1,100}$")


@dataclass(frozen=True, slots=True)
class Location:
    """A parsed locator: the instance's name, and the repository's owner and name."""

    instance: str
    owner: str
    name: str

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def locator(self) -> str:
        return f"{self.instance}/{self.owner}/{self.name}"


def parse(location: str, provider: str = "forgejo") -> Location:
    """A locator's location, or ``InvalidLocator`` naming the grammar."""
    text = location.strip().removesuffix(".git").strip("/")
    parts = text.split("/")
    example = f"{provider}:git.example.com/acme/app"
    if len(parts) < 3:
        raise InvalidLocator(
            f"{provider}:{location} is not HOST[:PORT][/PATH]/OWNER/NAME (for example {example})"
        )
    *instance, owner, name = parts
    if not (_NAME.match(owner) and _NAME.match(name)):
        raise InvalidLocator(
            f"{provider}:{location}: {owner}/{name} is not a Forgejo OWNER/NAME (letters, "
            "digits, '-', '_' and '.')"
        )
    try:
        canonical = instance_name("/".join(instance))
    except ConfigurationError as exc:
        raise InvalidLocator(f"{provider}:{location}: {exc}") from None
    return Location(canonical, owner, name)


def normalize(location: str, provider: str = "forgejo") -> str:
    """The canonical spelling of a location (host in lower case, no ``.git``)."""
    return parse(location, provider).locator


def instance_of(
    location: Location, settings: Settings, provider: str = "forgejo"
) -> ForgejoInstance:
    """The configured instance a location names; ``InvalidLocator`` when none is."""
    for instance in settings.forgejo_instances:
        if instance.name == location.instance:
            return instance
    known = ", ".join(sorted(i.name for i in settings.forgejo_instances)) or "none"
    raise InvalidLocator(
        f"{provider}:{location.locator} names the instance {location.instance!r}, which is "
        f"not configured (configured: {known}); add it to REPOSYNC_FORGEJO_INSTANCES or "
        "REPOSYNC_FORGEJO_INSTANCES_FILE with its url and token"
    )


def repository_id(instance: str, forge_id: object) -> str:
    """reposync's id of repository ``forge_id`` on ``instance``: ``<id>@<instance>``."""
    return f"{forge_id}@{instance}"
