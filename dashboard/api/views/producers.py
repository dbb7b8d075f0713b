"""``/api/v1/producers/``: producer clients' figures per topic and the topics under
PRODUCER_EXPIRY (``dashboard.monitoring.producers``, the same reading as every other view)."""

from __future__ import annotations

from django.http import HttpRequest

from dashboard.api import params
from dashboard.api.auth import api_view
from dashboard.api.responses import ApiJsonResponse
from dashboard.monitoring.producers import producers_document

FILTERS = ("cluster", "topic")


@api_view()
def producer_list(request: HttpRequest) -> ApiJsonResponse:
    """Not paginated: one row per producer client and topic, a few hundred at most."""
    query = request.GET
    params.check_known(query, FILTERS)
    doc = producers_document(params.text(query, "cluster", max_length=255))
    topic = params.text(query, "topic", max_length=255)
    if topic is not None:
        doc = {key: [r for r in rows if r["topic"] == topic] for key, rows in doc.items()}
    return ApiJsonResponse(doc)
