"""``GET /runs/{id}/events``: a Run's append-only history, as JSON or Server-Sent Events."""

from __future__ import annotations

from typing import Any

from flask import Response, current_app, request, url_for
from flask.views import MethodView
from flask_smorest import Blueprint

from reposync.service.accounts.authorization import authorize_run
from reposync.service.accounts.users import issue_stream_token
from reposync.service.queries import events_after, run_events
from reposync.web.auth import current_user, load_user, service_context
from reposync.web.errors import documents
from reposync.web.schemas.common import MAX_PAGE, id_rule
from reposync.web.schemas.events import (
    RunEventHeadersSchema,
    RunEventPageSchema,
    RunEventQueryArgsSchema,
    StreamTokenSchema,
)
from reposync.web.sse import HEADERS, event_stream, feeds_of
from reposync.web.streams import StreamSlots

blueprint = Blueprint("events", __name__, description="What happened during a Run")
blueprint.before_request(load_user)

EVENT_STREAM = "text/event-stream"

_STREAM_DOC = {
    "responses": {
        200: {
            "content": {
                EVENT_STREAM: {
                    "schema": {
                        "type": "string",
                        "description": "one message per event (id = seq, data = the event "
                        "as JSON), then an `end` event once the Run is terminal",
                    }
                }
            }
        }
    }
}


def _wants_stream() -> bool:
    best = request.accept_mimetypes.best_match(["application/json", EVENT_STREAM])
    return best == EVENT_STREAM


@blueprint.route(f"/runs/{id_rule('run_id')}/events")
class RunEventsView(MethodView):
    @blueprint.doc(operationId="list_run_events")
    @blueprint.arguments(RunEventQueryArgsSchema, location="query")
    @blueprint.arguments(RunEventHeadersSchema, location="headers")
    @blueprint.response(200, RunEventPageSchema)
    @blueprint.doc(**_STREAM_DOC)
    @documents(blueprint, 401, 404, 429)
    def get(self, args: dict[str, Any], headers: dict[str, Any], run_id: int) -> Any:
        """List a Run's events after a sequence number, or follow them as Server-Sent Events.

        With ``Accept: text/event-stream`` the events after ``Last-Event-ID`` (or
        ``after_seq``) are streamed as they are appended, until the Run is terminal or
        the stream's time is up (reconnect with ``Last-Event-ID``). A user holds a few
        streams per server process, the server a bounded number: beyond, 429 with
        ``Retry-After``.
        """
        ctx, user = service_context(), current_user()
        after_seq = max(args["after_seq"], headers.get("last_event_id") or 0)
        if _wants_stream():
            authorize_run(ctx, user, run_id)  # 404 now, as a problem, not inside the stream
            slots: StreamSlots = current_app.extensions["reposync.streams"]
            slots.take(user.id)  # 429 beyond the caps, before any thread is held for long
            config = current_app.config
            stream = event_stream(
                feeds_of(current_app, ctx),
                lambda run, seq: events_after(ctx, run, after_seq=seq, limit=MAX_PAGE),
                run_id,
                after_seq,
                poll=config["REPOSYNC_SSE_POLL_SECONDS"],
                keepalive=config["REPOSYNC_SSE_KEEPALIVE_SECONDS"],
                max_seconds=config["REPOSYNC_SSE_MAX_SECONDS"],
            )
            response = Response(stream, mimetype=EVENT_STREAM, headers=HEADERS)
            # The server closes the response when the stream ends or the client leaves.
            response.call_on_close(lambda: slots.release(user.id))
            return response
        return run_events(ctx, user, run_id, after_seq=after_seq, limit=args["limit"])


@blueprint.route(f"/runs/{id_rule('run_id')}/stream-token")
class StreamTokenView(MethodView):
    @blueprint.doc(operationId="create_run_stream_token")
    @blueprint.response(201, StreamTokenSchema)
    @documents(blueprint, 401, 404)
    def post(self, run_id: int) -> Any:
        """A short-lived token that opens this Run's event stream, and nothing else.

        For a browser's ``EventSource``, which cannot send an Authorization header:
        ``GET /runs/{id}/events?access_token=<token>`` with ``Accept: text/event-stream``.
        """
        ctx, user = service_context(), current_user()
        authorize_run(ctx, user, run_id)
        token, expires_at = issue_stream_token(ctx, user, run_id)
        return {
            "token": token,
            "expires_at": expires_at,
            "url": url_for("events.RunEventsView", run_id=run_id, access_token=token),
        }
