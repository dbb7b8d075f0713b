"""``/api/v1/openapi.json``: the OpenAPI 3.1 document of the API (``dashboard/api/openapi.py``).

Behind the same authentication as the rest of ``/api/v1/`` (a token, or a logged-in session):
it describes nothing secret, but an anonymous caller has no use for it and every other path
under ``/api/v1/`` refuses one, so this one does too (docs/API.md).
"""

from __future__ import annotations

from django.http import HttpRequest

from dashboard.api import openapi
from dashboard.api.auth import api_view
from dashboard.api.responses import ApiJsonResponse


@api_view()
def openapi_document(request: HttpRequest) -> ApiJsonResponse:
    return ApiJsonResponse(openapi.document())
