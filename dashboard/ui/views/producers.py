"""Producers (DOMAIN §4): per client and topic, records queued, in flight, delivered, failed
and expired, and the topics under PRODUCER_EXPIRY. Expired records never reach the log, so lag
cannot show them: this page and the sentence on the topic's groups are where they show."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.ingest.store import stored_producers
from dashboard.monitoring.producers import expiry_rows, producer_rows, topic_expiry
from dashboard.ui.params import BadParam, cluster_param
from dashboard.ui.views.common import bad_request, page_context


@require_GET
def producers(request: HttpRequest) -> HttpResponse:
    try:
        cluster = cluster_param(request.GET)
        topic = (request.GET.get("topic") or "").strip()
        if len(topic) > 255:
            raise BadParam("topic", "at most 255 characters")
    except BadParam as e:
        return bad_request(e)
    stored = stored_producers(cluster or None)
    rows = producer_rows(stored)
    expiry = expiry_rows(topic_expiry(stored))
    if topic:
        rows = [r for r in rows if r["topic"] == topic]
        expiry = [e for e in expiry if e["topic"] == topic]
    return render(
        request,
        "ui/producers.html",
        page_context(rows=rows, expiry=expiry, cluster=cluster, topic=topic),
    )
