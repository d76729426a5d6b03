"""``/github/...``: Connect GitHub, the self-service flow (``service/accounts/github_connect.py``).

Every user (admin or member) connects their own GitHub identity and sees only their own
installations and repositories; no one acts on another's. The callback takes no
bearer token: GitHub's redirect brings the browser, not the API
client. What authenticates it is the one-time state (bound to the user who started the
flow) together with the flow cookie that start set in that browser, so a callback URL
forged or replayed in another browser records nothing (login CSRF: an attacker's state
with a victim's code would otherwise attach the victim's GitHub to the attacker's user).
"""

from __future__ import annotations

from typing import Any

from flask import Response, current_app, jsonify, redirect, request, url_for
from flask.views import MethodView
from flask_smorest import Blueprint
from werkzeug.wrappers.response import Response as BaseResponse

from reposync.errors import RecordNotFound, UsageError
from reposync.service.accounts import github_connect
from reposync.web.auth import current_user, load_user, service_context
from reposync.web.errors import documents
from reposync.web.schemas.github import (
    CallbackArgsSchema,
    ConnectedSchema,
    InstallationsSchema,
    PickerSchema,
    StartedSchema,
)

blueprint = Blueprint("github", __name__, description="Connect GitHub (self-service)")
CALLBACK_ENDPOINT = "github.GitHubCallbackView"
#: Keeps the browser's half of a flow between start and callback. SameSite=Lax: GitHub's
#: redirect back is a cross-site top-level GET, which Strict would strip it from.
FLOW_COOKIE = "reposync_github_flow"


@blueprint.before_request
def _authenticate() -> None:
    if request.endpoint != CALLBACK_ENDPOINT:
        load_user()


#: Where a flow started on the web page comes back to (``web/pages``' GitHub page).
PAGE_ENDPOINT = "pages.github"


def redirect_uri() -> str:
    """The callback URL GitHub sends the browser to (the settings' or this API's)."""
    configured: str = current_app.extensions["reposync.settings"].github_callback_url
    return configured or url_for(CALLBACK_ENDPOINT, _external=True)


def _started(flow: str) -> Response:
    ctx = service_context()
    started = github_connect.start(ctx, current_user().id, flow, redirect_uri())
    response = jsonify(StartedSchema().dump(started))
    set_flow_cookie(response, started)
    return response


def set_flow_cookie(response: BaseResponse, started: github_connect.Started) -> None:
    """The browser's half of the flow, for the callback only (the page's start sets it
    too: the same callback checks it)."""
    ctx = service_context()
    response.set_cookie(
        FLOW_COOKIE,
        started.browser_secret,
        max_age=int(ctx.settings.github_connect_state_ttl),
        path=url_for(CALLBACK_ENDPOINT),
        secure=request.is_secure,
        httponly=True,
        samesite="Lax",
    )


@blueprint.route("/github/authorize/start")
class GitHubAuthorizeStartView(MethodView):
    @blueprint.doc(operationId="start_github_authorization")
    @blueprint.response(200, StartedSchema)
    @documents(blueprint, 401, 503)
    def post(self) -> Any:
        """Start authorizing the GitHub App: GitHub's URL for this browser (one use, short-
        lived, bound to the caller). Authorizing again replaces the caller's grants."""
        return _started("authorize")


@blueprint.route("/github/install/start")
class GitHubInstallStartView(MethodView):
    @blueprint.doc(operationId="start_github_installation")
    @blueprint.response(200, StartedSchema)
    @documents(blueprint, 401, 503)
    def post(self) -> Any:
        """Start installing the GitHub App on an account the caller chooses on GitHub; the
        new installation is added to the caller's grants."""
        return _started("install")


@blueprint.route("/github/install/callback")
class GitHubCallbackView(MethodView):
    @blueprint.doc(operationId="complete_github_connection")
    @blueprint.doc(security=[])
    @blueprint.arguments(CallbackArgsSchema, location="query")
    @blueprint.response(200, ConnectedSchema)
    @documents(blueprint, 400, 502, 503)
    def get(self, args: dict[str, Any]) -> Any:
        """Where GitHub sends the browser back: no bearer token; the state and this
        browser's flow cookie authenticate it. Waits up to REPOSYNC_GITHUB_CONNECT_WAIT
        seconds for a new installation; GitHub's user token is not kept."""
        ctx = service_context()
        browser_secret = request.cookies.get(FLOW_COOKIE)
        if not args.get("code"):  # GitHub's refusal: the state says whom to tell
            origin = github_connect.abandon(ctx, state=args["state"], browser_secret=browser_secret)
            refusal = args.get("error") or "no code"
            if origin == "page":
                return _forget_flow(redirect(url_for(PAGE_ENDPOINT, outcome="refused")))
            raise UsageError(f"GitHub sent the browser back without a code ({refusal})")
        done = github_connect.complete(
            ctx,
            state=args["state"],
            browser_secret=browser_secret,
            code=args["code"],
            redirect_uri=redirect_uri(),
            installation_id=args.get("installation_id"),
        )
        account = github_connect.connection(ctx, done.user_id).account
        status = "installation_pending" if done.pending else "connected"
        if done.origin == "page":  # started on the web page: back to it, with the outcome
            return _forget_flow(redirect(url_for(PAGE_ENDPOINT, outcome=status)))
        message = (
            "GitHub has not listed the new installation yet; authorize again in a minute to add it"
            if done.pending
            else f"connected as {account.login if account else '?'}"
        )
        body = ConnectedSchema().dump(
            {
                "status": status,
                "flow": done.flow,
                "account": account,
                "new_installation_ids": done.new_installation_ids,
                "waited_seconds": done.waited_seconds,
                "message": message,
            }
        )
        return _forget_flow(jsonify(body))


def _forget_flow(response: BaseResponse) -> BaseResponse:
    response.delete_cookie(FLOW_COOKIE, path=url_for(CALLBACK_ENDPOINT))
    return response


@blueprint.route("/github/installations")
class GitHubInstallationsView(MethodView):
    @blueprint.doc(operationId="list_github_installations")
    @blueprint.response(200, InstallationsSchema)
    @documents(blueprint, 401)
    def get(self) -> Any:
        """The caller's GitHub identity and only the installations the caller authorized,
        with GitHub's page to manage each."""
        found = github_connect.connection(service_context(), current_user().id)
        return {
            "account": found.account,
            "installations": [
                {
                    "installation_id": g.installation_id,
                    "connection_id": github_connect.connection_id(g.installation_id),
                    "account_login": g.account_login,
                    "account_type": g.account_type,
                    "repository_selection": g.repository_selection,
                    "manage_url": g.manage_url,
                    "granted_at": g.granted_at,
                }
                for g in found.installations
            ],
        }


@blueprint.route("/github/repositories")
class GitHubRepositoriesView(MethodView):
    @blueprint.doc(operationId="list_github_repositories")
    @blueprint.response(200, PickerSchema)
    @documents(blueprint, 401)
    def get(self) -> Any:
        """The repositories of the caller's installations, each once, with the locator and
        connection id a Binding side takes."""
        rows = github_connect.repositories(service_context(), current_user().id)
        return {
            "items": [
                {
                    "repository_id": r.repository_id,
                    "full_name": r.full_name,
                    "locator": r.locator,
                    "private": r.private,
                    "html_url": r.html_url,
                    "installation_id": r.installation_id,
                    "account_login": r.account_login,
                    "connection_id": r.connection_id,
                }
                for r in rows
            ]
        }


@blueprint.route("/github/account")
class GitHubAccountView(MethodView):
    @blueprint.doc(operationId="disconnect_github_account")
    @blueprint.response(204)
    @documents(blueprint, 401, 404)
    def delete(self) -> Any:
        """Disconnect: forget the caller's GitHub identity and grants (404: none). The
        App stays installed on GitHub; its owners remove it there."""
        if not github_connect.disconnect(service_context(), current_user().id):
            raise RecordNotFound("you have not connected a GitHub account")
        return None
