"""compose.yaml, the Dockerfile and the README agree (issue 15), and compose.yaml is a
Compose file by the Compose Specification's own JSON schema (tests/contracts/README.md
says where the schema comes from)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "tests" / "contracts" / "compose-spec.json"
ONE_SHOT = {"migrate"}


def compose() -> Any:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())  # resolves the << merges


def validator() -> jsonschema.Draft7Validator:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)  # the schema is draft 7, and sound
    return jsonschema.Draft7Validator(schema)


def readme() -> str:
    return (ROOT / "README.md").read_text()


def test_compose_file_is_valid_by_the_compose_specification():
    errors = [error.message for error in validator().iter_errors(compose())]
    assert errors == []


def test_the_schema_is_the_recorded_copy():
    """Data, never edited by hand: its SHA-256 is the one its README records."""
    digest = hashlib.sha256(SCHEMA.read_bytes()).hexdigest()
    assert digest in (SCHEMA.parent / "README.md").read_text()


@pytest.mark.parametrize(
    "change",
    [
        lambda doc: doc["services"]["api"].update(healthchek={"test": ["CMD", "true"]}),
        lambda doc: doc["services"]["worker"].update(restart=["always"]),
        lambda doc: doc["services"]["flower"]["healthcheck"].update(interval=30),
        lambda doc: doc.update(service={}),
    ],
)
def test_the_schema_refuses_what_compose_refuses(change):
    """The check has teeth: a misspelt key, a wrong type, a top-level typo."""
    doc = compose()
    change(doc)
    assert list(validator().iter_errors(doc)) != []


def test_every_long_running_service_restarts_and_has_a_health_check():
    services = compose()["services"]
    for name, service in services.items():
        if name in ONE_SHOT:
            assert service["restart"] == "no"
            assert "healthcheck" not in service
            continue
        assert service["restart"] in ("always", "unless-stopped"), name
        assert service["healthcheck"]["test"][0] in ("CMD", "CMD-SHELL"), name
        for dependency in service.get("depends_on", {}):
            assert dependency in services, f"{name} depends on unknown {dependency}"


def test_health_checks_ask_the_ports_their_services_listen_on():
    services = compose()["services"]
    api = services["api"]
    bind = api["command"][api["command"].index("--bind") + 1]
    assert f"http://127.0.0.1:{bind.rsplit(':', 1)[1]}/api/ext/v1/sync/health" in " ".join(
        api["healthcheck"]["test"]
    )
    flower = services["flower"]
    port = re.search(r"--port=(\d+)", " ".join(flower["command"])).group(1)
    assert f"http://127.0.0.1:{port}/healthcheck" in " ".join(flower["healthcheck"]["test"])


def test_published_ports_are_on_this_machine_only():
    """The API and Flower (whose password is FLOWER_PASSWORD) listen on 127.0.0.1."""
    for name, service in compose()["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port}"
    flower = " ".join(compose()["services"]["flower"]["command"])
    assert "${FLOWER_PASSWORD:?" in flower


#: ``${NAME}``, ``${NAME:-x}``, ``${NAME:?x}``: what compose itself substitutes when it reads
#: the file (``$${...}`` is a literal ``${...}`` for the container's shell).
INTERPOLATED = re.compile(r"(?<!\$)\$\{(\w+)(:?[-?+][^}]*)?\}")


def test_compose_needs_no_variable_to_read_the_file():
    """Issue 25: ``${FLOWER_PASSWORD:?}`` made every compose command (``ps``, ``logs``,
    ``exec``) fail without it. Nothing compose interpolates may be required; whatever it
    interpolates at all, the README names."""
    text = (ROOT / "compose.yaml").read_text()
    found = INTERPOLATED.findall(text)
    assert [name for name, how in found if "?" in how] == []
    assert {name for name, _ in found} <= set(re.findall(r"\b[A-Z][A-Z0-9_]+\b", readme()))


def test_flower_refuses_to_start_without_its_password():
    """Flower's basic auth comes from FLOWER_PASSWORD when its container starts, and an
    unset one stops it rather than serve the workers' view without a password."""
    command = compose()["services"]["flower"]["command"]
    assert command[:2] == ["sh", "-c"]
    script = command[2].replace("$$", "$")  # what compose hands the container's shell
    assert script.startswith("exec celery -A reposync.tasks.app flower ")
    assert '--basic-auth="${FLOWER_USER:-admin}:${FLOWER_PASSWORD:?' in script


def test_local_repositories_on_the_forge_volume_can_be_bound():
    """Issue 25: compose mounts /srv/forge for local repositories but did not allow it
    (REPOSYNC_LOCAL_ROOTS), so Bindings to them were refused through the API and page."""
    for name, service in compose()["services"].items():
        mounts = [
            str(v).split(":")[1] for v in service.get("volumes", []) if str(v).startswith("forges:")
        ]
        if not mounts:
            continue
        roots = service["environment"].get("REPOSYNC_LOCAL_ROOTS", "").split(os.pathsep)
        assert set(mounts) <= set(roots), f"{name} mounts {mounts}, allows {roots}"


def test_settings_and_credentials_come_from_an_optional_env_file():
    """Credentials (a GitHub token, Forgejo instances, the secret key) reach every
    reposync service from ``reposync.env``, which may be absent; compose sets nothing
    that would shadow it but the service addresses and the forge volume's root."""
    fixed = {"REPOSYNC_DATABASE_URL", "REPOSYNC_BROKER_URL", "REPOSYNC_LOCAL_ROOTS"}
    for name, service in compose()["services"].items():
        if service.get("image") != "reposync:latest":
            continue
        assert service["env_file"] == [{"path": "reposync.env", "required": False}], name
        assert set(service["environment"]) == fixed, name
    assert "reposync.env" in readme()


def test_readme_urls_name_compose_services():
    """Issue 15: the README said host ``db`` for the database compose calls ``postgres``."""
    services = set(compose()["services"])
    environment = compose()["x-reposync"]["environment"]
    found = re.findall(r"(REPOSYNC_(?:DATABASE|BROKER)_URL)=(\S+)", readme())
    assert {name for name, _ in found} == {"REPOSYNC_DATABASE_URL", "REPOSYNC_BROKER_URL"}
    for name, url in found:
        assert urlsplit(url).hostname in services, f"README: {name}={url}"
        assert url == environment[name], f"README: {name}={url}"


def test_readme_documents_flower_password_and_binds_flower_locally():
    text = readme()
    assert "FLOWER_PASSWORD" in text
    for line in text.splitlines():
        if "reposync.tasks.app flower" in line:
            assert "--address=127.0.0.1" in line, line
            assert "secret" not in line, line


def test_readme_names_every_compose_service():
    text = readme()
    for name in compose()["services"]:
        assert f"`{name}`" in text, name


def test_the_image_runs_as_an_unprivileged_user():
    """The last USER of the Dockerfile is neither root nor uid 0, and it owns the data
    directory compose mounts (a fresh named volume takes that owner)."""
    lines = [
        line.strip() for line in (ROOT / "Dockerfile").read_text().splitlines() if line.strip()
    ]
    users = [shlex.split(line)[1] for line in lines if line.startswith("USER ")]
    assert users, "no USER in the Dockerfile"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")
    text = (ROOT / "Dockerfile").read_text()
    assert f"useradd --system --uid 10001 --gid {user}" in text
    data = next(
        volume.split(":")[1]
        for volume in compose()["x-reposync"]["volumes"]
        if volume.startswith("data:")
    )
    assert f"chown {user}:{user} {data}" in text
    assert f"ENV REPOSYNC_DATA_DIR={data}" in text
