"""schemathesis against the served OpenAPI document: no generated input gets a 5xx."""

from __future__ import annotations

import ipaddress
import time
from typing import Any
from urllib.parse import urlsplit

import pytest
import schemathesis
from hypothesis import HealthCheck, assume, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from reposync.forge_instances import ForgejoInstance
from reposync.service.bindings import SyncRequest, bind
from reposync.service.runs import create_run
from reposync.web.app import API_PREFIX
from tests.gitrepo import generate
from tests.integration.web.conftest import bearer

#: Examples per operation and generation mode: the whole run stays well under a minute.
EXAMPLES = 20


def _reaches_the_network(case: Any) -> bool:
    """POST /bindings with a github: locator would call GitHub, a subscription's URL with
    a host name would ask DNS; keep the test offline."""
    body = case.body if isinstance(case.body, dict) else {}
    if any(isinstance(v, str) and v.strip().startswith("github") for v in body.values()):
        return True
    target = body.get("url")
    if isinstance(target, str):
        try:
            host = urlsplit(target.strip()).hostname or ""
            ipaddress.ip_address(host)
        except ValueError:
            return bool(host)  # a name: resolving it needs the network
    return False


@pytest.fixture(name="settings")
def github_connect_settings(settings):  # not named settings: hypothesis's is imported
    """Connect GitHub configured (GitHub itself unreachable: port 9): its operations answer
    without the network (start builds a URL, a made-up callback state is refused first);
    a Forgejo instance with a webhook secret, so its and Gitea's webhooks are served."""
    instance = ForgejoInstance(
        "git.example.test", "http://127.0.0.1:9", "t" * 40, webhook_secret="hook-secret"
    )
    return settings.with_overrides(
        forgejo_instances=(instance,),
        github_client_id="Iv1.test",
        github_client_secret="s" * 40,
        github_app_slug="reposync-test",
        github_oauth_url="http://127.0.0.1:9",
        github_api_url="http://127.0.0.1:9",
    )


@pytest.fixture
def busy_binding(ctx, tmp_path) -> int:
    """A second Binding, with an active Run (the first has a finished one)."""
    source = generate(tmp_path / "busy-src.git", commits=2, branches=0, tags=0)
    binding = bind(ctx, SyncRequest(f"local:{source}", f"local:{tmp_path / 'busy-dst.git'}"))
    create_run(ctx, binding.id)
    return binding.id


def test_no_generated_input_gets_a_server_error(
    app, tokens, finished_run, busy_binding, tmp_path, monkeypatch
):
    """Every operation, positive and negative inputs, an admin token: never a 5xx."""
    monkeypatch.chdir(tmp_path)  # relative local: locators stay inside the test's directory
    schema = schemathesis.openapi.from_wsgi(f"{API_PREFIX}/openapi.json", app)
    headers = bearer(tokens.admin)
    failures: list[str] = []
    tried: list[str] = []
    unnegatable: list[str] = []
    started = time.monotonic()

    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                derandomize=True,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def check(case: Any) -> None:
                assume(not _reaches_the_network(case))
                response = case.call(headers=headers)
                assert response.status_code < 500, (
                    f"{case.method} {case.formatted_path} -> {response.status_code}: "
                    f"{response.text[:300]}"
                )

            try:
                check()
            except Unsatisfiable:
                # Nothing to negate (no parameters, no body): there is no negative input.
                assert mode is GenerationMode.NEGATIVE, operation.label
                unnegatable.append(operation.label)
            except AssertionError as exc:
                failures.append(f"{operation.label} [{mode.value}]: {exc}")
            tried.append(operation.label)

    # Every operation of the document (health and each forge's webhooks included),
    # counted from the document itself rather than schemathesis's own enumeration.
    document = app.test_client().get(f"{API_PREFIX}/openapi.json").get_json()
    methods = {"get", "put", "post", "delete", "patch", "head", "options"}
    operations = [m for item in document["paths"].values() for m in item if m in methods]
    assert len(operations) >= 53
    assert len(set(tried)) == len(operations)
    assert not failures, "\n".join(failures)
    print("no negative inputs for:", ", ".join(unnegatable))
    print(f"schemathesis: {len(tried)} runs in {time.monotonic() - started:.1f} s")
