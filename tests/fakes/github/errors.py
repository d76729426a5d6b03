"""GitHub's error responses, raised by handlers and rendered by the app."""

from __future__ import annotations

from typing import Any

DOCS = "https://docs.github.com/rest"
RATE_LIMIT_DOCS = (
    "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
    "#about-the-primary-rate-limit"
)
SECONDARY_DOCS = (
    "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
)


class ApiError(Exception):
    """An error response: ``status`` and GitHub's JSON body.

    ``documentation_url`` left ``None`` becomes the page of the operation that failed
    (the app fills it in from the contract's ``externalDocs``), as GitHub links its
    errors; only errors that belong to no operation (bad credentials, an unknown path)
    link the REST overview.
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        errors: list[Any] | None = None,
        documentation_url: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(f"{status} {message}")
        self.status = status
        self.message = message
        self.errors = errors
        self.documentation_url = documentation_url
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"message": self.message}
        if self.errors is not None:
            out["errors"] = self.errors
        out["documentation_url"] = self.documentation_url or DOCS
        out["status"] = str(self.status)
        return out


class Unmodelled(ApiError):
    """Something GitHub does that the fake does not model: 501 naming it, never an answer
    that reads as GitHub's; the app records it, so the test that asked fails."""

    def __init__(self, what: str) -> None:
        super().__init__(501, f"{what} is not modelled by the GitHub test server")


def not_found() -> ApiError:
    return ApiError(404, "Not Found")


def bad_credentials() -> ApiError:
    return ApiError(401, "Bad credentials", documentation_url=DOCS)


def validation_failed(resource: str, field: str, code: str, **extra: Any) -> ApiError:
    """The classic 422: "Validation Failed" with ``errors: [{resource, field, code}]``."""
    error: dict[str, Any] = {"resource": resource, "field": field, "code": code, **extra}
    return ApiError(422, "Validation Failed", errors=[error])


def unprocessable(*messages: str) -> ApiError:
    """422 with plain-string errors (``validation-error-simple``, used by reviews)."""
    return ApiError(422, "Unprocessable Entity", errors=list(messages))


def not_accessible(kind: str) -> ApiError:
    who = "integration" if kind == "installation" else "personal access token"
    return ApiError(403, f"Resource not accessible by {who}")
