"""The tolerant reader over GitHub's own documented deliveries (every set, GHES too).

Each example of ``@octokit/webhooks-examples`` for an event reposync handles must be read;
what reposync makes of it must not change when GitHub adds properties anywhere, leaves
out or changes any property reposync does not read, or sends only what it reads; and
when a property it reads goes missing or out of range the refusal names it. The effects
of each example through the API are checked in
``tests/integration/web/webhooks/test_webhook_examples.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reposync.errors import WebhookPayloadInvalid
from reposync.providers.github import events as github_events
from reposync.providers.github import payloads as github_payloads
from reposync.providers.notifications import Notification, Outcome
from tests.payload_paths import JSON_VALUES, read_paths, read_tree, remove, required_paths
from tests.webhook_examples import Example, examples, objects, sets, with_unknown_properties

EXAMPLES = examples()


def read(example: Example, payload: Any) -> Notification:
    return github_events.notification(example.event, "d-1", json.dumps(payload).encode())


def test_the_corpus_has_the_sets_the_issue_names():
    """api.github.com and the GitHub Enterprise Server sets, every handled event in both."""
    names = sets()
    assert names[0] == "api.github.com"
    assert any(name.startswith("ghes-") for name in names)
    for wanted in ("api.github.com", "ghes-3"):
        events = {e.event for e in EXAMPLES if any(s.startswith(wanted) for s in e.sets)}
        assert events == github_events.HANDLED_EVENTS, wanted


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_every_documented_example_is_read(example):
    """Accepted (a ping is a pong), with a change for each repository it names."""
    notification = read(example, example.payload)
    if example.event == "ping":
        assert notification.outcome is Outcome.PONG
        return
    assert notification.outcome is Outcome.ACCEPTED
    if "repository" in example.payload and example.event != "installation":
        (change,) = notification.changes
        assert change.repository_id == str(example.payload["repository"]["id"])


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_unknown_properties_at_every_level_change_nothing(example):
    """GitHub adds fields without notice: a new property in every object is ignored."""
    grown = with_unknown_properties(example.fresh())
    assert sum(1 for _ in objects(grown)) > 1
    assert read(example, grown) == read(example, example.payload)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_what_reposync_reads_is_all_it_needs(example):
    """The example pruned to the properties reposync reads means the same."""
    schema = github_payloads.SCHEMAS[example.event]
    assert read(example, read_tree(schema, example.payload)) == read(example, example.payload)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_each_property_reposync_needs_is_named_when_missing(example):
    """Removing any required property is a 422 that names its path."""
    schema = github_payloads.SCHEMAS[example.event]
    for path in required_paths(schema, example.payload):
        payload = example.fresh()
        remove(payload, path)
        with pytest.raises(WebhookPayloadInvalid) as refused:
            read(example, payload)
        assert f"lacks {path}," in refused.value.message


@st.composite
def unread_mutations(draw: st.DrawFn) -> tuple[Example, Any]:
    """An example with random changes where reposync does not read: a property added,
    replaced by any JSON value, or removed."""
    example = draw(st.sampled_from(EXAMPLES))
    payload = example.fresh()
    read_here = read_paths(github_payloads.SCHEMAS[example.event], payload)
    for _ in range(draw(st.integers(1, 5))):
        places = [(p, o) for p, o in objects(payload)]
        path, target = draw(st.sampled_from(places))
        unread = [k for k in target if f"{path}.{k}" not in read_here]
        kind = draw(st.sampled_from(["add", "replace", "remove"]))
        if kind == "add" or not unread:
            target[f"x_{draw(st.text(min_size=1, max_size=8))}"] = draw(JSON_VALUES)
        elif kind == "replace":
            target[draw(st.sampled_from(unread))] = draw(JSON_VALUES)
        else:
            del target[draw(st.sampled_from(unread))]
    return example, payload


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unread_mutations())
def test_changes_where_reposync_does_not_read_never_change_its_reading(case):
    """Hypothesis over the corpus: whatever happens to unread properties, the same reading."""
    example, payload = case
    assert read(example, payload) == read(example, example.payload)


@st.composite
def read_mutations(draw: st.DrawFn) -> tuple[Example, Any]:
    """An example with one property reposync reads replaced by any JSON value."""
    example = draw(st.sampled_from(EXAMPLES))
    payload = example.fresh()
    paths = sorted(read_paths(github_payloads.SCHEMAS[example.event], payload) - {"$"})
    if paths:
        path = draw(st.sampled_from(paths))
        parts = path[2:].replace("[", ".[").split(".")
        node: Any = payload
        for part in parts[:-1]:
            node = node[int(part[1:-1])] if part.startswith("[") else node[part]
        last = parts[-1]
        value = draw(JSON_VALUES | st.integers(min_value=-(10**30), max_value=10**30))
        if last.startswith("["):
            node[int(last[1:-1])] = value
        else:
            node[last] = value
    return example, payload


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(read_mutations())
def test_any_value_where_reposync_reads_is_read_or_refused_never_a_crash(case):
    """Out of range, of another type, nested: a reading or a 422, never another error."""
    example, payload = case
    try:
        read(example, payload)
    except WebhookPayloadInvalid as refused:
        message = refused.message
    else:
        return
    assert message.startswith(f"the {example.event} delivery")
