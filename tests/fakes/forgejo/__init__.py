"""A Forgejo-faithful test server: REST API, Git smart HTTP, LFS and webhooks on 127.0.0.1.

Start it in a test (or take the ``forgejo_fake`` fixture of tests/conftest.py)::

    with ForgejoFake() as fake:
        fake.state.create_repo("acme/widgets", auto_init=True)
        session = fake.session(fake.add_token("acme"))  # contract checked
        session.get(f"{fake.api_url}/repos/acme/widgets")
        fake.assert_clean()  # no contract violations, no server errors

It stands for Forgejo 11 (``/version`` says ``11.0.3+gitea-1.22.0``), whose own Swagger
description the contract is cut from (tests/contracts/forgejo-api-subset.json;
tests/contracts/README.md). Where things are:

* ``fake.api_url`` (``<root>/api/v1``) and ``fake.git_url`` (the root: ``/{owner}/{name}
  .git`` and ``.wiki.git``, ``/info/lfs`` under them, ``/attachments/{uuid}``): one
  host, as Forgejo serves them. ``fake.git_remote(full_name, token)`` is a clone URL.
* ``fake.state`` (State): users, organizations (``create_org``), repositories and what is
  in them, with authors and times the REST API cannot set ("as in the web UI").
* ``fake.add_token(login, scopes=("all",), admin=None)``: a token with Forgejo's scopes
  (``read:issue``, ``write:repository``, ...); ``admin=True`` makes the user a site
  administrator, whose token may act as others with ``Sudo``.
* ``fake.webhooks`` (ForgejoWebhooks): hooks (``fake.add_webhook``, ``add_org_webhook``,
  or ``POST /repos/{owner}/{repo}/hooks``) and deliveries as Forgejo sends them, with
  ``pause``/``release``/``flush``/``redeliver``/``faults`` (webhooks.py).
* ``fake.requests``: one record per API request; ``upload_pack_requests`` and
  ``receive_pack_requests``: what Git fetches and pushes asked for.
* ``fake.violations`` / ``fake.request_violations``: contract violations of the responses
  sent / the requests received; ``fake.client_recorder``: of the exchanges of a client
  set up with ``fake.session()`` or ``fake.httpx_client()``; ``fake.server_errors``;
  ``fake.unmodelled``; ``fake.webhooks.violations``. ``fake.assert_clean()`` fails on
  any of them.

Forgejo's behaviours it keeps, and where each comes from, are in the docstrings of
app.py (credentials, Sudo, scopes, errors, no ETags, no rate limit), routing.py
(paging), routes_*.py (each family's rules), git_http.py (Git, LFS, attachments) and
webhooks.py (deliveries).
"""

from __future__ import annotations

from collections.abc import Iterator

from tests.fakes.forgejo.server import ForgejoFake
from tests.fakes.forgejo.webhooks import ForgejoHook, signature

__all__ = ["ForgejoFake", "ForgejoHook", "forgejo_fake", "signature"]


def forgejo_fake() -> Iterator[ForgejoFake]:
    """A started fake with default settings, stopped afterwards (a fixture body)."""
    with ForgejoFake() as fake:
        yield fake
