"""Fixtures of the report tests: a real sample log in a temporary directory, wired to the
settings the report code reads."""

from __future__ import annotations

import pytest

from collectors.sample_log import SampleLog


@pytest.fixture
def log(tmp_path, settings) -> SampleLog:
    settings.LAGWATCH_SAMPLE_LOG_URL = str(tmp_path / "samples")
    settings.LAGWATCH_REPORTS_DIR = str(tmp_path / "reports")
    return SampleLog(tmp_path / "samples")


@pytest.fixture
def eager_celery():
    """Tasks run in-process when sent (the task body is what is tested, not the broker)."""
    from celery import current_app

    from dashboard import celery_app

    before = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    previous = current_app._get_current_object()
    # Shared tasks resolve to the current app: the project's, whatever an earlier test made.
    celery_app.set_current()
    celery_app.conf.task_always_eager = True
    celery_app.conf.task_eager_propagates = True
    yield celery_app
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = before
    previous.set_current()


@pytest.fixture
def cluster(db):
    from dashboard.monitoring.models import Cluster

    return Cluster.objects.create(name="c1")
