"""GitHub deliveries: schema validation per event, precise refusals, normalized changes."""

from __future__ import annotations

import hashlib
import json
from importlib import resources

import pytest

from reposync.errors import WebhookMalformed, WebhookPayloadInvalid
from reposync.service import github_events
from reposync.service.changes import Outcome, RefMove
from tests import webhooks

SHA_A, SHA_B, NULL = "a" * 40, "b" * 40, "0" * 40


def parse(event: str, body: object, delivery: str = "d-1"):
    return github_events.notification(event, delivery, json.dumps(body).encode())


def test_the_packaged_schema_is_the_recorded_upstream_copy():
    """The package data is octokit's schema unchanged (SHA-256 of shared/contracts/README)."""
    data = resources.files("reposync").joinpath("contracts", github_events.SCHEMA_FILE)
    assert hashlib.sha256(data.read_bytes()).hexdigest() == (
        "ff15ae017ba3b877a44f636806155f986f7b707b31aa7eebde6da1d3366f2840"
    )


@pytest.mark.parametrize(
    ("event", "action", "definition"),
    [
        ("push", None, "push$event"),
        ("ping", None, "ping$event"),
        ("issues", "opened", "issues$opened"),
        ("issues", "no-such-action", "issues_event"),
        ("issue_comment", None, "issue_comment_event"),
        ("repository", "renamed", "repository$renamed"),
    ],
)
def test_a_delivery_is_validated_against_its_own_definition(event, action, definition):
    """The action's definition where the schema has one, else the event's."""
    assert github_events.definition_name(event, action) == definition


def test_every_handled_event_has_its_definitions():
    """Each handled event names a definition that exists (a typo would validate nothing)."""
    definitions = github_events.schema()["definitions"]
    for event in github_events.HANDLED_EVENTS:
        assert github_events.definition_name(event, None) in definitions, event


def test_an_invalid_payload_names_the_place_and_the_reason():
    """422 webhook_payload_invalid: the event, the definition, the JSON path and why."""
    body = webhooks.push(7, "acme/app", "refs/heads/main", SHA_A, SHA_B)
    body["repository"]["id"] = "seven"
    with pytest.raises(WebhookPayloadInvalid) as refused:
        parse("push", body)
    message = refused.value.message
    assert "push$event" in message
    assert "$.repository.id" in message
    assert "'seven' is not of type 'integer'" in message
    assert refused.value.http_status == 422


def test_a_missing_required_field_is_named():
    body = webhooks.issue_comment_edited(7, "acme/app", "new text")
    del body["comment"]
    with pytest.raises(WebhookPayloadInvalid, match="'comment' is a required property"):
        parse("issue_comment", body)


@pytest.mark.parametrize("raw", [b"not json", b"\xff\xfe", b"[" * 100_000])
def test_a_body_that_is_no_json_is_malformed_not_an_error(raw):
    """Garbage and absurd nesting are a 400 (webhook_malformed), never a 500."""
    with pytest.raises(WebhookMalformed):
        github_events.notification("push", "d-1", raw)


def test_an_event_reposync_does_not_act_on_is_ignored_unparsed():
    """Other events are recorded as ignored; their body is not even parsed."""
    notification = github_events.notification("star", "d-1", b"not json")
    assert notification.outcome is Outcome.IGNORED
    assert notification.changes == ()


def test_a_push_becomes_a_content_change_with_its_ref_move():
    notification = parse("push", webhooks.push(7, "acme/app", "refs/heads/main", SHA_A, SHA_B))
    assert notification.outcome is Outcome.ACCEPTED
    (change,) = notification.changes
    assert (change.provider, change.repository_id, change.full_name) == ("github", "7", "acme/app")
    assert change.content_changed
    assert change.refs == (RefMove("refs/heads/main", SHA_A, SHA_B),)
    assert change.object_types == ("git_ref",)
    assert change.occurred_at is not None


def test_a_push_that_creates_or_deletes_a_ref_says_so():
    created = parse("push", webhooks.push(7, "acme/app", "refs/heads/x", NULL, SHA_B))
    deleted = parse("push", webhooks.push(7, "acme/app", "refs/heads/x", SHA_A, NULL))
    assert created.changes[0].refs == (RefMove("refs/heads/x", None, SHA_B),)
    assert deleted.changes[0].refs == (RefMove("refs/heads/x", SHA_A, None),)


def test_an_issue_comment_edit_is_a_content_change():
    (change,) = parse("issue_comment", webhooks.issue_comment_edited(7, "acme/app", "x")).changes
    assert change.content_changed
    assert change.object_types == ("issue_comment",)


def test_repository_events_move_locators_and_visibilities_not_content():
    (renamed,) = parse("repository", webhooks.renamed(7, "acme/new", "old")).changes
    assert renamed.new_locator == "acme/new"
    assert not renamed.content_changed
    (public,) = parse("repository", webhooks.visibility_changed(7, "acme/a", "public")).changes
    assert public.visibility == "public"
    (private,) = parse("repository", webhooks.visibility_changed(7, "acme/a", "private")).changes
    assert private.visibility == "private"
    repository = webhooks.repository(7, "acme/a")
    repository["archived"] = True  # the schema holds a test to it: GitHub says so too
    archived = webhooks.payload("repository", "archived", repository=repository)
    (change,) = parse("repository", archived).changes
    assert change.access is not None
    assert "archived" in (change.access.notice or "")


def test_installation_events_say_where_access_was_lost_or_regained():
    """Repositories removed lose access (a notice); added ones regain it and owe a Run."""
    body = webhooks.payload(
        "installation_repositories",
        "removed",
        repositories_removed=[
            {"id": 7, "node_id": "n", "name": "a", "full_name": "acme/a", "private": True}
        ],
    )
    (removed,) = parse("installation_repositories", body).changes
    assert removed.access is not None
    assert removed.access.notice
    assert not removed.content_changed
    body = webhooks.payload(
        "installation_repositories",
        "added",
        repositories_added=[
            {"id": 8, "node_id": "n", "name": "b", "full_name": "acme/b", "private": True}
        ],
    )
    (added,) = parse("installation_repositories", body).changes
    assert added.access is not None
    assert added.access.notice is None
    assert added.content_changed


def test_an_installation_deleted_without_repositories_concerns_the_whole_installation():
    body = webhooks.payload("installation", "deleted")
    body["installation"]["id"] = 99
    notification = parse("installation", body)
    assert notification.changes == ()
    assert notification.installation_access is not None
    installation, access = notification.installation_access
    assert installation == "99"
    assert access.notice is not None
    assert "uninstalled" in access.notice


def test_a_ping_is_a_pong():
    assert parse("ping", webhooks.payload("ping")).outcome is Outcome.PONG
