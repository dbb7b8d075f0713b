"""The API's one error shape: ``{"error": {"message": ..., "field": ...}}``.

Views, parameter readers and the authentication raise ``ApiError``; the API's exception
handlers (``dashboard/api/api.py``) turn it, and ninja's own errors, into this response, so
no code builds an error body by hand and every endpoint fails the same way.
"""

from __future__ import annotations

from collections.abc import Mapping

from dashboard.api.responses import ApiJsonResponse


class ApiError(Exception):
    """A refusal: its status, message, the parameter or field at fault, and headers the
    refusal needs (``WWW-Authenticate`` on a 401 or 403)."""

    def __init__(
        self,
        status: int,
        message: str,
        field: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field
        self.headers = dict(headers or {})

    def response(self) -> ApiJsonResponse:
        response = error_response(self.status, self.message, self.field)
        for name, value in self.headers.items():
            response[name] = value
        return response


def error_response(status: int, message: str, field: str | None = None) -> ApiJsonResponse:
    body: dict = {"message": message}
    if field is not None:
        body["field"] = field
    return ApiJsonResponse({"error": body}, status=status)


def not_found(what: str) -> ApiError:
    return ApiError(404, f"{what} not found")
