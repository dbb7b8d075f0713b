"""End to end in the lab: each share-group scenario yields its status from the product, in
time, and the healthy queue stays OK.

A stack of its own with every product service and the workload's queue world
(``lab/workload/queues.py``: four share groups, each on a topic of its own), polled every 5 s,
the status job after every stored cycle with the product's window of 10 commits, as
``test_lab_verdicts.py`` does for the demo world. The test starts the scenarios through the
workload's control endpoint and reads ``manage.py lagwatch_status --json`` as a user's script
would, printing each verdict's time from its fault against the target (a window of polls and
two of beat's periods) and waiting up to three times it:

- ``jobs-workers`` stays OK throughout;
- slow-consumer (``reports-workers``): WARN with SLOW_CONSUMER, lag growing while the start
  offsets move;
- dead-consumer (``emails-workers``): STOP with DEAD_CONSUMER, nobody holding a partition; its
  frozen start offsets and empty membership are what ``kafka-share-groups.sh`` prints;
- poison-message (``images-workers`` partition 0, released after 15 s at each delivery, a
  delivery limit of 8): STALL, the start offset held at the poison while the members fetch,
  with POISON_MESSAGE naming the poison's offset and its deliveries; once the limit archives
  it, POISON_MESSAGE naming it archived after 8 deliveries, as the records Kafka wrote to
  ``__share_group_state`` say (read and decoded apart from the product).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collectors.share_state import given_up
from lab.kafka_tools import share_group_members, share_group_offsets
from lab.stack import Stack
from lab.workload.control import start_scenario, workload_status
from tests.lab.share_records import state_records
from tests.lab_world import lagwatch_status
from tests.waiting import StatusRuns, wait_for_verdict

pytestmark = [
    pytest.mark.lab,
    pytest.mark.share,
    pytest.mark.kafka_since("4.2", "share groups (KIP-932)"),
]

SERVICES = ["zookeeper", "kafka", "redis", "workload", "web", "worker", "collector", "beat"]
POLL_S = 5
JOB_S = 15
WINDOW = 10
TARGET_S = WINDOW * POLL_S + 2 * JOB_S  # printed, not asserted
DEADLINE_S = 3 * TARGET_S
QUEUES = ("jobs-workers", "reports-workers", "emails-workers", "images-workers")

Doc = dict[str, Any]


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Stack, dict]]:
    # The lab's services inherit the test's environment (lab/services.py).
    monkeypatch.setenv("LAGWATCH_LAB_WORLD", "queues")
    monkeypatch.setenv("LAGWATCH_LAB_POLL_S", str(POLL_S))
    monkeypatch.setenv("LAGWATCH_STATUS_EVERY_S", str(JOB_S))
    monkeypatch.setenv("LAGWATCH_STATUS_WINDOW_COMMITS", str(WINDOW))
    monkeypatch.delenv("LAGWATCH_STATUS_MINIMUM_COMPLETE_PCT", raising=False)
    lab = Stack(tmp_path)
    try:
        yield lab, lab.up(SERVICES)
    finally:
        lab.down()


def partitions(doc: Doc, group: str) -> dict[int, Doc]:
    return {p["partition"]: p for p in doc["partitions"] if p["group"] == group}


def group_row(doc: Doc, group: str) -> Doc | None:
    return next((g for g in doc["groups"] if g["group"] == group), None)


def codes(p: Doc) -> list[str]:
    return [d["code"] for d in p["diagnosis"] or []]


def judged(doc: Doc) -> bool:
    """Every queue collected as a share group with its members, every partition judged."""
    for name in QUEUES:
        row, found = group_row(doc, name), partitions(doc, name)
        if row is None or row["type"] != "share" or len(found) != 2 or not row["member_details"]:
            return False
        if not all(p["evaluated_at"] and p["start_offset"] is not None for p in found.values()):
            return False
    return True


def test_share_scenarios_yield_their_verdicts(stack: tuple[Stack, dict]) -> None:
    lab, endpoints = stack
    control, run_dir = endpoints["control"], lab.run_dir
    runs = StatusRuns(run_dir / "data")
    reads: list[tuple[float, Doc]] = []

    def status() -> Doc:
        doc = lagwatch_status(run_dir)
        reads.append((time.time(), doc))
        return doc

    wait_for_verdict(lambda: judged(status()), 240, "every queue collected and judged", runs)
    doc = reads[-1][1]
    assert all(p["status"] == "OK" for q in QUEUES for p in partitions(doc, q).values()), doc
    for q in QUEUES:
        assert all(p["alive"] is True for p in partitions(doc, q).values())

    start_scenario(control, "slow-consumer", delay_ms=400)
    start_scenario(control, "dead-consumer")
    poison = start_scenario(
        control, "poison-message", group="images-workers", partition=0, hold_s=15,
        delivery_limit=8,
    )["details"]  # fmt: skip
    started = time.time()

    def verdict(what: str, check: Any) -> float:
        def found() -> Any:
            return check(status())

        wait_for_verdict(found, DEADLINE_S, what, runs, every=3.0)
        took = time.time() - started
        print(f"{what}: {took:.0f} s (target {TARGET_S} s)")
        return took

    def all_partitions(group: str, state: str, code: str | None) -> Any:
        def check(doc: Doc) -> bool:
            found = partitions(doc, group)
            return len(found) == 2 and all(
                p["status"] == state and (code is None or code in codes(p)) for p in found.values()
            )

        return check

    verdict(
        "dead queue STOP DEAD_CONSUMER", all_partitions("emails-workers", "STOP", "DEAD_CONSUMER")
    )
    dead = reads[-1][1]
    assert all(p["alive"] is False for p in partitions(dead, "emails-workers").values())
    assert group_row(dead, "emails-workers")["member_details"] == []
    # Frozen, so Kafka's tool must print the very start offsets Lagwatch judged.
    printed = share_group_offsets(endpoints["kafka"], "emails-workers")
    assert {p: s for (_, p), (s, _) in printed.items()} == {
        p: row["start_offset"] for p, row in partitions(dead, "emails-workers").items()
    }
    assert share_group_members(endpoints["kafka"], "emails-workers") == {}

    x = poison["offset"]

    def poison_of(doc: Doc, archived: bool) -> Doc | None:
        p = partitions(doc, "images-workers").get(0)
        found = [d["evidence"] for d in (p or {}).get("diagnosis") or []
                 if d["code"] == "POISON_MESSAGE" and d["evidence"].get("archived") is archived]  # fmt: skip
        return found[0] if found else None

    def poisoned(doc: Doc) -> bool:
        p = partitions(doc, "images-workers").get(0)
        return (
            p is not None and p["status"] == "STALL" and p["start_offset"] == x
            and poison_of(doc, archived=False) is not None
        )  # fmt: skip

    verdict("poisoned queue STALL at the poison, POISON_MESSAGE naming it", poisoned)
    held = reads[-1][1]
    assert partitions(held, "images-workers")[0]["alive"] is True
    named = poison_of(held, archived=False)
    assert named is not None and (named["offset"], named["limit"]) == (x, 8)
    deliveries = workload_status(control)["share_groups"]["images-workers"]
    assert 2 <= named["deliveries"] <= sum(m["poison_deliveries"] for m in deliveries["members"])

    # At the limit the record is archived and the start offset passes it: the diagnosis
    # names it given up, with the deliveries the records Kafka wrote show.
    verdict(
        "poison archived at the limit, POISON_MESSAGE naming it",
        lambda doc: poison_of(doc, archived=True) is not None,
    )
    gone = poison_of(reads[-1][1], archived=True)
    assert gone is not None and (gone["offset"], gone["deliveries"], gone["limit"]) == (x, 8, 8)
    assert partitions(reads[-1][1], "images-workers")[0]["status"] in ("WARN", "STALL")
    written = [g for r in state_records(endpoints["kafka"], "images-workers") for g in given_up(r)]
    assert sorted(set(written)) == [(x, x, 8)]

    verdict(
        "slow queue WARN SLOW_CONSUMER", all_partitions("reports-workers", "WARN", "SLOW_CONSUMER")
    )

    # The healthy queue was OK at every read once judged.
    bad = [
        (at, p["status"], p["reason"])
        for at, doc in reads
        for p in partitions(doc, "jobs-workers").values()
        if p["evaluated_at"] and p["status"] != "OK"
    ]
    assert bad == []
