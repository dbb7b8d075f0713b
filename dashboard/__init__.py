"""The Lagwatch Django project; its apps live in the sub-packages."""

from dashboard.celery import app as celery_app

__all__ = ["celery_app"]
