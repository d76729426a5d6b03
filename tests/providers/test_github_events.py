"""GitHub deliveries: read tolerantly, refused precisely, normalized into changes."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from reposync.errors import WebhookMalformed, WebhookPayloadInvalid
from reposync.providers.github import events as github_events
from reposync.providers.github import payloads as github_payloads
from reposync.providers.notifications import Outcome, RefMove
from tests import webhooks

SHA_A, SHA_B, NULL = "a" * 40, "b" * 40, "0" * 40


def parse(event: str, body: object, delivery: str = "d-1"):
    return github_events.notification(event, delivery, json.dumps(body).encode())


def refusal(event: str, body: object) -> str:
    with pytest.raises(WebhookPayloadInvalid) as refused:
        parse(event, body)
    assert refused.value.http_status == 422
    return refused.value.message


def test_every_handled_event_has_a_reader_schema():
    """What reposync reads is declared for each event it acts on, and for no other."""
    assert set(github_payloads.SCHEMAS) == github_events.HANDLED_EVENTS


def test_a_value_of_the_wrong_type_names_the_place_and_the_reason():
    """422 webhook_payload_invalid: the event, the JSON path and why."""
    body = webhooks.push(7, "acme/app", "refs/heads/main", SHA_A, SHA_B)
    body["repository"]["id"] = "seven"
    message = refusal("push", body)
    assert "the push delivery" in message
    assert "$.repository.id" in message
    assert "'seven' is not of type 'integer'" in message


def test_a_missing_field_reposync_reads_is_named_by_its_path():
    body = webhooks.push(7, "acme/app", "refs/heads/main", SHA_A, SHA_B)
    del body["repository"]["full_name"]
    assert "lacks $.repository.full_name" in refusal("push", body)
    body = webhooks.payload("installation", "deleted")
    del body["installation"]
    assert "lacks $.installation" in refusal("installation", body)


def test_fields_reposync_does_not_read_may_be_missing_or_anything():
    """A comment event without its comment, with an enterprise object and new fields at
    every level, is read: reposync reads only the repository of it."""
    body = webhooks.issue_comment_edited(7, "acme/app", "x")
    del body["comment"]
    body["enterprise"] = {"id": 1, "slug": "acme-corp", "whatever": [1, {"x": None}]}
    body["repository"]["is_template"] = "not even a boolean"
    body["issue"]["brand_new_field"] = {"nested": True}
    (change,) = parse("issue_comment", body).changes
    assert (change.repository_id, change.full_name) == ("7", "acme/app")
    assert change.content_changed


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (253_402_300_800, "out of range"),
        (10**20, "out of range"),
        (-(10**15), "out of range"),
        (-1, "out of range"),
        ("2026-13-40T00:00:00Z", "no date-time"),
        ("10000-01-01T00:00:00Z", "no date-time"),
        ("2026-12-05T10:00:00", "no date-time"),
        (1.5, "cannot read"),
        (True, "cannot read"),
    ],
)
def test_a_time_out_of_range_or_unreadable_is_refused_not_a_crash(value, why):
    """pushed_at past year 9999, before 1970 or without an offset: 422, never a 500."""
    body = webhooks.push(7, "acme/app", "refs/heads/main", SHA_A, SHA_B, pushed_at=1)
    body["repository"]["pushed_at"] = value
    message = refusal("push", body)
    assert "$.repository.pushed_at" in message
    assert why in message


def test_the_extremes_of_a_time_are_read():
    """The epoch and the last second of year 9999 are times a datetime holds."""
    for value, expected in [
        (0, datetime(1970, 1, 1, tzinfo=UTC)),
        (github_payloads.MAX_EPOCH, datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)),
        ("9999-12-31T23:59:59+00:00", datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)),
        ("2026-12-05T11:00:00+01:00", datetime(2026, 12, 5, 10, tzinfo=UTC)),
        (None, None),
    ]:
        body = webhooks.push(7, "acme/app", "refs/heads/main", SHA_A, SHA_B)
        body["repository"]["pushed_at"] = value
        assert parse("push", body).changes[0].occurred_at == expected


@pytest.mark.parametrize("value", [0, -7, 2**63, 10**30, "7", None])
def test_an_id_out_of_range_is_refused(value):
    body = webhooks.push(7, "acme/app", "refs/heads/main", SHA_A, SHA_B)
    body["repository"]["id"] = value
    assert "$.repository.id" in refusal("push", body)
    body = webhooks.payload("installation", "deleted")
    body["installation"]["id"] = value
    assert "$.installation.id" in refusal("installation", body)


@pytest.mark.parametrize("sha", ["x" * 40, "A" * 40, "a" * 39, "", 7])
def test_a_push_whose_object_ids_are_not_git_ids_is_refused(sha):
    body = webhooks.push(7, "acme/app", "refs/heads/main", SHA_A, SHA_B)
    body["after"] = sha
    assert "$.after" in refusal("push", body)


def test_a_push_in_a_sha256_repository_is_read():
    after = "c" * 64
    body = webhooks.push(7, "acme/app", "refs/heads/main", "0" * 64, SHA_B)
    body["after"] = after
    assert parse("push", body).changes[0].refs == (RefMove("refs/heads/main", None, after),)


@pytest.mark.parametrize(
    "full_name",
    [
        "acme/app/../../x",
        "evil/<script>",
        "acme",
        "acme/..",
        "acme/.",
        "-acme/app",
        "a" * 40 + "/x",
    ],
)
def test_a_rename_to_a_name_outside_githubs_grammar_is_refused(full_name):
    """The new owner/name becomes a Binding's locator only when GitHub could name it so."""
    body = webhooks.renamed(7, "acme/new", "old")
    body["repository"]["full_name"] = full_name
    assert "$.repository.full_name" in refusal("repository", body)


def test_a_rename_to_a_good_name_moves_the_locator():
    (change,) = parse("repository", webhooks.renamed(7, "octo-org/app.v2_x", "old")).changes
    assert change.new_locator == "octo-org/app.v2_x"


@pytest.mark.parametrize(
    ("action", "stated", "expected"),
    [
        ("privatized", "public", "private"),  # as in GitHub's own examples
        ("privatized", "internal", "internal"),
        ("privatized", "galactic", "private"),
        ("privatized", None, "private"),
        ("publicized", "private", "public"),
        ("publicized", "internal", "public"),
    ],
)
def test_the_action_says_the_new_visibility_and_visibility_only_tells_internal(
    action, stated, expected
):
    """A privatized repository whose payload still says public is private."""
    body = webhooks.visibility_changed(
        7, "acme/a", "public" if action == "publicized" else "private"
    )
    body["repository"]["visibility"] = stated
    assert parse("repository", body).changes[0].visibility == expected


def test_a_create_of_another_kind_of_ref_is_content_without_a_ref_hint():
    body = webhooks.payload(
        "create", ref="v1", ref_type="tag", repository=webhooks.repository(7, "a/b")
    )
    assert parse("create", body).changes[0].refs == (RefMove("refs/tags/v1", None, None),)
    body["ref_type"] = "repository"
    (change,) = parse("create", body).changes
    assert change.refs == ()
    assert change.content_changed


def test_the_body_must_be_an_object():
    assert "cannot read" in refusal("push", [1, 2])
    assert "cannot read" in refusal("ping", "hello")


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
    assert notification.connection_access is not None
    connection, access = (
        notification.connection_access.connection_id,
        notification.connection_access.access,
    )
    assert connection == "github:installation:99"
    assert access.notice is not None
    assert "uninstalled" in access.notice


def test_a_ping_is_a_pong():
    assert parse("ping", webhooks.payload("ping")).outcome is Outcome.PONG
