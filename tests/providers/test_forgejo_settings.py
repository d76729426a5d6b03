"""Forgejo instances in the settings: named as locators name them, checked whole when the
settings are made, their tokens read from an owner-only file or the environment and
never shown; a locator naming no configured instance is refused when a side is opened."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reposync.config import Settings
from reposync.errors import ConfigurationError, InvalidLocator, RepositoryMismatch
from reposync.forge_instances import ForgejoInstance, instance_name
from reposync.providers.base import EndpointSpec, ProviderEnvironment
from reposync.providers.forgejo import ForgejoProvider, GiteaProvider, locators
from reposync.providers.registry import parse_locator
from tests.forgejo_env import forgejo_environment, forgejo_settings, locator

TOKEN = "0123456789abcdef0123456789abcdef01234567"


def env(instances: object) -> dict[str, str]:
    return {"REPOSYNC_FORGEJO_INSTANCES": json.dumps(instances)}


def test_instances_from_the_environment_are_named_as_locators_name_them():
    """Names are HOST[:PORT][/PATH] with the host in lower case; the URL defaults to
    https://NAME and loses its trailing slash; the account map is kept."""
    settings = Settings.from_env(
        env(
            {
                "Git.Example.COM": {"token": TOKEN},
                "127.0.0.1:3000": {"url": "http://127.0.0.1:3000/", "token": TOKEN},
                "example.com/forgejo": {
                    "url": "https://example.com/forgejo",
                    "token": TOKEN,
                    "accounts": {"octocat": "octo"},
                },
            }
        )
    )
    found = {i.name: (i.url, dict(i.accounts)) for i in settings.forgejo_instances}
    assert found == {
        "git.example.com": ("https://git.example.com", {}),
        "127.0.0.1:3000": ("http://127.0.0.1:3000", {}),
        "example.com/forgejo": ("https://example.com/forgejo", {"octocat": "octo"}),
    }
    assert settings.forgejo_instances[1].api_url == "http://127.0.0.1:3000/api/v1"


@pytest.mark.parametrize(
    ("instances", "words"),
    [
        ("not json", "is not JSON"),
        ({"git.example.com": {}}, "needs a token"),
        ({"git.example.com": {"token": TOKEN, "password": "x"}}, "unknown settings password"),
        ({"git.example.com": {"token": TOKEN, "url": "ftp://git.example.com"}}, "expected http"),
        (
            {"git.example.com": {"token": TOKEN, "url": "https://u:p@git.example.com"}},
            "carries credentials",
        ),
        ({"git_example": {"token": TOKEN}}, "is not a Forgejo instance name"),
        ({"git.example.com": {"token": TOKEN, "accounts": {"a": "b c"}}}, "login = login"),
        (
            {"git.example.com": {"token": TOKEN, "accounts": {"a": "same", "b": "SAME"}}},
            "two source logins to one account",
        ),
        ({"git.example.com": {"token": TOKEN, "webhook_secret": 7}}, "webhook_secret must be"),
        ({"git.example.com": {"token": TOKEN, "webhook_secret": "  "}}, "webhook_secret must be"),
    ],
)
def test_a_wrong_instance_is_refused_when_the_settings_are_made(instances, words):
    """Every instance is checked at start; the message says what is wrong."""
    raw = instances if isinstance(instances, str) else json.dumps(instances)
    with pytest.raises(ConfigurationError, match=words):
        Settings.from_env({"REPOSYNC_FORGEJO_INSTANCES": raw})


def _toml(path: Path, mode: int, name: str = "git.example.com", token: str = TOKEN) -> Path:
    path.write_text(
        f'["{name}"]\nurl = "https://{name}"\ntoken = "{token}"\n\n'
        f'["{name}".accounts]\nann = "ann-on-forgejo"\n'
    )
    os.chmod(path, mode)
    return path


def test_a_file_its_owner_alone_reads_adds_its_instances(tmp_path):
    """The TOML file's instances join the environment's; the same instance twice must be
    the same."""
    path = _toml(tmp_path / "forgejo.toml", 0o600)
    settings = Settings.from_env(
        {
            **env({"codeberg.org": {"token": TOKEN}}),
            "REPOSYNC_FORGEJO_INSTANCES_FILE": str(path),
        }
    )
    names = sorted(i.name for i in settings.forgejo_instances)
    assert names == ["codeberg.org", "git.example.com"]
    [mine] = [i for i in settings.forgejo_instances if i.name == "git.example.com"]
    assert dict(mine.accounts) == {"ann": "ann-on-forgejo"}
    clash = env({"git.example.com": {"token": "another"}})
    with pytest.raises(ConfigurationError, match="configured twice"):
        Settings.from_env({**clash, "REPOSYNC_FORGEJO_INSTANCES_FILE": str(path)})


def test_a_file_others_may_read_is_refused(tmp_path):
    """Group- or world-readable: refused, naming the chmod that fixes it."""
    path = _toml(tmp_path / "forgejo.toml", 0o640)
    with pytest.raises(ConfigurationError, match="chmod 600"):
        Settings(forgejo_instances_file=path)


def test_tokens_and_webhook_secrets_are_never_shown():
    """Neither the instance's nor the settings' repr holds a token or a webhook secret;
    the secret is each instance's own, as configured."""
    secret = "hook secret of git.example.com"
    raw = {
        "git.example.com": {"token": TOKEN, "webhook_secret": secret},
        "b.example": {"token": TOKEN},
    }
    settings = Settings.from_env(env(raw))
    assert [i.webhook_secret for i in settings.forgejo_instances] == [secret, ""]
    for shown in (repr(settings.forgejo_instances[0]), repr(settings)):
        assert TOKEN not in shown
        assert secret not in shown


@pytest.mark.parametrize(
    ("location", "canonical"),
    [
        ("Git.Example.com/acme/app.git", "git.example.com/acme/app"),
        ("127.0.0.1:3000/acme/app/", "127.0.0.1:3000/acme/app"),
        ("example.com/forgejo/acme/app", "example.com/forgejo/acme/app"),
    ],
)
def test_locators_name_an_instance_an_owner_and_a_repository(location, canonical):
    """forgejo:HOST[:PORT][/PATH]/OWNER/NAME, spelt canonically; gitea: is the same."""
    assert parse_locator(f"forgejo:{location}") == EndpointSpec("forgejo", canonical)
    assert parse_locator(f"gitea:{location}") == EndpointSpec("gitea", canonical)


@pytest.mark.parametrize("location", ["acme/app", "git.example.com/ac me/app", "h/../app"])
def test_a_locator_without_an_instance_or_a_forgejo_name_is_refused(location):
    """Too few parts, or an owner or name Forgejo would not take."""
    with pytest.raises(InvalidLocator):
        parse_locator(f"forgejo:{location}")


def test_an_instance_that_is_not_configured_is_refused_naming_those_that_are(tmp_path):
    """Opening a side on an unknown instance says which instances there are."""
    settings = Settings(
        data_dir=tmp_path,
        forgejo_instances=(ForgejoInstance("git.example.com", "https://git.example.com", TOKEN),),
    )
    spec = EndpointSpec("forgejo", "elsewhere.org/acme/app")
    with pytest.raises(InvalidLocator, match=r"configured: git\.example\.com"):
        ForgejoProvider.open(spec, ProviderEnvironment(settings=settings))


def test_repository_ids_name_their_instance_and_a_binding_s_id_is_checked(forgejo_fake, tmp_path):
    """The endpoint id is Forgejo's id @ the instance; opening with another id is a
    mismatch, not a silent switch of repository. gitea: opens the same as Gitea."""
    repo = forgejo_fake.state.create_repo("acme/app")
    settings = forgejo_settings(forgejo_fake, tmp_path, forgejo_fake.add_token("acme"))
    environment = forgejo_environment(settings, forgejo_fake)
    place = locator(forgejo_fake, "acme/app")
    opened = ForgejoProvider.open(EndpointSpec("forgejo", place), environment)
    name = instance_name(place.rsplit("/", 2)[0])
    assert opened.endpoint().repository_id == f"{repo.id}@{name}"
    assert opened.endpoint().repository_id == locators.repository_id(name, repo.id)
    as_gitea = GiteaProvider.open(EndpointSpec("gitea", place), environment)
    assert (as_gitea.endpoint().provider, as_gitea.forge) == ("gitea", "Gitea")
    with pytest.raises(RepositoryMismatch):
        ForgejoProvider.open(EndpointSpec("forgejo", place, f"999@{name}"), environment)
    for provider in (opened, as_gitea):
        provider.close()
