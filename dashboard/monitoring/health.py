"""What the health check reports, kept apart from the view so it can be tested plainly."""

from datetime import datetime

from django.db import connection

from dashboard.monitoring.models import ServiceHeartbeat, SourceHealth


def health_report(now: datetime, heartbeat_max_age_s: float) -> dict:
    """Database reachability, the age of the Celery heartbeat and, when the sample log is on
    an object store the collectors could not reach, that store's outage (``sample_log``).

    ``ok`` only requires the database: a stalled pipeline is reported, not hidden, but must not
    make an orchestrator restart a web server that is itself fine.
    """
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        database = "ok"
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        return {"ok": False, "database": f"error: {type(exc).__name__}", "celery": "unknown"}
    beat = ServiceHeartbeat.objects.filter(name="celery").first()
    if beat is None:
        celery = {"status": "no heartbeat yet", "age_s": None}
    else:
        age = (now - beat.at).total_seconds()
        celery = {"status": "ok" if age <= heartbeat_max_age_s else "late", "age_s": round(age, 1)}
    report = {"ok": True, "database": database, "celery": celery}
    down = SourceHealth.objects.filter(source="sample_log", reachable=False).order_by(
        "-last_error_at"
    )
    if (outage := down.first()) is not None:
        report["sample_log"] = {"status": "unreachable", "error": outage.last_error,
                                "since": outage.last_error_at.isoformat()}  # fmt: skip
    return report
