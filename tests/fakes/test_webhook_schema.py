"""GitHub's webhook schema as the tests hold payloads to it: the recorded upstream copy."""

from __future__ import annotations

import hashlib

from tests import webhooks
from tests.fakes import webhook_schema


def test_the_schema_is_the_recorded_upstream_copy():
    """octokit's schema unchanged (the SHA-256 recorded in shared/contracts/README.md)."""
    digest = hashlib.sha256(webhook_schema.SCHEMA_PATH.read_bytes()).hexdigest()
    assert digest == "ff15ae017ba3b877a44f636806155f986f7b707b31aa7eebde6da1d3366f2840"


def test_a_payload_the_schema_rules_out_is_named_with_its_place():
    """A repository id that is no integer is a problem at repository/id."""
    body = webhooks.push(7, "acme/app", "refs/heads/main", "a" * 40, "b" * 40)
    body["repository"]["id"] = "seven"
    problems = webhook_schema.payload_problems("push", body)
    assert any(p.startswith("repository/id:") for p in problems), problems


def test_the_narrowest_definition_is_the_actions():
    """issues + opened is checked against issues$opened, an unknown action the event's."""
    assert webhooks.definition_name("issues", "opened") == "issues$opened"
    assert webhooks.definition_name("issues", "no-such-action") == "issues_event"
    assert webhooks.definition_name("push", None) == "push$event"
