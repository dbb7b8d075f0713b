"""The soak's count of alert notices (``benchmarks/soak_deliveries.py``): what the receiver got
against the channel's deliveries and the alerts, case by case."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.soak_deliveries import AlertRow, DeliveryRow, Received, count_notices

SINCE = 1_000.0  # the channel attached
FIRED = AlertRow(1, 1_010.0, None)
RESOLVED = AlertRow(1, 1_010.0, 1_100.0)
SENT = DeliveryRow(1, "firing", "sent", 1)
SENT_RESOLVED = DeliveryRow(1, "resolved", "sent", 1)
GOT = Received(1, "firing", 1_011.0)
GOT_RESOLVED = Received(1, "resolved", 1_101.0)


def summary(out: dict[str, Any]) -> dict[str, Any]:
    """What a case checks: (alert, notice) pairs per figure, with the count or the reason."""
    return {
        "twice": [(t["alert"], t["notice"], t["count"]) for t in out["sent_twice_list"]],
        "lost": [(x["alert"], x["notice"], x["why"]) for x in out["lost_list"]],
        "waiting": [(w["alert"], w["notice"], w["state"]) for w in out["waiting_at_end"]],
        "unrecorded": [(u["alert"], u["notice"], u["state"])
                       for u in out["received_not_recorded_sent"]],
    }  # fmt: skip


NOTHING: dict[str, list] = {"twice": [], "lost": [], "waiting": [], "unrecorded": []}
CASES = [
    ("no alert, nothing received", [], [], [], NOTHING),
    ("fired, sent, received once", [GOT], [SENT], [FIRED], NOTHING),
    ("fired and resolved, both received once", [GOT, GOT_RESOLVED], [SENT, SENT_RESOLVED],
     [RESOLVED], NOTHING),
    ("firing received twice", [GOT, GOT._replace(at=1_030.0)], [SENT], [FIRED],
     NOTHING | {"twice": [(1, "firing", 2)]}),
    ("firing received three times", [GOT, GOT, GOT], [SENT], [FIRED],
     NOTHING | {"twice": [(1, "firing", 3)]}),
    ("resolved twice, firing once", [GOT, GOT_RESOLVED, GOT_RESOLVED], [SENT, SENT_RESOLVED],
     [RESOLVED], NOTHING | {"twice": [(1, "resolved", 2)]}),
    ("two alerts, the second's firing twice", [GOT, Received(2, "firing", 1), Received(2, "firing", 2)],
     [SENT, DeliveryRow(2, "firing", "sent", 2)], [FIRED, AlertRow(2, 1_020.0, None)],
     NOTHING | {"twice": [(2, "firing", 2)]}),
    ("the database says sent, never received", [], [SENT], [FIRED],
     NOTHING | {"lost": [(1, "firing", "the database says sent; never received")]}),
    ("sent and received, but for another notice", [GOT_RESOLVED], [SENT, SENT_RESOLVED],
     [RESOLVED],
     NOTHING | {"lost": [(1, "firing", "the database says sent; never received")]}),
    ("fired, no delivery queued", [], [], [FIRED],
     NOTHING | {"lost": [(1, "firing", "none received or queued")]}),
    ("fired, delivery failed, none received", [], [DeliveryRow(1, "firing", "failed", 6)], [FIRED],
     NOTHING | {"lost": [(1, "firing", "none received; delivery failed")]}),
    ("fired, delivery pending at the end", [], [DeliveryRow(1, "firing", "pending", 0)], [FIRED],
     NOTHING | {"waiting": [(1, "firing", "pending")]}),
    ("fired, delivery retrying at the end", [], [DeliveryRow(1, "firing", "retrying", 3)],
     [FIRED], NOTHING | {"waiting": [(1, "firing", "retrying")]}),
    ("fired before the channel: nothing expected", [], [], [AlertRow(1, 990.0, 1_100.0)],
     NOTHING),
    ("resolved, its notice never queued", [GOT], [SENT], [RESOLVED],
     NOTHING | {"lost": [(1, "resolved", "none received or queued")]}),
    ("resolved, its notice pending", [GOT], [SENT, DeliveryRow(1, "resolved", "pending", 0)],
     [RESOLVED], NOTHING | {"waiting": [(1, "resolved", "pending")]}),
    ("received, the row not yet marked sent", [GOT], [DeliveryRow(1, "firing", "pending", 1)],
     [FIRED], NOTHING | {"unrecorded": [(1, "firing", "pending")]}),
    ("received, the row says failed: not lost", [GOT], [DeliveryRow(1, "firing", "failed", 6)],
     [FIRED], NOTHING | {"unrecorded": [(1, "firing", "failed")]}),
    ("received with no row at all", [GOT], [], [FIRED],
     NOTHING | {"unrecorded": [(1, "firing", None)]}),
    ("a test notice is not a notice of an alert", [Received(0, "test", 1), GOT], [SENT], [FIRED],
     NOTHING),
    ("still firing: no resolved notice expected", [GOT], [SENT], [FIRED], NOTHING),
]  # fmt: skip


@pytest.mark.parametrize(
    ("received", "deliveries", "alerts", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_count_notices(
    received: list[Received],
    deliveries: list[DeliveryRow],
    alerts: list[AlertRow],
    expected: dict[str, list],
) -> None:
    out = count_notices(received, deliveries, alerts, SINCE)
    assert summary(out) == expected
    assert out["sent_twice"] == len(expected["twice"])
    assert out["lost"] == len(expected["lost"])


def test_counts_and_times() -> None:
    out = count_notices(
        [GOT._replace(at=1_030.0), GOT, Received(0, "test", 5.0)],
        [SENT],
        [FIRED, AlertRow(2, 900.0, None)],
        SINCE,
    )
    assert (out["received"], out["deliveries"], out["alerts_fired"]) == (2, 1, 1)
    assert out["sent_twice_list"][0]["at"] == ["00:16:51", "00:17:10"]  # sorted, UTC
