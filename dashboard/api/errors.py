"""The API's one error shape: ``{"error": {"message": ..., "field": ...}}``.

Views raise ``ApiError``; ``auth.api_view`` turns it into the response, so a view never
builds an error body by hand and every endpoint fails the same way.
"""

from __future__ import annotations

from dashboard.api.responses import ApiJsonResponse


class ApiError(Exception):
    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field


def error_response(status: int, message: str, field: str | None = None) -> ApiJsonResponse:
    body: dict = {"message": message}
    if field is not None:
        body["field"] = field
    return ApiJsonResponse({"error": body}, status=status)


def not_found(what: str) -> ApiError:
    return ApiError(404, f"{what} not found")
