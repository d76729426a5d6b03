"""Forgejo's and Gitea's webhook reader over the deliveries the Forgejo test server sends.

The corpus is what the test server's hooks delivered for real changes
(``tests/forgejo_deliveries.py``): every one must be read, into the repository's
``<id>@<instance>`` id and what the event touched; what reposync makes of it must not
change when Forgejo adds, changes or drops any property reposync does not read; a
property it reads that is missing or out of range is refused naming its path. The
signature must be the hex HMAC of the instance the repository is on: no other
instance's secret, no unconfigured instance, no secret at all.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reposync.config import Settings
from reposync.errors import (
    WebhookMalformed,
    WebhookPayloadInvalid,
    WebhookSignatureInvalid,
    WebhooksNotConfigured,
)
from reposync.forge_instances import ForgejoInstance
from reposync.providers.forgejo import ForgejoProvider, GiteaProvider
from reposync.providers.forgejo import events as forgejo_events
from reposync.providers.forgejo import payloads as forgejo_payloads
from reposync.providers.forgejo.webhooks import ForgejoWebhookReader, sign, web_name
from reposync.providers.notifications import Notification, Outcome, RefMove
from reposync.providers.registry import webhook_reader
from reposync.web.endpoints.webhooks import FORGEJO_SIGNATURE_SCHEME, GITEA_SIGNATURE_SCHEME
from tests.fakes.forgejo import ForgejoFake
from tests.forgejo_deliveries import SECRET, Delivery, record
from tests.payload_paths import JSON_VALUES, read_paths, read_tree, remove, required_paths
from tests.webhook_examples import objects, with_unknown_properties

NOW = datetime(2026, 12, 5, tzinfo=UTC)
OTHER = "git.example.com"
OTHER_SECRET = "the other instance's secret"


@pytest.fixture(scope="module")
def corpus(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[list[Delivery], str, str]]:
    """What the test server's hooks delivered, its instance's name and its URL."""
    with ForgejoFake() as fake:
        found = record(fake, Path(tmp_path_factory.mktemp("forgejo-deliveries")))
        fake.assert_clean()
        yield found, web_name(fake.root_url) or "", fake.root_url


def instances(name: str, url: str, **secrets: str) -> Settings:
    """The test server's instance (secret ``SECRET``) and another one (``OTHER``)."""
    return Settings(
        forgejo_instances=(
            ForgejoInstance(name, url, "t" * 40, {}, secrets.get("mine", SECRET)),
            ForgejoInstance(OTHER, f"https://{OTHER}", "u" * 40, {}, OTHER_SECRET),
        )
    )


@pytest.fixture(scope="module")
def reader(corpus) -> ForgejoWebhookReader:
    _, name, url = corpus
    return ForgejoWebhookReader(instances(name, url))


def receive(reader: ForgejoWebhookReader, headers: dict[str, str], body: bytes) -> Notification:
    """What the service asks of a reader, in its order (``intake.receive_delivery``)."""
    reader.verify(headers, body, reader.secrets(NOW))
    return reader.notification(reader.delivery(headers), headers, body)


def resigned(delivery: Delivery, payload: Any, secret: str = SECRET) -> tuple[dict, bytes]:
    """``payload`` as a JSON body of ``delivery``'s kind, signed with ``secret``."""
    body = json.dumps(payload).encode()
    headers = dict(delivery.headers, **{"content-type": "application/json"})
    headers["x-forgejo-signature"] = headers["x-gitea-signature"] = sign(secret, body)
    return headers, body


def read(reader: ForgejoWebhookReader, delivery: Delivery, payload: Any) -> Notification:
    return receive(reader, *resigned(delivery, payload))


def schema_of(delivery: Delivery) -> dict[str, Any]:
    found = forgejo_events.kind(delivery.event, delivery.event_type)
    assert found is not None
    return forgejo_payloads.SCHEMAS[found.shape]


def json_deliveries(corpus) -> list[Delivery]:
    return [d for d in corpus[0] if d.hook != "form"]


# -- the test server's own deliveries ----------------------------------------------------


def test_the_corpus_holds_every_event_reposync_reads(corpus):
    """Each finer type reposync knows but the wiki's (which the test server does not
    model) was delivered, through a forgejo, a gitea and a form hook."""
    deliveries, _, _ = corpus
    assert {d.event_type for d in deliveries} == set(forgejo_events.TYPES) - {"wiki"}
    assert {d.hook for d in deliveries} == {"forgejo", "gitea", "form"}


def test_every_delivery_names_its_repository_by_id_at_its_instance(corpus, reader):
    """Accepted, one change: the repository ``<id>@<instance>`` and its locator there;
    content changes owe a Run with the types the event touched; a new repository none."""
    deliveries, name, _ = corpus
    for delivery in deliveries:
        notification = receive(reader, delivery.headers, delivery.body)
        payload = delivery.payload()
        assert notification.outcome is Outcome.ACCEPTED, delivery.name
        assert (notification.provider, notification.delivery_id, notification.event) == (
            "forgejo",
            delivery.headers["x-forgejo-delivery"],
            delivery.event,
        )
        (change,) = notification.changes
        assert change.repository_id == f"{payload['repository']['id']}@{name}"
        assert change.full_name == f"{name}/{payload['repository']['full_name']}"
        kind = forgejo_events.TYPES[delivery.event_type]
        assert change.object_types == tuple(t.value for t in kind.object_types)
        assert change.content_changed is (delivery.event_type != "repository")


def test_pushes_are_ref_moves_and_gitea_s_short_refs_are_made_whole(corpus, reader):
    """A push's ref moves from before to after (a created or deleted ref: None); a
    create's ref is its full name whichever hook type shortened it."""
    deliveries, _, _ = corpus
    for delivery in deliveries:
        (change,) = receive(reader, delivery.headers, delivery.body).changes
        payload = delivery.payload()
        if delivery.event == "push":
            before, after = payload["before"], payload["after"]
            assert change.refs == (
                RefMove(
                    payload["ref"],
                    None if set(before) == {"0"} else before,
                    None if set(after) == {"0"} else after,
                ),
            )
        elif delivery.event in ("create", "delete"):
            (move,) = change.refs
            assert move.ref.startswith(
                f"refs/{'heads' if payload['ref_type'] == 'branch' else 'tags'}/"
            )
            assert move.ref.endswith("/" + payload["ref"].rsplit("/", 1)[-1])
            assert (move.before, move.after) == (None, None)
    by_hook = {
        (d.hook, d.headers["x-forgejo-delivery"]): receive(reader, d.headers, d.body).changes[0]
        for d in deliveries
        if d.event == "create"
    }
    forgejo = {c.refs for (hook, _), c in by_hook.items() if hook == "forgejo"}
    gitea = {c.refs for (hook, _), c in by_hook.items() if hook == "gitea"}
    assert len(forgejo) == 4
    assert forgejo == gitea


def test_the_gitea_route_reads_gitea_s_headers_and_names_gitea_s_repositories(corpus):
    """``gitea``'s reader: X-Gitea-Signature and -Delivery, provider ``gitea``, the same
    repository id; Forgejo's headers alone are not Gitea's."""
    deliveries, name, url = corpus
    gitea = webhook_reader("gitea", instances(name, url))
    delivery = next(d for d in deliveries if d.event == "push")
    notification = receive(gitea, delivery.headers, delivery.body)
    assert notification.provider == "gitea" == notification.changes[0].provider
    assert notification.delivery_id == delivery.headers["x-gitea-delivery"]
    only_forgejo = {k: v for k, v in delivery.headers.items() if not k.startswith("x-gitea-")}
    with pytest.raises(WebhookSignatureInvalid, match="X-Gitea-Signature"):
        receive(gitea, only_forgejo, delivery.body)


def test_both_providers_declare_their_reader_and_the_api_documents_its_header():
    """The registry finds each class's reader; the OpenAPI schemes name their headers."""
    settings = Settings()
    for cls, scheme in (
        (ForgejoProvider, FORGEJO_SIGNATURE_SCHEME),
        (GiteaProvider, GITEA_SIGNATURE_SCHEME),
    ):
        found = webhook_reader(cls.name, settings)
        assert isinstance(found, ForgejoWebhookReader)
        assert found.provider == cls.name
        assert found.signature_headers == (scheme["name"],)


# -- tolerant: only what reposync reads matters ------------------------------------------


def test_unknown_properties_at_every_level_change_nothing(corpus, reader):
    """Forgejo adds fields with each release: a new property in every object is ignored."""
    for delivery in json_deliveries(corpus):
        grown = with_unknown_properties(delivery.payload())
        assert sum(1 for _ in objects(grown)) > 1
        assert read(reader, delivery, grown) == read(reader, delivery, delivery.payload())


def test_what_reposync_reads_is_all_it_needs(corpus, reader):
    """Each delivery pruned to the properties reposync reads means the same."""
    for delivery in json_deliveries(corpus):
        pruned = read_tree(schema_of(delivery), delivery.payload())
        assert read(reader, delivery, pruned) == read(reader, delivery, delivery.payload())


def test_each_property_reposync_needs_is_named_when_missing(corpus, reader):
    """Removing any required property is a 422 that names its path."""
    for delivery in json_deliveries(corpus):
        for path in required_paths(schema_of(delivery), delivery.payload()):
            payload = delivery.payload()
            remove(payload, path)
            with pytest.raises(WebhookPayloadInvalid) as refused:
                read(reader, delivery, payload)
            assert f"lacks {path}," in refused.value.message, delivery.name


@st.composite
def unread_mutations(draw: st.DrawFn, deliveries: list[Delivery]) -> tuple[Delivery, Any]:
    """A delivery with random changes where reposync does not read: a property added,
    replaced by any JSON value, or removed, at any depth."""
    delivery = draw(st.sampled_from(deliveries))
    payload = delivery.payload()
    read_here = read_paths(schema_of(delivery), payload)
    for _ in range(draw(st.integers(1, 5))):
        path, target = draw(st.sampled_from(list(objects(payload))))
        unread = [k for k in target if f"{path}.{k}" not in read_here]
        change = draw(st.sampled_from(["add", "replace", "remove"]))
        if change == "add" or not unread:
            target[f"x_{draw(st.text(min_size=1, max_size=8))}"] = draw(JSON_VALUES)
        elif change == "replace":
            target[draw(st.sampled_from(unread))] = draw(JSON_VALUES)
        else:
            del target[draw(st.sampled_from(unread))]
    return delivery, payload


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_changes_where_reposync_does_not_read_never_change_its_reading(corpus, reader, data):
    """Hypothesis over the corpus: whatever happens to unread properties, the same reading."""
    delivery, payload = data.draw(unread_mutations(json_deliveries(corpus)))
    assert read(reader, delivery, payload) == read(reader, delivery, delivery.payload())


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_any_value_where_reposync_reads_is_read_or_refused_never_a_crash(corpus, reader, data):
    """One property reposync reads replaced by any JSON value: a reading, a 422 naming
    the event, or (its repository's address no longer the instance's) a 401."""
    delivery = data.draw(st.sampled_from(json_deliveries(corpus)))
    payload = delivery.payload()
    paths = sorted(read_paths(schema_of(delivery), payload) - {"$"})
    path = data.draw(st.sampled_from(paths))
    parts = path[2:].split(".")
    node: Any = payload
    for part in parts[:-1]:
        node = node[part]
    node[parts[-1]] = data.draw(JSON_VALUES | st.integers(min_value=-(10**30), max_value=10**30))
    try:
        read(reader, delivery, payload)
    except (WebhookPayloadInvalid, WebhookSignatureInvalid) as exc:
        refused = exc
    else:
        return
    if isinstance(refused, WebhookSignatureInvalid):
        assert path in ("$.repository.html_url", "$.repository.full_name"), refused.message
    else:
        assert refused.message.startswith(f"the {delivery.event} delivery"), refused.message


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        ("repository.id", 0, "$.repository.id out of range"),
        ("repository.id", 2**63, "$.repository.id out of range"),
        ("repository.id", "12", "$.repository.id that reposync cannot read"),
        ("repository.full_name", "acme/app/extra", "$.repository.full_name"),
        ("repository.full_name", "a" * 600 + "/b", "$.repository.full_name"),
        ("repository.html_url", "ftp://127.0.0.1/acme-org/app", "$.repository.html_url"),
        ("before", "not-a-sha", "$.before"),
        ("after", "A" * 40, "$.after"),
        ("ref", "", "$.ref"),
        ("ref", "r" * 5000, "$.ref"),
    ],
)
def test_a_value_reposync_reads_out_of_range_is_refused_naming_it(
    corpus, reader, path, value, words
):
    """422 ``webhook_payload_invalid`` naming the path, before anything is recorded."""
    delivery = next(d for d in corpus[0] if d.hook == "forgejo" and d.event == "push")
    payload = delivery.payload()
    *parents, last = path.split(".")
    node = payload
    for part in parents:
        node = node[part]
    node[last] = value
    with pytest.raises(WebhookPayloadInvalid, match=words.replace("$", r"\$").replace(".", r"\.")):
        read(reader, delivery, payload)


def test_an_html_url_that_is_not_the_repository_s_is_refused(corpus, reader):
    """html_url must end with the repository's OWNER/NAME: it is how the instance is named."""
    delivery = next(d for d in corpus[0] if d.event == "issues")
    payload = delivery.payload()
    payload["repository"]["html_url"] = payload["repository"]["html_url"] + "-fork"
    with pytest.raises(WebhookPayloadInvalid, match="names no instance"):
        read(reader, delivery, payload)


def test_events_reposync_does_not_act_on_are_recorded_as_ignored(corpus, reader):
    """fork, package (whose event header Forgejo leaves empty): ignored, by the type."""
    delivery = next(d for d in corpus[0] if d.event == "issues")
    for event, event_type in (("fork", "fork"), ("", "package")):
        headers = dict(delivery.headers)
        headers["x-forgejo-event"], headers["x-forgejo-event-type"] = event, event_type
        notification = receive(reader, headers, delivery.body)
        assert (notification.outcome, notification.event) == (Outcome.IGNORED, event or event_type)


def test_a_sender_without_event_types_is_read_by_its_event(corpus, reader):
    """An older Gitea sends no X-*-Event-Type: the event says enough (a review's line
    comment is event pull_request_comment, never an issue comment)."""
    for delivery in json_deliveries(corpus):
        headers = {k: v for k, v in delivery.headers.items() if not k.endswith("-event-type")}
        (change,) = receive(reader, headers, delivery.body).changes
        kind = forgejo_events.EVENTS[delivery.event]
        assert change.object_types == tuple(t.value for t in kind.object_types), delivery.name


# -- signatures: each instance its own ---------------------------------------------------


def test_a_missing_or_wrong_signature_is_refused(corpus, reader):
    """No header, an empty one (a hook without a secret), another secret, a body changed
    after signing: 401 each."""
    delivery = next(d for d in corpus[0] if d.event == "push")
    for signature in (None, "", sign("not the secret", delivery.body)):
        headers = {k: v for k, v in delivery.headers.items() if k != "x-forgejo-signature"}
        if signature is not None:
            headers["x-forgejo-signature"] = signature
        with pytest.raises(WebhookSignatureInvalid):
            receive(reader, headers, delivery.body)
    with pytest.raises(WebhookSignatureInvalid):
        receive(reader, delivery.headers, delivery.body.replace(b"main", b"evil"))


def test_another_instance_s_secret_never_authenticates_a_delivery(corpus, reader):
    """A delivery about the test server's repository signed with the other instance's
    secret is 401; the other instance's own delivery (its html_url on its host) is read
    under its name with its secret, and refused with the test server's."""
    delivery = next(d for d in corpus[0] if d.hook == "forgejo" and d.event == "issues")
    with pytest.raises(WebhookSignatureInvalid, match="another's deliveries"):
        receive(reader, *resigned(delivery, delivery.payload(), OTHER_SECRET))
    theirs = delivery.payload()
    theirs["repository"]["html_url"] = f"https://{OTHER}/{theirs['repository']['full_name']}"
    (change,) = receive(reader, *resigned(delivery, theirs, OTHER_SECRET)).changes
    assert change.repository_id == f"{theirs['repository']['id']}@{OTHER}"
    with pytest.raises(WebhookSignatureInvalid):
        receive(reader, *resigned(delivery, theirs, SECRET))


def test_an_instance_is_found_by_its_url_as_well_as_its_name(corpus):
    """Configured under another name, with the test server's URL: matched by the URL,
    and the repository named by the configured name. A default port is no port."""
    deliveries, _, url = corpus
    reader = ForgejoWebhookReader(instances("code.example.org", url))
    delivery = next(d for d in deliveries if d.event == "release")
    (change,) = receive(reader, delivery.headers, delivery.body).changes
    assert change.repository_id.endswith("@code.example.org")
    assert web_name("https://Git.Example.com:443/forgejo/") == "git.example.com/forgejo"
    assert web_name("http://git.example.com:8080") == "git.example.com:8080"


def test_a_repository_on_no_configured_instance_is_refused(corpus, reader):
    """Signed with a configured secret, but its repository on an address no instance
    has: 401, whatever the event."""
    delivery = next(d for d in corpus[0] if d.event == "issues")
    payload = delivery.payload()
    payload["repository"]["html_url"] = (
        f"https://elsewhere.example/{payload['repository']['full_name']}"
    )
    with pytest.raises(WebhookSignatureInvalid, match=r"elsewhere\.example"):
        receive(reader, *resigned(delivery, payload))


def test_without_any_secret_deliveries_are_refused_and_an_instance_without_one_too(corpus):
    """No instance has a webhook_secret: 503 before anything; one without while another
    has: its deliveries are 401 (signed with the other's secret or nothing)."""
    deliveries, name, url = corpus
    none = ForgejoWebhookReader(Settings(forgejo_instances=(ForgejoInstance(name, url, "t" * 40),)))
    with pytest.raises(WebhooksNotConfigured, match="webhook_secret"):
        none.secrets(NOW)
    reader = ForgejoWebhookReader(instances(name, url, mine=""))
    delivery = next(d for d in deliveries if d.event == "issues")
    for secret in (SECRET, OTHER_SECRET):
        with pytest.raises(WebhookSignatureInvalid):
            receive(reader, *resigned(delivery, delivery.payload(), secret))


def test_bodies_forgejo_never_sends_are_malformed(corpus, reader):
    """Signed, but not JSON, or a content type Forgejo does not use: 400."""
    delivery = next(d for d in corpus[0] if d.event == "push")
    for content_type, body in (("application/json", b"{not json"), ("text/plain", b"{}")):
        headers = dict(delivery.headers, **{"content-type": content_type})
        headers["x-forgejo-signature"] = sign(SECRET, body)
        with pytest.raises(WebhookMalformed):
            receive(reader, headers, body)
    headers = {k: v for k, v in delivery.headers.items() if k != "x-forgejo-delivery"}
    with pytest.raises(WebhookMalformed, match="X-Forgejo-Delivery"):
        reader.delivery(headers)


def test_the_reader_reads_no_secret_into_its_words(corpus, reader):
    """No refusal repeats a secret or a token (they live in the settings only)."""
    delivery = next(d for d in corpus[0] if d.event == "issues")
    words = []
    for secret in ("nope", OTHER_SECRET):
        with pytest.raises(WebhookSignatureInvalid) as refused:
            receive(reader, *resigned(delivery, delivery.payload(), secret))
        words.append(refused.value.message)
    assert not any(s in w for s in (SECRET, OTHER_SECRET, "t" * 40) for w in words)
    assert SECRET not in repr(instances("a.example", "https://a.example"))
