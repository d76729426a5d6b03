"""The github.com layout's hosts by name: api.github.test, uploads.github.test, github.test.

Real clients check where a URL points before they follow it. PyGithub, for one, follows
an absolute URL only to the API's own host and port or to a host under the API host's
domain (``uploads.github.com`` under ``github.com``): on 127.0.0.1 the uploads host, on a
port of its own, can never pass. So in the github.com layout the fake also answers under
names shaped like GitHub's, all on one local port that dispatches by ``Host``; a client
uses that port as its HTTP proxy (``fake.client_proxy_env()``: requests, and so PyGithub,
honour ``HTTP_PROXY``/``NO_PROXY``; a node client passes a ``fetch`` that goes through
it) and ``fake.client_api_url`` as its API base. Every URL in an answer names the host
the request was addressed to, so a client that came by name follows links by name and one
that came to ``fake.api_url`` (git, git-lfs, reposync's provider) keeps 127.0.0.1.

``.test`` is reserved for testing (RFC 2606): no name under it resolves anywhere else.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from tests.fakes.github.render import Urls

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

API_HOST = "api.github.test"
UPLOADS_HOST = "uploads.github.test"
WEB_HOST = "github.test"
NAMED = Urls(f"http://{API_HOST}", f"http://{UPLOADS_HOST}", f"http://{WEB_HOST}")


def host_of(environ: WSGIEnvironment) -> str:
    """The host name a request was addressed to (``Host``, or an absolute-form target's),
    lower-cased, without the port."""
    host = str(environ.get("HTTP_HOST") or environ.get("SERVER_NAME") or "")
    return host.split(":", 1)[0].lower()


def by_name(environ: WSGIEnvironment) -> bool:
    """Whether the request came by one of the names (through the proxy port)."""
    return host_of(environ) in (API_HOST, UPLOADS_HOST, WEB_HOST)


class ByHost:
    """One port, three hosts: what a proxy in front of api, uploads and the web does."""

    def __init__(self, api: WSGIApplication, uploads: WSGIApplication, web: WSGIApplication):
        self.apps = {API_HOST: api, UPLOADS_HOST: uploads, WEB_HOST: web}

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        app = self.apps.get(host_of(environ))
        if app is None:  # a proxy that knows only GitHub's hosts
            start_response("502 Bad Gateway", [("content-type", "text/plain; charset=utf-8")])
            return [f"The GitHub test server serves {', '.join(self.apps)} only.\n".encode()]
        return app(environ, start_response)
