"""Deliveries due by the database, not by countdown messages: a due delivery is claimed by
one caller only, the sweep finds retries whose wait is over and new deliveries whose message
never came, and sends each once per due time (real Redis for that)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from dashboard import locks
from dashboard.alerts import due
from dashboard.alerts.models import Alert, Channel, Delivery, DeliveryState

pytestmark = pytest.mark.django_db


@pytest.fixture
def delivery(mworld) -> Delivery:
    mworld.set("g", "t", 0, "STALL")
    mworld.apply()
    mworld.apply()  # the default rule fires on its second evaluation
    alert = Alert.objects.get(group="g")
    channel = Channel.objects.create(name="hook", kind="webhook", url="http://127.0.0.1:9/h")
    return Delivery.objects.create(
        alert=alert, channel=channel, channel_name="hook", notice="firing"
    )


def test_a_new_delivery_is_claimed_once(delivery: Delivery) -> None:
    now = timezone.now()
    assert due.claim(delivery.pk, now)
    assert not due.claim(delivery.pk, now)  # the message came twice: sent once
    delivery.refresh_from_db()
    assert delivery.next_attempt_at == now + timedelta(seconds=due.claim_s())
    # A lost worker's claim lapses: the delivery is due again.
    assert due.claim(delivery.pk, now + timedelta(seconds=due.claim_s() + 1))


@pytest.mark.parametrize("state", [DeliveryState.SENT, DeliveryState.FAILED])
def test_an_ended_delivery_is_never_claimed(delivery: Delivery, state: str) -> None:
    Delivery.objects.filter(pk=delivery.pk).update(state=state)
    assert not due.claim(delivery.pk)
    assert due.due_deliveries(timezone.now() + timedelta(days=1)) == []


def test_a_retry_is_due_when_its_wait_is_over(delivery: Delivery) -> None:
    later = timezone.now() + timedelta(seconds=30)
    Delivery.objects.filter(pk=delivery.pk).update(
        state=DeliveryState.RETRYING, next_attempt_at=later, attempts=1
    )
    assert due.due_deliveries(later - timedelta(seconds=1)) == []
    assert not due.claim(delivery.pk, later - timedelta(seconds=1))
    assert due.due_deliveries(later) == [(delivery.pk, later)]
    assert due.claim(delivery.pk, later)


def test_a_new_delivery_is_left_to_its_own_message_for_a_while(delivery: Delivery) -> None:
    created = delivery.created_at
    assert due.due_deliveries(created + due.NEW_GRACE - timedelta(seconds=1)) == []
    assert due.due_deliveries(created + due.NEW_GRACE) == [(delivery.pk, created)]


@pytest.fixture
def real_redis(redis_url: str, settings) -> Iterator[None]:
    settings.REDIS_URL = redis_url
    locks._client = None
    yield
    locks._client = None


def test_the_sweep_sends_each_due_time_once(
    delivery: Delivery, real_redis: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[int] = []
    monkeypatch.setattr(due, "dispatch", lambda pk: sent.append(pk) or True)
    at = timezone.now() + timedelta(minutes=1)
    Delivery.objects.filter(pk=delivery.pk).update(state=DeliveryState.RETRYING, next_attempt_at=at)
    assert due.send_due(at) == 1 and due.send_due(at) == 0  # a busy worker: not sent again
    later = at + timedelta(seconds=20)  # its next due time (a retry, or a lapsed claim)
    Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=later)
    assert due.send_due(later) == 1
    assert sent == [delivery.pk, delivery.pk]
