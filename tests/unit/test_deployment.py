"""compose.yaml, the Dockerfile and the README agree (issue 15), and compose.yaml is a
Compose file by the Compose Specification's own JSON schema (tests/contracts/README.md
says where the schema comes from)."""

from __future__ import annotations

import hashlib
import json
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
    port = next(arg.split("=", 1)[1] for arg in flower["command"] if arg.startswith("--port="))
    assert f"http://127.0.0.1:{port}/healthcheck" in " ".join(flower["healthcheck"]["test"])


def test_published_ports_are_on_this_machine_only():
    """The API and Flower (whose password is FLOWER_PASSWORD) listen on 127.0.0.1."""
    for name, service in compose()["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port}"
    flower = " ".join(compose()["services"]["flower"]["command"])
    assert "${FLOWER_PASSWORD:?" in flower


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
