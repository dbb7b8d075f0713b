"""Fixtures of the alerts tests: a monitored world written straight into the real database,
status runs announced with the real signal, Celery tasks run eagerly in this process, and real
receivers (HTTP and SMTP servers on local ports)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from dashboard.celery import app as celery_app
from dashboard.monitoring.models import Cluster, ConsumerGroup, PartitionState, SparkJobRun
from dashboard.signals import status_applied
from tests.alerts.alertmanager_server import Alertmanager
from tests.alerts.receivers import HookReceiver, SmtpReceiver


class MonitoredWorld:
    """Groups and partitions whose statuses a test sets, then "applies" like a status run."""

    def __init__(self) -> None:
        self.cluster = Cluster.objects.create(name="prod")
        self.now = timezone.now().replace(microsecond=0)
        self.groups: dict[tuple[str, str], ConsumerGroup] = {}

    def group(self, name: str, source: str = "kafka") -> ConsumerGroup:
        if (source, name) not in self.groups:
            self.groups[(source, name)] = ConsumerGroup.objects.create(
                cluster=self.cluster, source=source, name=name,
                first_seen_at=self.now, last_seen_at=self.now,
            )  # fmt: skip
        return self.groups[(source, name)]

    def set(self, group: str, topic: str, partition: int, status: str, codes=(), source="kafka",
            lag=10, time_lag_s=30.0, reason="") -> PartitionState:  # fmt: skip
        g = self.group(group, source)
        diagnosis = [{"code": c, "evidence": {}} for c in codes]
        row, _ = PartitionState.objects.update_or_create(
            group=g, topic=topic, partition=partition,
            defaults={"status": status, "diagnosis": diagnosis, "lag": lag,
                      "time_lag_s": time_lag_s, "reason": reason, "sampled_at": self.now,
                      "status_since": self.now},
        )  # fmt: skip
        return row

    def apply(self, step_s: float = 15) -> datetime:
        """One status run: advance the clock, send ``status_applied`` as the pipeline does."""
        self.now += timedelta(seconds=step_s)
        run = SparkJobRun.objects.create(
            job="status", started_at=self.now, finished_at=self.now, window_s=600,
            as_of_ms=int(self.now.timestamp() * 1000), outcome="ok",
        )  # fmt: skip
        for _receiver, outcome in status_applied.send_robust(sender=None, run=run, changes=[]):
            if isinstance(outcome, Exception):
                raise outcome
        return self.now


@pytest.fixture
def mworld(db) -> MonitoredWorld:
    return MonitoredWorld()


@pytest.fixture
def eager_celery(settings) -> Iterator[None]:
    """Deliveries run in this process, at once, retries included (countdowns skipped)."""
    from celery import current_app

    before = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    previous = current_app._get_current_object()
    # Shared tasks resolve to the current app: the project's, whatever an earlier test made.
    celery_app.set_current()
    celery_app.conf.task_always_eager = True
    celery_app.conf.task_eager_propagates = False
    yield
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = before
    previous.set_current()


@pytest.fixture
def run_on_commit(django_capture_on_commit_callbacks, eager_celery):
    """Run the queued deliveries (they are sent on commit) inside the test's transaction."""

    def apply(world: MonitoredWorld, step_s: float = 15) -> datetime:
        with django_capture_on_commit_callbacks(execute=True):
            at = world.apply(step_s)
        drain_retries()
        return at

    return apply


def drain_retries(rounds: int = 20) -> None:
    """Every retry's wait run out at once: each delivery due again is sent as beat's sweep
    would, until none is left waiting (the tests of back-off read the waits chosen from the
    attempts' log, not from the clock)."""
    from dashboard.alerts.due import due_deliveries
    from dashboard.alerts.models import Delivery, DeliveryState
    from dashboard.alerts.tasks import deliver

    for _ in range(rounds):
        waiting = Delivery.objects.filter(state=DeliveryState.RETRYING)
        if not waiting.exists():
            return
        waiting.update(next_attempt_at=timezone.now())
        for pk, _due in due_deliveries():
            deliver(pk)


@pytest.fixture
def hook() -> Iterator[HookReceiver]:
    receiver = HookReceiver()
    yield receiver
    receiver.close()


@pytest.fixture
def smtp() -> Iterator[SmtpReceiver]:
    receiver = SmtpReceiver()
    yield receiver
    receiver.close()


@pytest.fixture
def smtp_settings(settings, smtp):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = smtp.host
    settings.EMAIL_PORT = smtp.port
    return settings


@pytest.fixture
def am_hook() -> Iterator[HookReceiver]:
    """Where the test Alertmanager notifies (its webhook receiver)."""
    receiver = HookReceiver()
    yield receiver
    receiver.close()


@pytest.fixture
def alertmanager(tmp_path, am_hook) -> Iterator[Alertmanager]:
    """A real Alertmanager on a free port, routing ``source="lagwatch"`` to ``am_hook``."""
    server = Alertmanager(tmp_path / "alertmanager", am_hook.url)
    yield server
    server.stop()
