"""Connect GitHub: what the flow's start and callback answer, and the user's picker."""

from __future__ import annotations

from marshmallow import EXCLUDE, Schema, fields, validate

from reposync.web.schemas.common import no_nul, one_of, text

#: GitHub's codes and states are short; anything longer is not GitHub's.
MAX_PARAMETER = 512


class StartedSchema(Schema):
    """Send the browser to ``url``; the flow cookie this response set must come back."""

    url = fields.String(required=True, metadata={"description": "GitHub's page"})
    expires_at = fields.DateTime(
        required=True, metadata={"description": "the state is refused after this"}
    )


class CallbackArgsSchema(Schema):
    """What GitHub appends to the callback URL (``installation_id`` and ``setup_action``
    after an install)."""

    class Meta:
        unknown = EXCLUDE  # GitHub may add parameters

    #: Absent when GitHub sends the browser back with ``error`` (the user declined).
    code = text(MAX_PARAMETER)
    state = text(MAX_PARAMETER, required=True)
    error = text(MAX_PARAMETER, metadata={"description": "GitHub's refusal (access_denied)"})
    installation_id = fields.String(
        validate=[validate.Regexp(r"^[1-9][0-9]{0,18}$"), no_nul],
        metadata={"description": "named by GitHub after an install; waited for"},
    )
    setup_action = fields.String(validate=[validate.Length(max=32), no_nul])


class GitHubAccountSchema(Schema):
    """The GitHub identity a user connected (no token: none is kept)."""

    github_user_id = fields.String(required=True)
    login = fields.String(required=True)
    name = fields.String(allow_none=True)
    html_url = fields.String(required=True)
    connected_at = fields.DateTime(required=True)
    updated_at = fields.DateTime(required=True)


class ConnectedSchema(Schema):
    """What the callback recorded."""

    status = one_of(
        ["connected", "installation_pending"],
        required=True,
        metadata={
            "description": "installation_pending: GitHub had not listed the new "
            "installation within REPOSYNC_GITHUB_CONNECT_WAIT seconds"
        },
    )
    flow = one_of(["authorize", "install"], required=True)
    account = fields.Nested(GitHubAccountSchema, required=True)
    new_installation_ids = fields.List(fields.String(), required=True)
    waited_seconds = fields.Float(required=True)
    message = fields.String(required=True)


class InstallationSchema(Schema):
    installation_id = fields.String(required=True)
    connection_id = fields.String(
        required=True, metadata={"description": "a Binding side's connection_id"}
    )
    account_login = fields.String(required=True)
    account_type = fields.String(required=True)
    repository_selection = fields.String(required=True)
    manage_url = fields.String(
        required=True, metadata={"description": "GitHub's page to change or remove it"}
    )
    granted_at = fields.DateTime(required=True)


class InstallationsSchema(Schema):
    """The caller's GitHub identity (null: not connected) and only the installations the
    caller authorized."""

    account = fields.Nested(GitHubAccountSchema, allow_none=True, required=True)
    installations = fields.List(fields.Nested(InstallationSchema), required=True)


class PickerRepositorySchema(Schema):
    repository_id = fields.String(required=True, metadata={"description": "GitHub's id"})
    full_name = fields.String(required=True)
    locator = fields.String(required=True, metadata={"description": "github:OWNER/NAME"})
    private = fields.Boolean(required=True)
    html_url = fields.String(required=True)
    installation_id = fields.String(required=True)
    account_login = fields.String(required=True)
    connection_id = fields.String(
        required=True,
        metadata={"description": "github:installation:<id>: what a Binding side needs"},
    )


class PickerSchema(Schema):
    """Each repository once, across the caller's installations, by full name."""

    items = fields.List(fields.Nested(PickerRepositorySchema), required=True)
