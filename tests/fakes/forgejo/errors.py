"""Forgejo's error answers (services/context/api.go in Forgejo's source): ``APIError``
``{"message", "url"}`` for most, ``APINotFound`` ``{"message", "url", "errors"}`` for 404;
``url`` is the instance's Swagger page. The words are Forgejo's own, each at its use."""

from __future__ import annotations

from typing import Any

#: en-US ``error.not_found``: what ``ctx.NotFound()`` answers without words of its own.
NOT_FOUND = "The target couldn't be found."


class ApiError(Exception):
    """An error answer; ``plain`` bodies have no ``url`` (the Sudo refusal's)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        errors: list[str] | None = None,
        plain: bool = False,
    ) -> None:
        super().__init__(f"{status} {message}")
        self.status = status
        self.message = message
        self.errors = errors
        self.plain = plain

    def body(self, swagger_url: str) -> dict[str, Any]:
        if self.plain:
            return {"message": self.message}
        out: dict[str, Any] = {"message": self.message, "url": swagger_url}
        if self.status == 404:
            out["errors"] = self.errors or []
        return out


def not_found(*errors: str) -> ApiError:
    return ApiError(404, NOT_FOUND, errors=list(errors))


def forbidden(message: str) -> ApiError:
    return ApiError(403, message)


def unprocessable(message: str) -> ApiError:
    return ApiError(422, message)


def conflict(message: str) -> ApiError:
    return ApiError(409, message)


#: ``reqRepoWriter``'s refusal (routers/api/v1/api.go).
NOT_WRITER = "user should have a permission to write to a repo"
