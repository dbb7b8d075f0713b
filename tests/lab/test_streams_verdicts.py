"""End to end in the lab: a Kafka Streams application's streams group judged by the product,
OK while it runs, STALL while it is paused with records waiting, OK again once resumed, STOP
with DEAD_CONSUMER once every instance is gone with records waiting.

A stack of its own with every product service and the lab's ``streams-app`` (two instances of
the word count, ``lab/kafka_streams/world.py``), polled every 5 s, the status job after every
stored cycle with a window of 10 commits, as ``test_share_verdicts.py`` does for queues. The
test reads ``manage.py lagwatch_status --json`` as a user's script would: the group of type
"streams" with its topology and its members' tasks, every source partition (input and
repartition topics) judged OK and alive; paused (``KafkaStreams.pause()``: the members stay,
nothing is committed, the world's lines keep coming): the input partitions STALL, alive;
resumed: OK; then the service stopped and lines produced with nobody to read them: the input
partitions STOP with DEAD_CONSUMER (the consumer groups' rule, docs/EVALUATOR.md, "Streams
groups"), printing the verdict's time against its target."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from lab.kafka_streams.world import APPLICATION_ID, INPUT, PARTITIONS, pause_world
from lab.stack import Stack
from tests.lab_world import lagwatch_status
from tests.waiting import StatusRuns, wait_for_verdict

pytestmark = [
    pytest.mark.lab,
    pytest.mark.streams,
    pytest.mark.kafka_since("4.2", "streams groups (KIP-1071)"),
]

SERVICES = ["zookeeper", "kafka", "redis", "streams-app", "web", "worker", "collector", "beat"]
POLL_S = 5
JOB_S = 15
WINDOW = 10
TARGET_S = WINDOW * POLL_S + 2 * JOB_S  # printed, not asserted
DEADLINE_S = 3 * TARGET_S
REPARTITION = f"{APPLICATION_ID}-counts-repartition"

Doc = dict[str, Any]


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Stack, dict]]:
    # The lab's services inherit the test's environment (lab/services.py).
    monkeypatch.setenv("LAGWATCH_LAB_POLL_S", str(POLL_S))
    monkeypatch.setenv("LAGWATCH_STATUS_EVERY_S", str(JOB_S))
    monkeypatch.setenv("LAGWATCH_STATUS_WINDOW_COMMITS", str(WINDOW))
    monkeypatch.delenv("LAGWATCH_STATUS_MINIMUM_COMPLETE_PCT", raising=False)
    lab = Stack(tmp_path)
    try:
        yield lab, lab.up(SERVICES)
    finally:
        lab.down()


def partitions(doc: Doc) -> dict[tuple[str, int], Doc]:
    return {
        (p["topic"], p["partition"]): p for p in doc["partitions"] if p["group"] == APPLICATION_ID
    }


def group_row(doc: Doc) -> Doc | None:
    return next((g for g in doc["groups"] if g["group"] == APPLICATION_ID), None)


def judged_ok(doc: Doc) -> bool:
    """The streams group with both members, every source partition judged OK and alive."""
    row, found = group_row(doc), partitions(doc)
    if row is None or row["type"] != "streams" or len(row["member_details"] or []) != 2:
        return False
    wanted = {(t, p) for t in (INPUT, REPARTITION) for p in range(PARTITIONS)}
    return set(found) == wanted and all(
        p["evaluated_at"] and p["complete"] == 1.0 and p["status"] == "OK" and p["alive"]
        for p in found.values()
    )


def produce_until(kafka: str, stop: threading.Event) -> None:
    producer = Producer({"bootstrap.servers": kafka, "linger.ms": 5})
    n = 0
    while not stop.wait(0.2):
        producer.produce(INPUT, value=f"nobody reads line {n}".encode(), partition=n % PARTITIONS)
        producer.poll(0)
        n += 1
    producer.flush(5)


def test_a_streams_group_ok_then_stopped(stack: tuple[Stack, dict]) -> None:
    lab, endpoints = stack
    runs = StatusRuns(lab.run_dir / "data")
    doc = wait_for_verdict(
        lambda: (d := lagwatch_status(lab.run_dir)) and judged_ok(d) and d,
        300,
        "the streams group judged OK on full windows",
        runs,
        every=3.0,
    )
    row = group_row(doc)
    assert row is not None and row["state"] == "Stable"
    assert [s["source_topics"] for s in row["topology"]["subtopologies"]] == [
        [INPUT],
        [REPARTITION],
    ]
    assert all(m["process_id"] and m["tasks"]["active"] for m in row["member_details"])

    # Paused: the members stay in the group and commit nothing while lines keep coming.
    pid = lab.status()["services"]["streams-app"]["pid"]
    pause_world(pid)
    started = time.time()

    def stalled() -> Doc | None:
        d = lagwatch_status(lab.run_dir)
        found = partitions(d)
        inputs = [found.get((INPUT, p)) for p in range(PARTITIONS)]
        held = all(p is not None and p["status"] == "STALL" and p["alive"] for p in inputs)
        return d if held else None

    doc = wait_for_verdict(
        stalled, DEADLINE_S, "the paused input partitions STALL", runs, every=3.0
    )
    print(f"paused streams group STALL: {time.time() - started:.0f} s (target {TARGET_S} s)")
    row = group_row(doc)
    assert row is not None and len(row["member_details"]) == 2  # still in the group
    pause_world(pid, paused=False)
    wait_for_verdict(
        lambda: (d := lagwatch_status(lab.run_dir)) and judged_ok(d) and d,
        DEADLINE_S,
        "the resumed group OK again",
        runs,
        every=3.0,
    )

    lab.stop_service("streams-app")
    stop = threading.Event()
    producer = threading.Thread(target=produce_until, args=(endpoints["kafka"], stop))
    producer.start()
    started = time.time()
    try:

        def stopped() -> Doc | None:
            d = lagwatch_status(lab.run_dir)
            found = partitions(d)
            inputs = [found.get((INPUT, p)) for p in range(PARTITIONS)]
            dead = all(
                p is not None
                and p["status"] == "STOP"
                and "DEAD_CONSUMER" in [x["code"] for x in p["diagnosis"] or []]
                for p in inputs
            )
            return d if dead else None

        doc = wait_for_verdict(stopped, DEADLINE_S, "the input partitions STOP", runs, every=3.0)
        print(
            f"streams group STOP DEAD_CONSUMER: {time.time() - started:.0f} s (target {TARGET_S} s)"
        )
    finally:
        stop.set()
        producer.join(10)
    row = group_row(doc)
    assert row is not None and row["state"] == "Empty" and row["member_details"] == []
    assert all(p["alive"] is False for (t, _), p in partitions(doc).items() if t == INPUT)
