"""The errors the service layer raises; REST turns them into `{"error": ...}` responses, MCP into tool errors."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar


class ServiceError(Exception):
    status: ClassVar[int] = 500

    def __init__(self, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = dict(headers or {})


class BadRequest(ServiceError):
    status = 400


class RequestTimeout(ServiceError):
    """The client did not send its whole body within `body_timeout_seconds`: a slow body must not hold a worker."""

    status = 408


class PayloadTooLarge(ServiceError):
    status = 413


class Unauthorized(ServiceError):
    status = 401

    def __init__(self, message: str = "missing or invalid API key") -> None:
        super().__init__(message, {"WWW-Authenticate": "Bearer"})


class Forbidden(ServiceError):
    status = 403


class NotFound(ServiceError):
    status = 404


class Conflict(ServiceError):
    status = 409


class Invalid(ServiceError):
    status = 422


class RateLimited(ServiceError):
    """A limit of its own (logins, anonymous /analyze); the general RateLimit-* headers come from the middleware."""

    status = 429

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(f"{message}: retry in {retry_after} s", {"Retry-After": str(retry_after)})


def describe_validation(errors: Iterable[Mapping[str, Any]]) -> str:
    """One readable sentence from pydantic/FastAPI error dicts, naming each field and its rule."""
    parts = []
    for err in errors:
        loc = [str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path", "header")]
        field = ".".join(loc) or "body"
        kind = err.get("type", "")
        if kind == "extra_forbidden":
            parts.append(f"unknown field '{field}'")
        elif kind == "missing":
            parts.append(f"{field} is required")
        else:
            msg = str(err.get("msg", "is invalid"))
            msg = msg.removeprefix("Value error, ")
            if not loc and kind == "value_error":  # a rule over several fields (days or from/to): it names them
                parts.append(msg)
            else:
                parts.append(msg if msg.startswith(field) else f"{field}: {msg[:1].lower()}{msg[1:]}")
    return "; ".join(parts) or "invalid input"
