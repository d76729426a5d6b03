"""Webhooks: the fake delivers events to configured URLs as GitHub's Hookshot does.

A repository's hooks (``GitHubFake.add_webhook``) and a GitHub App's webhook
(``GitHubFake.set_app_webhook``) receive the events the fake's real state changes cause:
pushes through smart HTTP and the REST writes it serves (``webhook_events`` builds them).
Each delivery is one HTTP POST, as GitHub sends it:

* ``Content-Type: application/json`` (or ``application/x-www-form-urlencoded`` with the
  JSON in ``payload=`` for a hook whose ``content_type`` is ``form``), the body compact
  UTF-8 JSON;
* ``User-Agent: GitHub-Hookshot/<7 hex>``, ``X-GitHub-Event``, ``X-GitHub-Delivery`` (a
  GUID, the same on every redelivery), ``X-GitHub-Hook-ID``,
  ``X-GitHub-Hook-Installation-Target-Type``/``-ID`` (``repository`` and its id, or
  ``integration`` and the App's id);
* with a secret, ``X-Hub-Signature-256: sha256=<HMAC-SHA256 of the raw body>`` and the
  legacy ``X-Hub-Signature: sha1=<HMAC-SHA1>``; without one, neither;
* a 2xx answer within 10 s (``WebhookHub.timeout``) succeeds; anything else fails. GitHub
  does not retry on its own: a failed delivery stays failed until redelivered.

Deliveries leave from one background thread, in the order the changes happened, unless a
test asks otherwise. What tests control (``fake.webhooks``):

* ``pause()`` holds deliveries; ``release(order=...)`` sends the held ones in order,
  reversed or shuffled (seeded), then delivers normally again;
* ``out_of_order(window, order=..., seed=...)`` keeps doing that by itself: every
  ``window`` deliveries leave permuted (``in_order()`` ends it);
* ``flush(timeout)`` waits until every delivery not held has been attempted: tests wait
  on it, never on a sleep;
* ``redeliver(delivery)``: the same body and GUID again, as the "Redeliver" button;
* ``faults``: ``drop`` (never sent, recorded failed), ``duplicate`` (sent twice),
  ``latency`` (sent late), ``timeout`` (the fake gives up waiting for the answer after
  ``seconds``: the receiver may have acted while GitHub records a failure) and
  ``bad_signature`` (signed with another secret), chosen by event, action and hook, with
  ``count``/``probability``/``seed`` as ``faults.Faults``.

Every delivery is recorded (``fake.webhook_deliveries``), and every payload is checked
against GitHub's webhook schema when it is sent (problems go to ``violations``, which
``GitHubFake.assert_clean`` reports).
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import random
import secrets
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote_plus

import requests

from tests.fakes.forge_server.clock import iso
from tests.fakes.github import webhook_payloads as payloads
from tests.fakes.webhook_schema import payload_problems

if TYPE_CHECKING:
    from tests.fakes.github.models import App, Installation, Repo, User
    from tests.fakes.github.server import GitHubFake

Json = dict[str, Any]
#: GitHub's answer deadline: a receiver that takes longer has failed the delivery.
DELIVERY_TIMEOUT = 10.0
#: A payload over 25 MB is not delivered at all (GitHub: "capped at 25 MB").
MAX_PAYLOAD_BYTES = 25 * 1024 * 1024
CONTENT_TYPES = {"json": "application/json", "form": "application/x-www-form-urlencoded"}
ORDERS = ("fifo", "reverse", "shuffle")
FAULT_KINDS = ("drop", "duplicate", "latency", "timeout", "bad_signature")


def signature_256(secret: str | bytes, body: bytes) -> str:
    """``X-Hub-Signature-256``: ``sha256=`` and the HMAC-SHA256 hex of the raw body."""
    key = secret.encode() if isinstance(secret, str) else secret
    return "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()


def signature_1(secret: str | bytes, body: bytes) -> str:
    """``X-Hub-Signature`` (legacy, still sent): ``sha1=`` and the HMAC-SHA1 hex."""
    key = secret.encode() if isinstance(secret, str) else secret
    return "sha1=" + hmac.new(key, body, hashlib.sha1).hexdigest()


@dataclass
class Webhook:
    """A repository's webhook (``repo_id``) or a GitHub App's (``app_id``)."""

    id: int
    url: str
    secret: str | None
    events: tuple[str, ...]
    content_type: str
    active: bool
    created_at: datetime
    updated_at: datetime
    repo_id: int | None = None
    app_id: int | None = None

    def wants(self, event: str) -> bool:
        """Subscribed to ``event`` (``*`` is every event); ``ping`` always is."""
        return self.active and (event == "ping" or "*" in self.events or event in self.events)

    @property
    def target_type(self) -> str:
        return "repository" if self.repo_id is not None else "integration"

    @property
    def target_id(self) -> int:
        target = self.repo_id if self.repo_id is not None else self.app_id
        assert target is not None
        return target


@dataclass(frozen=True)
class Attempt:
    """One POST of a delivery (the first, a redelivery or a duplicate)."""

    delivery_id: int  # GitHub's id of this attempt (a redelivery gets its own)
    redelivery: bool
    status_code: int | None  # None: no HTTP answer (dropped, refused, timed out)
    error: str | None
    duration: float  # seconds until the answer (or the failure)
    at: datetime  # the fake clock when it was sent
    fault: str | None = None  # the injected fault, if one fired

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


@dataclass
class WebhookDelivery:
    """One event for one hook: its GUID, the exact body, and every attempt to send it."""

    id: int  # GitHub's delivery id (the first attempt's)
    guid: str  # X-GitHub-Delivery: the same on every attempt
    hook_id: int
    event: str
    action: str | None
    repository_id: int | None
    payload: Json
    body: bytes  # the raw body every attempt sends (signed as is)
    queued_at: datetime
    attempts: list[Attempt] = field(default_factory=list)
    #: The headers of the latest attempt (signatures included).
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def status_code(self) -> int | None:
        """The latest attempt's answer (None before any, or without an answer)."""
        return self.attempts[-1].status_code if self.attempts else None

    @property
    def status(self) -> str:
        """``pending`` (not attempted yet), ``ok`` (the latest attempt got a 2xx) or
        ``failed`` (it did not: an error status, no answer, or dropped)."""
        if not self.attempts:
            return "pending"
        return "ok" if self.attempts[-1].ok else "failed"

    @property
    def delivered(self) -> bool:
        return any(a.ok for a in self.attempts)


@dataclass
class WebhookFaultRule:
    """A fault for outgoing deliveries, shaped as ``faults.FaultRule``."""

    kind: str
    event: str = "*"  # "*" for any
    action: str | None = None  # None for any
    hook_id: int | None = None
    count: int | None = 1
    probability: float = 1.0
    seconds: float = 0.0
    seed: int | None = 0
    hits: int = 0
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def matches(self, delivery: WebhookDelivery) -> bool:
        if self.count is not None and self.hits >= self.count:
            return False
        if self.event != "*" and self.event != delivery.event:
            return False
        if self.action is not None and self.action != delivery.action:
            return False
        return self.hook_id is None or self.hook_id == delivery.hook_id


class WebhookFaults:
    """Injected delivery faults; the first matching rule that fires applies."""

    def __init__(self) -> None:
        self._rules: list[WebhookFaultRule] = []
        self._lock = threading.Lock()

    def add(
        self,
        kind: str,
        event: str = "*",
        *,
        action: str | None = None,
        hook_id: int | None = None,
        count: int | None = 1,
        probability: float = 1.0,
        seed: int | None = 0,
        seconds: float = 0.0,
    ) -> WebhookFaultRule:
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown webhook fault kind {kind!r} (one of {FAULT_KINDS})")
        rule = WebhookFaultRule(
            kind=kind,
            event=event,
            action=action,
            hook_id=hook_id,
            count=count,
            probability=probability,
            seconds=seconds,
            seed=seed,
        )
        with self._lock:
            self._rules.append(rule)
        return rule

    # Shorthands; ``where`` takes add()'s selectors (action, hook_id, count, probability, seed).

    def drop(self, event: str = "*", **where: Any) -> WebhookFaultRule:
        return self.add("drop", event, **where)

    def duplicate(self, event: str = "*", **where: Any) -> WebhookFaultRule:
        return self.add("duplicate", event, **where)

    def latency(self, event: str, seconds: float, **where: Any) -> WebhookFaultRule:
        return self.add("latency", event, seconds=seconds, **where)

    def timeout(self, event: str, seconds: float, **where: Any) -> WebhookFaultRule:
        return self.add("timeout", event, seconds=seconds, **where)

    def bad_signature(self, event: str = "*", **where: Any) -> WebhookFaultRule:
        return self.add("bad_signature", event, **where)

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def pick(self, delivery: WebhookDelivery, *, redelivery: bool) -> WebhookFaultRule | None:
        """The rule that fires for this attempt (a redelivery is never faulted: it is the
        test's own repair)."""
        if redelivery:
            return None
        with self._lock:
            for rule in self._rules:
                if rule.matches(delivery) and rule.rng.random() < rule.probability:
                    rule.hits += 1
                    return rule
        return None


@dataclass(frozen=True)
class _Job:
    delivery: WebhookDelivery
    redelivery: bool


class WebhookHub:
    """The fake's hooks, its outgoing queue and sender thread, and the test controls."""

    def __init__(self, fake: GitHubFake) -> None:
        self.fake = fake
        self.hooks: dict[int, Webhook] = {}
        self.deliveries: list[WebhookDelivery] = []
        self.faults = WebhookFaults()
        #: Payloads that broke GitHub's webhook schema (``assert_clean`` reports them).
        self.violations: list[str] = []
        #: Events not delivered because their payload was over 25 MB (event, bytes).
        self.oversized: list[tuple[str, int]] = []
        #: How long a receiver may take to answer (GitHub: 10 s).
        self.timeout = DELIVERY_TIMEOUT
        #: Larger payloads are not delivered (GitHub: 25 MB; tests may lower it).
        self.max_payload_bytes = MAX_PAYLOAD_BYTES
        #: GitHub-Hookshot/<short sha of the deployed Hookshot>.
        self.user_agent = "GitHub-Hookshot/" + secrets.token_hex(4)[:7]
        self._hook_ids = itertools.count(490_000_001)
        self._delivery_ids = itertools.count(11_000_000_001)
        self._zen = random.Random(0)
        self._cond = threading.Condition()
        self._queue: deque[_Job] = deque()
        self._held: list[_Job] = []
        self._paused = False
        self._window: int | None = None
        self._order = "fifo"
        self._rng = random.Random(0)
        self._busy = 0
        self._stopping = False
        self._thread: threading.Thread | None = None

    # -- life cycle ---------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="github-fake-hookshot", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._queue.clear()
            self._held.clear()
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout + 5)
            self._thread = None

    # -- hooks --------------------------------------------------------------------------

    def add(
        self,
        url: str,
        *,
        secret: str | None,
        events: Iterable[str],
        content_type: str,
        active: bool,
        repo: Repo | None = None,
        app: App | None = None,
        sender: User | None = None,
    ) -> Webhook:
        """A new hook; GitHub pings it at once (a repository's hook; an App's too)."""
        if content_type not in CONTENT_TYPES:
            raise ValueError(f"content_type is one of {tuple(CONTENT_TYPES)}")
        wanted = tuple(events)
        if not wanted:
            raise ValueError("a webhook needs at least one event ('*' for all)")
        state = self.fake.state
        with state.lock:
            now = state.now()
            hook = Webhook(
                id=next(self._hook_ids),
                url=url,
                secret=secret,
                events=wanted,
                content_type=content_type,
                active=active,
                created_at=now,
                updated_at=now,
                repo_id=repo.id if repo is not None else None,
                app_id=app.id if app is not None else None,
            )
            self.hooks[hook.id] = hook
            if active:
                self._ping(hook, repo, app, sender)
        return hook

    def update(self, hook: Webhook | int, **changes: Any) -> Webhook:
        """Change a hook's ``url``, ``secret``, ``events``, ``content_type`` or ``active``
        (a secret rotation signs later deliveries, redeliveries included, with the new one)."""
        found = self.hooks[hook if isinstance(hook, int) else hook.id]
        allowed = {"url", "secret", "events", "content_type", "active"}
        unknown = set(changes) - allowed
        if unknown:
            raise ValueError(f"cannot change {sorted(unknown)}")
        with self.fake.state.lock:
            for name, value in changes.items():
                setattr(found, name, tuple(value) if name == "events" else value)
            found.updated_at = self.fake.state.now()
        return found

    def remove(self, hook: Webhook | int) -> None:
        """Delete a hook; its deliveries not sent yet never will be (they stay pending)."""
        self.hooks.pop(hook if isinstance(hook, int) else hook.id, None)

    def hook_json(self, hook: Webhook) -> Json:
        """The hook as GitHub describes it (the ``hook`` of a ``ping``)."""
        urls = self.fake.urls
        if hook.repo_id is not None:
            repo = self.fake.state.repos[hook.repo_id]
            base = f"{urls.repo_api(repo)}/hooks/{hook.id}"
        else:
            base = f"{urls.api}/app/hook"
        config: Json = {
            "content_type": hook.content_type,
            "insecure_ssl": "0",
            "url": hook.url,
        }
        if hook.secret:
            config["secret"] = "********"
        out: Json = {
            "type": "Repository" if hook.repo_id is not None else "App",
            "id": hook.id,
            "name": "web",
            "active": hook.active,
            "events": list(hook.events),
            "config": config,
            "updated_at": iso(hook.updated_at),
            "created_at": iso(hook.created_at),
            "url": base,
            "ping_url": f"{base}/pings",
            "deliveries_url": f"{base}/deliveries",
        }
        if hook.repo_id is not None:
            out["test_url"] = f"{base}/test"
            out["last_response"] = {"code": None, "status": "unused", "message": None}
        else:
            out["app_id"] = hook.app_id
        return out

    def _ping(self, hook: Webhook, repo: Repo | None, app: App | None, sender: User | None) -> None:
        urls = self.fake.urls
        body = payloads.ping(self.hook_json(hook), hook.id, self._zen)
        if repo is not None:
            body["repository"] = payloads.repository(urls, repo)
            body["sender"] = payloads.user(urls, sender or repo.owner)
            org = payloads.organization(urls, repo.owner)
            if org is not None:
                body["organization"] = org
        elif app is not None:
            body["sender"] = payloads.user(urls, sender or app.owner)
        self._enqueue(hook, "ping", body, repo)

    # -- emitting -----------------------------------------------------------------------

    def targets(self, repo: Repo, event: str) -> list[tuple[Webhook, Installation | None]]:
        """The hooks that receive ``event`` of ``repo``: its own, and the webhook of each
        App installed on it (with the installation)."""
        found: list[tuple[Webhook, Installation | None]] = []
        state = self.fake.state
        for hook in list(self.hooks.values()):
            if not hook.wants(event):
                continue
            if hook.repo_id == repo.id:
                found.append((hook, None))
            elif hook.app_id is not None:
                for inst in state.installations.values():
                    if inst.app.id == hook.app_id and repo.id in state.installation_repo_ids(inst):
                        found.append((hook, inst))
        return found

    def wants(self, repo: Repo, *events: str) -> bool:
        """Whether any hook receives one of ``events`` of ``repo`` (spares building
        payloads nobody will receive)."""
        return any(self.targets(repo, event) for event in events)

    def emit(self, repo: Repo, event: str, build: Callable[[], Json | None]) -> None:
        """Deliver ``event`` of ``repo`` to every hook subscribed to it.

        ``build`` makes the payload, called only when some hook receives the event (None:
        nothing to send after all). ``organization`` is added for an organization's
        repository, and ``installation`` per App webhook. Called by the change itself
        under the state lock, so the payload is the state right after the change.
        """
        targets = self.targets(repo, event)
        if not targets:
            return
        body = build()
        if body is None:
            return
        org = payloads.organization(self.fake.urls, repo.owner)
        if org is not None and "organization" not in body:
            body["organization"] = org
        for hook, inst in targets:
            one = dict(body)
            if inst is not None:
                one["installation"] = payloads.installation_lite(inst)
            self._enqueue(hook, event, one, repo)

    def emit_app(self, app: App, event: str, body: Json) -> None:
        """An App-level event (``installation``, ``installation_repositories``) to the
        App's webhook."""
        for hook in list(self.hooks.values()):
            if hook.app_id == app.id and hook.wants(event):
                self._enqueue(hook, event, dict(body), None)

    def _enqueue(self, hook: Webhook, event: str, payload: Json, repo: Repo | None) -> None:
        raw = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
        if hook.content_type == "form":
            raw = b"payload=" + quote_plus(raw).encode()
        if len(raw) > self.max_payload_bytes:
            self.oversized.append((event, len(raw)))
            return
        self._deliver(hook, event, payload, raw, repo.id if repo is not None else None)

    def _deliver(
        self, hook: Webhook, event: str, payload: Json, raw: bytes, repository_id: int | None
    ) -> None:
        """A new delivery of ``raw`` (the body as sent, ``payload`` as built), queued."""
        action = payload.get("action")
        delivery = WebhookDelivery(
            id=next(self._delivery_ids),
            guid=str(uuid.uuid4()),
            hook_id=hook.id,
            event=event,
            action=action if isinstance(action, str) else None,
            repository_id=repository_id,
            payload=payload,
            body=raw,
            queued_at=self.fake.state.now(),
        )
        with self._cond:
            self.deliveries.append(delivery)
            self._admit(_Job(delivery, redelivery=False))

    def _admit(self, job: _Job) -> None:
        """Queue a job, or hold it (paused, or collecting an out-of-order window)."""
        if self._paused or self._window is not None:
            self._held.append(job)
            if not self._paused and self._window is not None and len(self._held) >= self._window:
                self._release_held()
        else:
            self._queue.append(job)
        self._cond.notify_all()

    def _release_held(self) -> None:
        held, self._held = self._held, []
        if self._order == "reverse":
            held.reverse()
        elif self._order == "shuffle":
            self._rng.shuffle(held)
        self._queue.extend(held)
        self._cond.notify_all()

    # -- test controls ------------------------------------------------------------------

    def pause(self) -> None:
        """Hold every delivery from now on (until ``release``)."""
        with self._cond:
            self._paused = True

    def release(self, order: str = "fifo", *, seed: int | None = None) -> int:
        """Send the held deliveries (``fifo``, ``reverse`` or ``shuffle``d with ``seed``)
        and stop holding; the number released."""
        if order not in ORDERS:
            raise ValueError(f"order is one of {ORDERS}")
        with self._cond:
            count = len(self._held)
            saved = self._order
            self._order = order
            if seed is not None:
                self._rng = random.Random(seed)
            self._paused = False
            self._release_held()
            self._order = saved
            return count

    @property
    def held(self) -> list[WebhookDelivery]:
        with self._cond:
            return [job.delivery for job in self._held]

    def out_of_order(self, window: int, order: str = "reverse", *, seed: int = 0) -> None:
        """From now on, deliveries leave in groups of ``window``, each group permuted
        (``reverse`` or ``shuffle``); ``flush`` sends an incomplete group too."""
        if window < 2:
            raise ValueError("an out-of-order window holds at least 2 deliveries")
        if order not in ORDERS:
            raise ValueError(f"order is one of {ORDERS}")
        with self._cond:
            self._window, self._order, self._rng = window, order, random.Random(seed)

    def in_order(self) -> None:
        """Back to delivering each event as it happens (a held group leaves first, permuted)."""
        with self._cond:
            if self._held and not self._paused:
                self._release_held()
            self._window, self._order = None, "fifo"

    def redeliver(self, delivery: WebhookDelivery | str | int) -> WebhookDelivery:
        """Send a delivery again: the same body and ``X-GitHub-Delivery``, a new attempt
        (by the record, its GUID or its id)."""
        found = self.find(delivery)
        with self._cond:
            self._admit(_Job(found, redelivery=True))
        return found

    def find(self, delivery: WebhookDelivery | str | int) -> WebhookDelivery:
        if isinstance(delivery, WebhookDelivery):
            return delivery
        with self._cond:
            for candidate in self.deliveries:
                if delivery in (candidate.guid, candidate.id) or any(
                    a.delivery_id == delivery for a in candidate.attempts
                ):
                    return candidate
        raise KeyError(delivery)

    def flush(self, timeout: float = 30.0) -> list[WebhookDelivery]:
        """Wait until every delivery queued so far has been attempted; all deliveries.

        An out-of-order window still filling is sent (permuted) first. Deliveries held by
        ``pause`` are not: flushing while some are held is a test's mistake (it would wait
        for nothing), so it raises.
        """
        with self._cond:
            if self._held and self._paused:
                raise RuntimeError(
                    f"{len(self._held)} webhook deliveries are held by pause(): release() them"
                )
            if self._held:
                self._release_held()
            done = self._cond.wait_for(lambda: not self._queue and self._busy == 0, timeout=timeout)
            if not done:
                raise TimeoutError(
                    f"webhook deliveries still pending after {timeout} s: "
                    f"{len(self._queue)} queued, {self._busy} in flight"
                )
            return list(self.deliveries)

    def deliveries_of(
        self,
        event: str | None = None,
        *,
        action: str | None = None,
        hook: Webhook | int | None = None,
    ) -> list[WebhookDelivery]:
        """The recorded deliveries, optionally of one event, action or hook."""
        hook_id = hook.id if isinstance(hook, Webhook) else hook
        with self._cond:
            return [
                d
                for d in self.deliveries
                if (event is None or d.event == event)
                and (action is None or d.action == action)
                and (hook_id is None or d.hook_id == hook_id)
            ]

    # -- sending ------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stopping or bool(self._queue))
                if self._stopping:
                    return
                job = self._queue.popleft()
                self._busy += 1
            try:
                self._send(job)
            except Exception as exc:  # never let the sender thread die
                self.fake.server_errors.append(f"webhook sender: {exc!r}")
            finally:
                with self._cond:
                    self._busy -= 1
                    self._cond.notify_all()

    def _send(self, job: _Job) -> None:
        delivery = job.delivery
        hook = self.hooks.get(delivery.hook_id)
        if hook is None:
            return  # deleted meanwhile: nothing to send it to
        if not job.redelivery:
            self._check(delivery)
        rule = self.faults.pick(delivery, redelivery=job.redelivery)
        kind = rule.kind if rule is not None else None
        if rule is not None and kind == "drop":
            self._record(delivery, job.redelivery, None, "dropped (injected fault)", 0.0, kind)
            return
        if rule is not None and kind == "latency":
            time.sleep(rule.seconds)
        headers = self._headers(hook, delivery, forged=kind == "bad_signature")
        timeout = rule.seconds if rule is not None and kind == "timeout" else self.timeout
        for _ in range(2 if kind == "duplicate" else 1):
            self._post(hook, delivery, headers, timeout, job.redelivery, kind)

    def _headers(self, hook: Webhook, delivery: WebhookDelivery, *, forged: bool) -> dict[str, str]:
        headers = {
            "Accept": "*/*",
            "Content-Type": CONTENT_TYPES[hook.content_type],
            "User-Agent": self.user_agent,
            "X-GitHub-Delivery": delivery.guid,
            "X-GitHub-Event": delivery.event,
            "X-GitHub-Hook-ID": str(hook.id),
            "X-GitHub-Hook-Installation-Target-ID": str(hook.target_id),
            "X-GitHub-Hook-Installation-Target-Type": hook.target_type,
        }
        if hook.secret:
            secret = hook.secret + "-forged" if forged else hook.secret
            headers["X-Hub-Signature"] = signature_1(secret, delivery.body)
            headers["X-Hub-Signature-256"] = signature_256(secret, delivery.body)
        return headers

    def _post(
        self,
        hook: Webhook,
        delivery: WebhookDelivery,
        headers: dict[str, str],
        timeout: float,
        redelivery: bool,
        fault: str | None,
    ) -> None:
        started = time.monotonic()
        status: int | None = None
        error: str | None = None
        try:
            # A connection of its own per attempt (no keep-alive across deliveries: a
            # receiver that went away is not reached through an old connection).
            with requests.Session() as http:
                response = http.post(
                    hook.url,
                    data=delivery.body,
                    headers=headers,
                    timeout=(min(timeout, 10.0), timeout),
                    allow_redirects=False,
                )
                status = response.status_code
                response.close()
        except requests.Timeout:
            error = f"timed out after {timeout:g} s"
        except requests.RequestException as exc:
            error = f"failed to connect: {exc.__class__.__name__}"
        delivery.headers = headers
        self._record(delivery, redelivery, status, error, time.monotonic() - started, fault)

    def _record(
        self,
        delivery: WebhookDelivery,
        redelivery: bool,
        status: int | None,
        error: str | None,
        duration: float,
        fault: str | None,
    ) -> None:
        attempt = Attempt(
            delivery_id=delivery.id if not delivery.attempts else next(self._delivery_ids),
            redelivery=redelivery,
            status_code=status,
            error=error,
            duration=duration,
            at=self.fake.state.now(),
            fault=fault,
        )
        with self._cond:
            delivery.attempts.append(attempt)

    def _check(self, delivery: WebhookDelivery) -> None:
        """Validate the payload against the event's definition in GitHub's schema."""
        if not self.fake.validate_responses:
            return
        self._record_problems(delivery, payload_problems(delivery.event, delivery.payload))

    def _record_problems(self, delivery: WebhookDelivery, problems: list[str]) -> None:
        """A violation naming the delivery, when its payload has problems."""
        if problems:
            self.violations.append(
                f"webhook {delivery.event}"
                + (f".{delivery.action}" if delivery.action else "")
                + f" ({delivery.guid}): "
                + "; ".join(problems)
            )
