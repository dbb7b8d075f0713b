"""The Celery application, wired to Django settings (``CELERY_*`` names)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings.base")

app = Celery("lagwatch")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
