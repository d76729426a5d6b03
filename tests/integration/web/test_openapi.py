"""The OpenAPI document: at a stable URL, valid, every operation summarised and secured."""

from __future__ import annotations

from openapi_spec_validator import validate

from reposync.web.app import API_PREFIX
from tests.integration.web.conftest import url

METHODS = {"get", "post", "put", "patch", "delete"}


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
    the webhooks (their signature authenticates them) and Connect GitHub's callback (GitHub
    redirects a browser there: its state authenticates it)."""
    document = client.get(url("/openapi.json")).json
    schemes = document["components"]["securitySchemes"]
    assert schemes["bearerAuth"]["scheme"] == "bearer"
    assert schemes["githubSignature"] == {
        "type": "apiKey",
        "in": "header",
        "name": "X-Hub-Signature-256",
        "description": schemes["githubSignature"]["description"],
    }
    for path, method, operation in operations(document):
        assert operation.get("summary"), (method, path)
        if path.endswith(("/health", "/github/install/callback")):
            assert operation["security"] == []
        elif "/webhooks/" in path:
            assert operation["security"] == [{"githubSignature": []}]
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
