"""The health check (open, for orchestrators). The pages live in ``dashboard.ui``."""

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from dashboard.monitoring.health import health_report


def _health() -> dict:
    # Three missed heartbeats before the pipeline is called late: one can be lost to a restart.
    max_age = 3 * settings.CELERY_BEAT_SCHEDULE["heartbeat"]["schedule"]
    return health_report(timezone.now(), max_age)


@require_GET
@login_not_required
def health(request: HttpRequest) -> JsonResponse:
    report = _health()
    return JsonResponse(report, status=200 if report["ok"] else 503)
