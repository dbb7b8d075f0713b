"""``/api/v1/producers/``: producer clients' figures per topic and the topics under
PRODUCER_EXPIRY (``dashboard.monitoring.producers``, the same reading as every other view)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router

from dashboard.api.schemas.common import answers
from dashboard.api.schemas.documents import Producers
from dashboard.api.schemas.query import ProducerQuery
from dashboard.monitoring.producers import producers_document

router = Router(tags=["producers"])


@router.get("/", response=answers(Producers, 400), url_name="producers",
            operation_id="listProducers",
            summary="Producer clients per topic, and the topics under PRODUCER_EXPIRY",
            description="Not paginated: one row per producer client and topic.")  # fmt: skip
def producer_list(request: HttpRequest, query: Query[ProducerQuery]) -> dict:
    # Not paginated: one row per producer client and topic, a few hundred at most.
    doc = producers_document(query.cluster)
    if query.topic is not None:
        doc = {key: [r for r in rows if r["topic"] == query.topic] for key, rows in doc.items()}
    return doc
