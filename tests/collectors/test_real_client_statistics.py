"""Statistics of real librdkafka clients against the lab broker: parsed, and for consumers
merged into a memberless group as the cycle would (what Tansu gives, LAB.md)."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from collectors.client_assignments import apply_client_reports
from collectors.client_reports import CONSUMER, PRODUCER
from collectors.ingest_parsing import parse_librdkafka_stats
from lab.workload.clients import leave_and_close
from tests.collectors.ingest_documents import RECEIVED_MS
from tests.collectors.test_client_assignments import snap
from tests.waiting import wait_for


def _name(kind: str) -> str:
    return f"cs-{kind}-{uuid.uuid4().hex[:10]}"


@pytest.mark.lab
def test_real_consumers_statistics_give_the_assignment_they_really_have(
    kafka_bootstrap: str, admin: AdminClient
) -> None:
    topic, group = _name("t"), _name("g")
    admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(10)
    docs: dict[str, list[str]] = {"c1": [], "c2": []}
    consumers = {
        cid: Consumer(
            {
                "bootstrap.servers": kafka_bootstrap,
                "group.id": group,
                "client.id": cid,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 1000,
                "statistics.interval.ms": 300,
                "stats_cb": docs[cid].append,
            }
        )
        for cid in docs
    }
    try:
        for c in consumers.values():
            c.subscribe([topic])

        def split() -> bool:
            got = [{(tp.topic, tp.partition) for tp in c.assignment()} for c in consumers.values()]
            return all(got) and len(got[0] | got[1]) == 4 and not got[0] & got[1]

        deadline = time.monotonic() + 60
        while not split():
            assert time.monotonic() < deadline, "the two consumers never shared the partitions"
            for c in consumers.values():
                c.poll(0.1)
        # Statistics written after the split, while the assignment holds. A document is
        # delivered on a later poll than the one it was written before, so a loaded machine
        # delivers documents written before the rebalance after it (a fresh-clone run read
        # all four partitions from one). The document's ``ts`` is librdkafka's monotonic
        # clock in microseconds, the clock of ``time.monotonic()``: keep those written after.
        split_us = time.monotonic() * 1e6

        def after_split(cid: str) -> list[dict]:
            return [d for d in map(json.loads, docs[cid]) if d["ts"] > split_us]

        while not all(after_split(cid) for cid in docs):
            assert time.monotonic() < deadline + 10, "no statistics after the rebalance"
            for c in consumers.values():
                c.poll(0.1)
        assert split(), "a rebalance happened meanwhile"
        reports = []
        for cid, c in consumers.items():
            report = parse_librdkafka_stats(after_split(cid)[-1], group, RECEIVED_MS)
            real = tuple(sorted((tp.topic, tp.partition) for tp in c.assignment()))
            assert report.assignment == real
            assert report.assignment_size == len(real)
            assert (report.kind, report.client_id, report.cgrp_state) == (CONSUMER, cid, "up")
            assert report.name.startswith(f"{cid}#consumer-")
            assert report.rebalance_cnt is not None and report.rebalance_cnt >= 1
            assert abs(report.time_ms - time.time() * 1000) < 60_000, "a wall-clock time"
            reports.append(report)
        # What Tansu gives (LAB.md): no members. The clients fill them in.
        (filled,) = apply_client_reports(
            [snap(group=group, members_known=False, topics=())], reports
        )
        owners = {tp: m.client_id for m in filled.members for tp in m.assignment}
        assert owners == {
            (tp.topic, tp.partition): cid for cid, c in consumers.items() for tp in c.assignment()
        }
    finally:
        for c in consumers.values():
            leave_and_close(c)


@pytest.mark.lab
def test_real_producers_statistics_parse(kafka_bootstrap: str, admin: AdminClient) -> None:
    topic = _name("t")
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(10)
    docs: list[str] = []
    producer = Producer(
        {
            "bootstrap.servers": kafka_bootstrap,
            "client.id": "cs-producer",
            "statistics.interval.ms": 200,
            "stats_cb": docs.append,
            "linger.ms": 0,
        }
    )
    # Produce only once the broker serves both partitions, and count the deliveries: a
    # record sent while the new topic's metadata was still propagating fails, and a failed
    # record is not in ``txmsgs``.
    wait_for(
        lambda: len(producer.list_topics(topic, timeout=5).topics[topic].partitions) == 2,
        30, "the new topic's partitions in the producer's metadata",
    )  # fmt: skip
    errors: list[object] = []

    def delivered(err: object, _message: object) -> None:
        if err is not None:
            errors.append(err)

    for i in range(20):
        producer.produce(topic, b"x", partition=i % 2, on_delivery=delivered)
    assert producer.flush(30) == 0
    assert errors == []

    def counts(doc: str) -> tuple[int, list[tuple[int, int, int]]]:
        parsed = parse_librdkafka_stats(json.loads(doc), None, RECEIVED_MS)
        mine = sorted(
            (p.partition, p.txmsgs, p.queued) for p in parsed.partitions if p.topic == topic
        )
        return parsed.msg_cnt, mine

    def all_delivered(doc: str) -> bool:
        # A statistics document is a snapshot: one taken mid-flush may count one partition's
        # records and not yet the other's, or all of them sent but not yet acknowledged
        # (msg_cnt still 20). Wait for one that has both at 10 and nothing outstanding.
        # ``txmsgs`` counts transmissions: a request retried under load (a fresh-clone run)
        # sent one partition's 10 records twice, 20, though each was delivered once.
        if topic not in doc:
            return False
        outstanding, mine = counts(doc)
        sent = [(partition, txmsgs) for partition, txmsgs, _ in mine]
        return [p for p, _ in sent] == [0, 1] and all(n >= 10 for _, n in sent) and not outstanding

    deadline = time.monotonic() + 30
    while not any(all_delivered(d) for d in docs):
        last = counts(docs[-1]) if docs else None
        assert time.monotonic() < deadline, (
            f"{len(docs)} statistics, the last (msg_cnt, counts) {last}"
        )
        producer.poll(0.1)
    doc = next(d for d in reversed(docs) if all_delivered(d))
    report = parse_librdkafka_stats(json.loads(doc), None, RECEIVED_MS)
    assert (report.kind, report.client_id, report.msg_cnt) == (PRODUCER, "cs-producer", 0)
    mine = [p for p in report.partitions if p.topic == topic]
    assert [(p.partition, p.queued) for p in mine] == [(0, 0), (1, 0)]
    assert all(p.txmsgs >= 10 for p in mine), [p.txmsgs for p in mine]
    assert report.txerrs == 0 and report.in_flight == 0
