"""The health endpoint answers from the database it can (or cannot) reach."""

from __future__ import annotations

from reposync.config import Settings
from reposync.models.db import Database
from reposync.web.app import create_app
from tests.servers import free_port


def test_health_is_ok_with_a_reachable_database(settings, sqlite_db):
    """200 and ``ok`` when the database answers."""
    client = create_app(settings, db=sqlite_db).test_client()
    response = client.get("/api/ext/v1/sync/health")
    assert response.status_code == 200
    assert response.json == {"status": "ok", "database": "ok"}


def test_health_is_503_without_the_database(tmp_path):
    """503 and ``unreachable`` when the database does not answer."""
    db = Database(f"postgresql://nobody@127.0.0.1:{free_port()}/none")
    client = create_app(Settings(data_dir=tmp_path), db=db).test_client()
    response = client.get("/api/ext/v1/sync/health")
    assert response.status_code == 503
    assert response.json["database"] == "unreachable"


def test_openapi_document_is_served(settings, sqlite_db):
    """The OpenAPI document lists the health operation."""
    client = create_app(settings, db=sqlite_db).test_client()
    document = client.get("/api/ext/v1/sync/openapi.json").json
    assert "/api/ext/v1/sync/health" in document["paths"]
