"""What a store serves, as one JSON document: run as ``python -m tests.dashboard.backup_answers
USER TOKEN`` against a store (its ``DATABASE_URL`` and ``LAGWATCH_DATA_DIR`` in the
environment) by ``tests/dashboard/test_backup.py``, once on the original and once on its
restored copy, which must answer the same.

Pages are compared as served, less what differs between any two requests (the CSRF token,
the time since an event, a chart's time axis up to now, the worker's liveness by its
heartbeat's age); ``/api/v1`` and Burrow's ``/v3`` answers as JSON, less the times of the
answer itself (``as_of``); the sample log as its closed hours' rows.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

_TOKEN = re.compile(r'(csrfmiddlewaretoken" value="|csrfToken\W+|csrf_token\W+)[\w-]+')
_AGO = re.compile(r"(\b\d+(\.\d+)?\s?(ms|s|m|min|h|d)\b\s*)+")
# A sparkline's x axis, and a chart's time range, run up to now.
_POINTS = re.compile(r'points="[^"]*"|"range": \["[^"\]]*", "[^"\]]*"\]')
# The worker's liveness, judged from its heartbeat's age at the request.
_LIVENESS = re.compile(r"Celery \w+ \(heartbeat")
_ANSWER_TIMES = {"as_of", "generated_at"}


def _page(text: str) -> str:
    text = _LIVENESS.sub("Celery <liveness> (heartbeat", _TOKEN.sub(r"\1<csrf>", text))
    return _POINTS.sub("<axis>", _AGO.sub("<d> ", text))


def _json(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items() if k not in _ANSWER_TIMES}
    if isinstance(value, list):
        return [_json(v) for v in value]
    return value


def answers(user: str, token: str) -> dict[str, Any]:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    from collectors.sample_log import SampleLog
    from dashboard.monitoring.models import ConsumerGroup, PartitionState

    browser = Client(HTTP_HOST="localhost")
    browser.force_login(get_user_model().objects.get(username=user))
    group = ConsumerGroup.objects.order_by("cluster__name", "source", "name").first()
    partition = PartitionState.objects.order_by("group__name", "topic", "partition").first()
    out: dict[str, Any] = {}
    pages = ["/", "/groups/", "/sources/", "/jobs/", "/producers/", "/clusters/prod/",
             f"/groups/{group.pk}/", f"/partitions/{partition.pk}/"]  # fmt: skip
    for url in pages:
        response = browser.get(url)
        out[url] = [response.status_code, _page(response.content.decode())]
    api = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Bearer {token}")
    for url in ["/api/v1/clusters/", "/api/v1/clusters/prod/", "/api/v1/groups/",
                f"/api/v1/groups/{group.pk}/", "/api/v1/partitions/?page_size=500",
                "/api/v1/status/", "/api/v1/status/changes/", "/api/v1/rebalances/",
                "/api/v1/producers/", "/v3/kafka", "/v3/kafka/prod/consumer"]:  # fmt: skip
        response = api.get(url)
        out[url] = [response.status_code, _json(response.json())]
    rows = SampleLog.from_url(settings.LAGWATCH_SAMPLE_LOG_URL).read().to_pylist()
    out["samples"] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
    return out


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings.base")
    import django

    django.setup()
    print(json.dumps(answers(sys.argv[1], sys.argv[2]), default=str, sort_keys=True))
