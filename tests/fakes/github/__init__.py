"""A GitHub-faithful test server: REST API, uploads host and Git smart HTTP on 127.0.0.1.

Start it in a test (or register ``github_fake`` with ``pytest.fixture``)::

    with GitHubFake() as fake:
        fake.state.create_repo("acme/widgets", auto_init=True)
        session = fake.session(fake.add_token("acme"))  # contract harness attached
        session.get(f"{fake.api_url}/repos/acme/widgets")
        fake.assert_clean()  # no contract violations, no server errors

Where things are:

* ``fake.api_url`` / ``fake.uploads_url`` / ``fake.git_url``: the three hosts
  (``git_url`` also serves ``browser_download_url`` downloads; ``html_url``s point there).
* Real GitHub clients (PyGithub, octokit, githubkit) are given ``fake.client_api_url``
  and, in the github.com layout, ``fake.client_proxy_env()`` (or ``fake.proxy_url``):
  there the hosts also answer by name, api.github.test, uploads.github.test and
  github.test, on one port used as an HTTP proxy, so that clients follow GitHub's links
  from host to host as they would on github.com (hosts.py).
* ``fake.state`` (State): repositories and everything in them, users (organizations and
  their members: ``add_member``, who may create the organization's repositories), tokens,
  apps.
* ``fake.limiter`` (RateLimiter): primary quotas and ``limiter.secondary`` (SecondaryLimits).
* ``fake.faults`` (Faults): latency, 5xx, commit-then-drop, timeout.
* ``fake.lfs`` (LfsServer): the Git LFS Batch API and transfers on the web host, its
  limits (``max_object_size``, ``max_batch``, ``expires_in``) and stored ``objects()``.
* ``fake.oauth`` (OAuthFlow): the OAuth web flow of GitHub Apps on the web host, signed-in
  ``browser(login)`` sessions, ``choose_install`` (with the lag after an install),
  ``decline`` (oauth.py); ``GET /user`` and the other accounts' reads (routes_users.py).
* ``fake.requests_log`` (RequestLog): one record per request, and counters.
* ``fake.webhooks`` (WebhookHub): webhooks as GitHub delivers them, from REST writes and
  pushes (``fake.add_webhook``, ``fake.set_app_webhook``, ``fake.webhook_deliveries``),
  with ``flush``/``pause``/``release``/``out_of_order``/``redeliver`` and delivery
  ``faults`` (webhooks.py; which change sends what: webhook_events.py). Writes made
  through the Python API (``fake.state``) send none, as they stand for setup.
* ``fake.add_token(login)``: a classic token (``ghp_``, ``scopes=``, ``repo`` by default);
  with ``repositories=`` or ``write=False`` a fine-grained one (``github_pat_``).
* ``fake.violations`` / ``fake.request_violations``: contract violations of the responses
  the fake sent / of the requests it received; ``fake.server_errors``: handler crashes;
  ``fake.unmodelled``: operations GitHub has that the fake does not model (answered 501,
  tests/fakes/operations.py); ``fake.webhooks.violations``: webhook payloads that broke GitHub's
  webhook schema. ``fake.assert_clean()`` fails on any of them.
"""

from __future__ import annotations

from collections.abc import Iterator

from tests.fakes.forge_server.clock import AcceleratedClock, ManualClock, accelerated_clock
from tests.fakes.github.auth import KeyPair, generate_key_pair, make_app_jwt
from tests.fakes.github.ratelimit import SecondaryLimits
from tests.fakes.github.server import AppInstall, GitHubFake
from tests.fakes.github.webhooks import Webhook, WebhookDelivery, signature_256

__all__ = [
    "AcceleratedClock",
    "AppInstall",
    "GitHubFake",
    "KeyPair",
    "ManualClock",
    "SecondaryLimits",
    "Webhook",
    "WebhookDelivery",
    "accelerated_clock",
    "generate_key_pair",
    "github_fake",
    "make_app_jwt",
    "signature_256",
]


def github_fake() -> Iterator[GitHubFake]:
    """A started fake with default settings, stopped afterwards (a fixture body)."""
    with GitHubFake() as fake:
        yield fake
