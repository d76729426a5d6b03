"""The OpenAPI document: at a stable URL, valid, every operation summarised, secured,
named (a pinned operationId) and tagged, so that generated clients are usable."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from flask import Flask
from flask_smorest import Blueprint
from openapi_spec_validator import validate

from reposync.web.app import API_PREFIX, ReposyncApi
from tests.integration.web.conftest import url

METHODS = {"get", "post", "put", "patch", "delete"}

#: Every operation's id, pinned. Generated clients name their functions and modules after
#: these ids (``list_bindings.sync(client=...)``), so they are wire protocol: renaming or
#: dropping one breaks every client generated before. A new operation adds its row here.
#: The rule (docs/architecture.md, "A new endpoint"): list (GET a collection), get (GET
#: one), create (POST to a collection), update (PATCH), delete (DELETE); an action takes
#: its own verb (cancel_run), and so does a DELETE that keeps what it names
#: (revoke_token) or forgets something else (disconnect_github_account); then the
#: resource, singular for one, plural for a list, after its parent when the path nests it.
OPERATION_IDS = {
    ("GET", "/health"): "get_health",
    ("GET", "/overview"): "get_overview",
    ("GET", "/bindings"): "list_bindings",
    ("POST", "/bindings"): "create_binding",
    ("GET", "/bindings/{binding_id}"): "get_binding",
    ("PATCH", "/bindings/{binding_id}"): "update_binding",
    ("DELETE", "/bindings/{binding_id}"): "delete_binding",
    ("POST", "/bindings/{binding_id}/handoff"): "hand_off_binding",
    ("POST", "/bindings/{binding_id}/reconcile"): "reconcile_binding",
    ("POST", "/bindings/{binding_id}/runs"): "create_binding_run",
    ("GET", "/runs"): "list_runs",
    ("GET", "/runs/{run_id}"): "get_run",
    ("GET", "/runs/{run_id}/progress"): "get_run_progress",
    ("POST", "/runs/{run_id}/cancel"): "cancel_run",
    ("POST", "/runs/{run_id}/retry"): "retry_run",
    ("POST", "/runs/{run_id}/recover"): "recover_run",
    ("GET", "/runs/{run_id}/items"): "list_run_items",
    ("GET", "/runs/{run_id}/events"): "list_run_events",
    ("POST", "/runs/{run_id}/stream-token"): "create_run_stream_token",
    ("GET", "/users"): "list_users",
    ("POST", "/users"): "create_user",
    ("DELETE", "/users/{user_id}"): "delete_user",
    ("GET", "/users/{user_id}/tokens"): "list_user_tokens",
    ("POST", "/users/{user_id}/tokens"): "create_user_token",
    ("DELETE", "/tokens/{token_id}"): "revoke_token",
    ("POST", "/users/{user_id}/grants"): "create_user_grant",
    ("DELETE", "/users/{user_id}/grants"): "delete_user_grant",
    ("GET", "/watches"): "list_watches",
    ("POST", "/watches"): "create_watch",
    ("GET", "/watches/{watch_id}"): "get_watch",
    ("DELETE", "/watches/{watch_id}"): "delete_watch",
    ("GET", "/subscriptions"): "list_subscriptions",
    ("POST", "/subscriptions"): "create_subscription",
    ("GET", "/subscriptions/{subscription_id}"): "get_subscription",
    ("PATCH", "/subscriptions/{subscription_id}"): "update_subscription",
    ("DELETE", "/subscriptions/{subscription_id}"): "delete_subscription",
    ("GET", "/subscriptions/{subscription_id}/deliveries"): "list_subscription_deliveries",
    (
        "POST",
        "/subscriptions/{subscription_id}/deliveries/{delivery_id}/redeliver",
    ): "redeliver_subscription_delivery",
    ("POST", "/webhooks/github"): "receive_github_webhook",
    ("POST", "/webhooks/forgejo"): "receive_forgejo_webhook",
    ("POST", "/webhooks/gitea"): "receive_gitea_webhook",
    ("POST", "/github/authorize/start"): "start_github_authorization",
    ("POST", "/github/install/start"): "start_github_installation",
    ("GET", "/github/install/callback"): "complete_github_connection",
    ("GET", "/github/installations"): "list_github_installations",
    ("GET", "/github/repositories"): "list_github_repositories",
    ("DELETE", "/github/account"): "disconnect_github_account",
    ("GET", "/owner-bindings"): "list_owner_bindings",
    ("POST", "/owner-bindings"): "create_owner_binding",
    ("GET", "/owner-bindings/{owner_binding_id}"): "get_owner_binding",
    ("DELETE", "/owner-bindings/{owner_binding_id}"): "delete_owner_binding",
    ("GET", "/owner-bindings/{owner_binding_id}/members"): "list_owner_binding_members",
    ("POST", "/owner-bindings/{owner_binding_id}/passes"): "create_owner_binding_pass",
}


def operations(document: dict) -> list[tuple[str, str, dict]]:
    return [
        (path, method, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    ]


def test_the_document_is_valid_openapi_at_a_stable_url(client):
    """/api/ext/v1/sync/openapi.json is a valid OpenAPI 3 document, without a token."""
    response = client.get(url("/openapi.json"))
    assert response.status_code == 200
    document = response.json
    validate(document)
    assert document["openapi"].startswith("3.")
    assert all(path.startswith(API_PREFIX) for path in document["paths"])


def test_every_operation_has_a_summary_and_needs_a_token_but_health(client):
    """Docstrings became summaries; bearer auth is required everywhere but /health and
    the webhooks (each forge's signature authenticates them) and Connect GitHub's callback (GitHub
    redirects a browser there: its state authenticates it)."""
    document = client.get(url("/openapi.json")).json
    schemes = document["components"]["securitySchemes"]
    assert schemes["bearerAuth"]["scheme"] == "bearer"
    signed_by = {
        "github": "X-Hub-Signature-256",
        "forgejo": "X-Forgejo-Signature",
        "gitea": "X-Gitea-Signature",
    }
    for forge, header in signed_by.items():
        assert schemes[f"{forge}Signature"] == {
            "type": "apiKey",
            "in": "header",
            "name": header,
            "description": schemes[f"{forge}Signature"]["description"],
        }
    for path, method, operation in operations(document):
        assert operation.get("summary"), (method, path)
        if path.endswith(("/health", "/github/install/callback")):
            assert operation["security"] == []
        elif "/webhooks/" in path:
            forge = path.rsplit("/", 1)[1]
            assert operation["security"] == [{f"{forge}Signature": []}]
            assert "401" in operation["responses"], (method, path)
        else:
            assert "security" not in operation  # the document-wide bearerAuth applies
            assert "401" in operation["responses"], (method, path)


def test_errors_are_documented_as_problem_json(client):
    """Every documented error response is application/problem+json with the Problem schema."""
    document = client.get(url("/openapi.json")).json
    problem = document["components"]["schemas"]["Problem"]
    assert {"type", "title", "status", "detail", "code"} <= set(problem["required"])
    for name, response in document["components"]["responses"].items():
        content = response.get("content", {})
        assert set(content) == {"application/problem+json"}, name


def test_swagger_ui_is_served(client):
    """The Swagger UI page loads and points at the document."""
    response = client.get(url("/docs"))
    assert response.status_code == 200
    assert "swagger" in response.get_data(as_text=True).lower()
    assert "openapi.json" in response.get_data(as_text=True)


def operation_ids(document: dict) -> dict[tuple[str, str], str | None]:
    """(method, path below the API prefix) -> the operation's id, as the document says."""
    return {
        (method.upper(), path.removeprefix(API_PREFIX)): operation.get("operationId")
        for path, method, operation in operations(document)
    }


def test_every_operation_has_a_unique_snake_case_id(client):
    """Each operation has an operationId, no two share one, and each is a snake_case
    identifier a generator can use as a function name as it is."""
    ids = operation_ids(client.get(url("/openapi.json")).json)
    assert None not in ids.values(), [key for key, name in ids.items() if name is None]
    assert [name for name, n in Counter(ids.values()).items() if n > 1] == []
    assert [name for name in ids.values() if not re.fullmatch(r"[a-z]+(_[a-z]+)+", name)] == []


def test_operation_ids_are_pinned(client):
    """Renaming or dropping an operation's id (or moving its URL) fails here: the ids are
    wire protocol for generated clients."""
    served = operation_ids(client.get(url("/openapi.json")).json)
    changed = {
        key: (pinned, served.get(key))
        for key, pinned in OPERATION_IDS.items()
        if served.get(key) != pinned
    }
    assert not changed, (
        "operationIds are wire protocol: clients generated from this document call their "
        "functions by these names, so a renamed, dropped or moved operation breaks them. "
        f"Pinned -> served: {changed}"
    )
    new = {key: name for key, name in served.items() if key not in OPERATION_IDS}
    assert not new, f"new operations: pin their ids in OPERATION_IDS: {new}"


def test_every_operation_is_tagged_with_a_declared_tag(client):
    """Each operation has a tag (generators group by it); every tag used is declared at the
    top with a description, and every declared tag is used."""
    document = client.get(url("/openapi.json")).json
    declared = {tag["name"]: tag.get("description") for tag in document["tags"]}
    used: set[str] = set()
    for path, method, operation in operations(document):
        assert operation.get("tags"), (method, path)
        used.update(operation["tags"])
    assert used == set(declared)
    assert all(declared.values()), declared


def _toy_api(*declared: str | None) -> ReposyncApi:
    """A ReposyncApi with one GET operation per id given (None: declared without one)."""
    app = Flask("toys")
    app.config.update(API_TITLE="toys", API_VERSION="v1", OPENAPI_VERSION="3.0.3")
    api = ReposyncApi(app)
    blueprint = Blueprint("toys", __name__, description="Toys")
    for n, operation_id in enumerate(declared):

        def view() -> dict[str, Any]:
            """A toy."""
            return {}

        if operation_id is not None:
            view = blueprint.doc(operationId=operation_id)(view)
        blueprint.route(f"/toys/{n}", endpoint=f"toy_{n}")(view)
    api.register_blueprint(blueprint)
    return api


@pytest.mark.parametrize(
    ("declared", "refusal"),
    [
        (("list_toys", None), "GET /toys/1 has no operationId"),
        (("list_toys", "list_toys"), "'list_toys' is used 2 times"),
        (("listToys",), "'listToys' is not snake_case"),
    ],
)
def test_the_document_is_refused_without_an_explicit_unique_id(declared, refusal):
    """The app does not start when an operation forgets its id, shares one or names it
    otherwise than in snake_case (a new endpoint cannot ship a derived name)."""
    _toy_api("list_toys", "get_toy").check_operation_ids()  # explicit and unique: accepted
    with pytest.raises(RuntimeError, match=re.escape(refusal)):
        _toy_api(*declared).check_operation_ids()


@pytest.fixture
def generated_client(client, tmp_path: Path, monkeypatch) -> Iterator[Path]:
    """The package openapi-python-client generates from the served document, importable
    as ``reposync_client`` for the test (and forgotten after it)."""
    document = tmp_path / "openapi.json"
    document.write_bytes(client.get(url("/openapi.json")).data)
    config = tmp_path / "generator.yaml"
    config.write_text("post_hooks: []\n")  # no ruff formatting of the generated code
    package = tmp_path / "reposync_client"
    generate = [sys.executable, "-m", "openapi_python_client", "generate", "--meta", "none"]
    options = ["--path", str(document), "--config", str(config), "--output-path", str(package)]
    done = subprocess.run([*generate, *options], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr
    monkeypatch.syspath_prepend(str(tmp_path))
    yield package
    for name in [name for name in sys.modules if name.partition(".")[0] == "reposync_client"]:
        del sys.modules[name]


def test_a_generated_client_names_operations_by_their_ids(
    app, client, generated_client, tokens, binding
):
    """openapi-python-client makes one module per operation, named by its id in its tag's
    package, and the generated ``list_bindings`` lists the Bindings through the app."""
    document = client.get(url("/openapi.json")).json
    expected = {
        (operation["tags"][0], operation["operationId"]) for _, _, operation in operations(document)
    }
    modules = {
        (path.parent.name, path.stem)
        for path in (generated_client / "api").glob("*/*.py")
        if path.stem != "__init__"
    }
    assert modules == expected

    from reposync_client import AuthenticatedClient
    from reposync_client.api.bindings import list_bindings

    transport = httpx.WSGITransport(app=app)
    api = AuthenticatedClient(
        "http://reposync.test", token=tokens.admin, httpx_args={"transport": transport}
    )
    page = list_bindings.sync(client=api)
    assert [item.id for item in page.items] == [binding.id]
