"""``GET /runs/{id}/items``: a Run's items by cursor, filtered by state and type."""

from __future__ import annotations

import pytest

from tests.integration.web.conftest import assert_problem, bearer, url


def test_items_page_by_cursor(client, tokens, finished_run):
    """limit + after_id walk the three items once, in id order."""
    headers = bearer(tokens.member)
    first = client.get(url(f"/runs/{finished_run.id}/items?limit=2"), headers=headers).json
    assert len(first["items"]) == 2
    after = first["next_after_id"]
    rest = client.get(url(f"/runs/{finished_run.id}/items?after_id={after}"), headers=headers)
    assert rest.json["next_after_id"] is None
    ids = [i["id"] for i in first["items"] + rest.json["items"]]
    assert ids == sorted(ids)
    assert len(ids) == 3
    item = first["items"][0]
    assert (item["object_type"], item["action"], item["state"]) == (
        "git_ref",
        "create",
        "completed",
    )


def test_items_filter_by_state_and_type(client, tokens, finished_run):
    """state and object_type narrow the items."""
    headers = bearer(tokens.admin)
    path = f"/runs/{finished_run.id}/items"
    assert (
        len(
            client.get(url(path + "?state=completed&object_type=git_ref"), headers=headers).json[
                "items"
            ]
        )
        == 3
    )
    assert client.get(url(path + "?state=failed"), headers=headers).json["items"] == []
    assert client.get(url(path + "?object_type=issue"), headers=headers).json["items"] == []


@pytest.mark.parametrize("query", ["state=done", "object_type=wiki", "limit=0", "after_id=x"])
def test_items_validate_their_query(client, tokens, finished_run, query):
    """Unknown states and types, and bad cursors, are 422."""
    response = client.get(
        url(f"/runs/{finished_run.id}/items?{query}"), headers=bearer(tokens.admin)
    )
    problem = assert_problem(response, 422, "validation_error")
    assert query.split("=")[0] in problem["errors"]["query"]
