"""The Celery application, wired to Django settings (``CELERY_*`` names)."""

import os

from celery import Celery
from celery.signals import task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings.base")

app = Celery("lagwatch")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_prerun.connect
def forget_logged_queries(**_: object) -> None:
    """Empty this thread's connections' query log before each task, as Django does before
    each request. Why: with ``DEBUG`` on (the base settings' default: the lab, a development
    stack) Django keeps the text of a connection's last 9,000 queries, parameters inlined, and
    nothing else empties it in a worker; a status run's bulk updates made that log grow the
    Spark worker by over 100 MiB in two hours (benchmarks/RESULTS.md, soak)."""
    from django.db import reset_queries  # Django is set up by the time a task runs

    reset_queries()
