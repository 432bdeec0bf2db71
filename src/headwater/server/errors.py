"""Errors in Kafka Connect's shape: `{"error_code": <HTTP status>, "message": ...}`.

Why one exception type: every router raises `ApiError`, the app renders it (and FastAPI's
own 404/405/validation errors) identically, so no response escapes the shape.
"""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException

from headwater.server.models import ErrorMessage


class ApiError(HTTPException):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(status_code=status, detail=message)


def not_found(what: str) -> ApiError:
    return ApiError(404, what)


def responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the error statuses a route answers."""
    return {code: {"model": ErrorMessage} for code in codes}
