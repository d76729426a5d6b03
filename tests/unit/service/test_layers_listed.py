"""Every service module has its place in the service's layers contract.

import-linter's ``exhaustive`` checks only a container's direct children; since the
service groups modules by domain (``accounts/``, ``scheduling/``, ``webhooks/``), this
test keeps the promise ``exhaustive`` made: a new module cannot slip in unlayered, where
any import direction would pass.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import reposync.service

CONTRACT = "Inside the service: operations over the pipeline over the rows they share"
SERVICE = Path(reposync.service.__file__).parent


def layered_names() -> set[str]:
    pyproject = tomllib.loads((SERVICE.parents[1] / "pyproject.toml").read_text())
    (contract,) = [
        c for c in pyproject["tool"]["importlinter"]["contracts"] if c["name"] == CONTRACT
    ]
    return {
        name.strip() for layer in contract["layers"] for name in layer.replace("|", ":").split(":")
    }


def service_modules() -> set[str]:
    """Dotted names under the service, ``pipeline`` as one layer of its own."""
    found = {"pipeline"}
    for path in SERVICE.rglob("*.py"):
        parts = path.relative_to(SERVICE).with_suffix("").parts
        if parts[0] == "pipeline" or parts[-1] == "__init__":
            continue  # a domain package's __init__ only says what it holds (checked below)
        found.add(".".join(parts))
    return found


def test_every_service_module_is_in_a_layer() -> None:
    """A module missing from the contract (or a layer naming a module that is gone) fails."""
    assert service_modules() == layered_names()


def test_domain_packages_hold_no_code_of_their_own() -> None:
    """A domain package's __init__ only says what it holds: code there would be unlayered."""
    for init in SERVICE.glob("*/__init__.py"):
        if init.parent.name == "pipeline":
            continue
        body = [
            line
            for line in init.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith(("#", '"""'))
        ]
        assert not [line for line in body if "import" in line or "def " in line], init
