"""Producer delivery counts (DOMAIN §4): what librdkafka's statistics lack, and what they mean.

librdkafka's statistics say how many records a producer holds (queued, in flight) but count
no expired ones: a batch not acknowledged within ``delivery.timeout.ms`` (librdkafka's
``message.timeout.ms``) only surfaces to the application as a delivery report with the error
``_MSG_TIMED_OUT``. So the producer counts its delivery reports itself (the client package's
``DeliveryCounts``, ``clients/python``, docs/INGEST.md) and pushes the counts inside its
statistics document, under ``lagwatch_deliveries``::

    {"instance": "5f0c…",                       # optional: one id per producer instance
     "counts": [{"topic": "orders", "partition": 3, "delivered": 120,
                 "failed": {"_MSG_TIMED_OUT": 4, "_MSG_SIZE_TOO_LARGE": 1}}]}

Counts are cumulative per producer instance, so a restarted client starts again from zero.
The store keeps, per client row, the counts of the instances that ended (``carried``) and the
latest counts of the current one (``last``); the figures shown are their sum, so a restart
neither loses what was counted before it nor makes anything negative. A restart is a new
``instance`` id, or, without ids, any count lower than the previous push's (a count only
grows within one instance).

Pure functions, no Django: the ingest parses with :func:`parse_deliveries`, the store merges
with :func:`accumulate`, readers build rows with :func:`producer_topics`. Figures only: the
``PRODUCER_EXPIRY`` diagnosis is decided from these rows by the evaluator's per-topic rule
(``spark_jobs/evaluator/producer_expiry.py``), where every other diagnosis is decided.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from collectors.client_reports import ClientPartition, ClientReport
from collectors.ingest_parsing import (
    MAX_NAME_LEN,
    IngestError,
    _int,
    _join,
    _name,
    _object,
    _type,
)

FIELD = "lagwatch_deliveries"
TIMED_OUT = "_MSG_TIMED_OUT"  # librdkafka's error name for a record expired by its timeout
DELIVERED = "delivered"
UNKNOWN_PARTITION = -1  # a record that expired before the partitioner placed it

# (topic, partition, outcome) -> count; outcome is DELIVERED or a librdkafka error name.
Counts = dict[tuple[str, int, str], int]


@dataclass(frozen=True)
class PushedDeliveries:
    """One push's delivery counts, as the client counted them since it started."""

    counts: Counts
    instance: str | None = None


@dataclass
class DeliveryState:
    """What the store keeps per client: see the module docstring. ``expired_grew_at_ms`` is,
    per topic, the report time at which its expired total last grew: the PRODUCER_EXPIRY rule
    reads it.
    """

    instance: str | None = None
    last: Counts = field(default_factory=dict)
    carried: Counts = field(default_factory=dict)
    restarts: int = 0
    expired_grew_at_ms: dict[str, int] = field(default_factory=dict)

    def totals(self) -> Counts:
        out = dict(self.carried)
        for key, value in self.last.items():
            out[key] = out.get(key, 0) + value
        return out


# --- the pushed block --------------------------------------------------------------------------


def parse_deliveries(value: object, path: str = FIELD) -> PushedDeliveries:
    """Validate the ``lagwatch_deliveries`` block; a refusal names the field's path."""
    d = _object(value, path)
    instance = d.get("instance")
    if instance is not None:
        instance = _name(instance, _join(path, "instance"))
    entries = d.get("counts")
    if not isinstance(entries, list):
        raise IngestError(_join(path, "counts"), f"must be an array, got {_type(entries)}")
    counts: Counts = {}
    seen: dict[tuple[str, int], int] = {}
    for i, entry in enumerate(entries):
        epath = _join(_join(path, "counts"), i)
        e = _object(entry, epath)
        topic = _name(e.get("topic"), _join(epath, "topic"))
        partition = _int(e.get("partition"), _join(epath, "partition"), UNKNOWN_PARTITION)
        if (topic, partition) in seen:
            raise IngestError(
                epath, f"{topic}[{partition}] repeats {path}.counts.{seen[topic, partition]}"
            )
        seen[topic, partition] = i
        delivered = _int(e.get(DELIVERED, 0), _join(epath, DELIVERED), minimum=0)
        if delivered:
            counts[topic, partition, DELIVERED] = delivered
        failed = e.get("failed", {})
        fpath = _join(epath, "failed")
        for reason, count in _object(failed, fpath).items():
            rpath = _join(fpath, reason)
            if not reason or len(reason) > MAX_NAME_LEN or reason == DELIVERED:
                raise IngestError(rpath, "must be a librdkafka error name such as _MSG_TIMED_OUT")
            n = _int(count, rpath, minimum=0)
            if n:
                counts[topic, partition, reason] = n
    return PushedDeliveries(counts=counts, instance=instance)


# --- merging pushes across restarts ------------------------------------------------------------


def is_restart(state: DeliveryState, pushed: PushedDeliveries) -> bool:
    """A new instance id, or any count lower than the previous push's (gone counts are 0)."""
    if None not in (state.instance, pushed.instance) and state.instance != pushed.instance:
        return True
    return any(pushed.counts.get(key, 0) < value for key, value in state.last.items())


def _expired_by_topic(counts: Mapping[tuple[str, int, str], int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for (topic, _, outcome), n in counts.items():
        if outcome == TIMED_OUT:
            out[topic] = out.get(topic, 0) + n
    return out


def accumulate(state: DeliveryState | None, pushed: PushedDeliveries, at_ms: int) -> DeliveryState:
    """The state after one push at ``at_ms``; ``state`` is not modified."""
    before = state or DeliveryState()
    carried = dict(before.carried)
    restarts = before.restarts
    if state is not None and is_restart(before, pushed):
        for key, value in before.last.items():
            carried[key] = carried.get(key, 0) + value
        restarts += 1
    after = DeliveryState(
        instance=pushed.instance,
        last=dict(pushed.counts),
        carried=carried,
        restarts=restarts,
        expired_grew_at_ms=dict(before.expired_grew_at_ms),
    )
    old = _expired_by_topic(before.totals())
    for topic, n in _expired_by_topic(after.totals()).items():
        if n > old.get(topic, 0):
            after.expired_grew_at_ms[topic] = at_ms
    return after


# --- stored form -------------------------------------------------------------------------------


def _counts_to_list(counts: Counts) -> list[list[Any]]:
    return [[t, p, o, n] for (t, p, o), n in sorted(counts.items())]


def _counts_from_list(rows: Iterable[Any]) -> Counts:
    return {(str(t), int(p), str(o)): int(n) for t, p, o, n in rows}


def state_to_dict(state: DeliveryState) -> dict[str, Any]:
    return {
        "instance": state.instance,
        "last": _counts_to_list(state.last),
        "carried": _counts_to_list(state.carried),
        "restarts": state.restarts,
        "expired_grew_at_ms": dict(state.expired_grew_at_ms),
    }


def state_from_dict(data: Mapping[str, Any] | None) -> DeliveryState | None:
    if not data:
        return None
    return DeliveryState(
        instance=data.get("instance"),
        last=_counts_from_list(data.get("last") or ()),
        carried=_counts_from_list(data.get("carried") or ()),
        restarts=int(data.get("restarts") or 0),
        expired_grew_at_ms={
            str(k): int(v) for k, v in (data.get("expired_grew_at_ms") or {}).items()
        },
    )


# --- what readers show -------------------------------------------------------------------------


@dataclass(frozen=True)
class ProducerTopic:
    """One producer client's figures for one topic. ``None``: the client did not say (no
    statistics for the topic yet, or it pushes no delivery counts). ``failed`` counts failures
    other than expiry; ``expired`` the records that timed out (``_MSG_TIMED_OUT``), which never
    reached the broker's log as far as the producer knows."""

    client_id: str
    name: str
    host: str | None
    topic: str
    queued: int | None
    in_flight: int | None
    delivered: int | None
    failed: int | None
    expired: int | None
    failed_by_reason: dict[str, int]
    as_of_ms: int
    expired_grew_at_ms: int | None = None
    restarts: int = 0
    partitions: tuple[ProducerPartition, ...] = ()


@dataclass(frozen=True)
class ProducerPartition:
    """The same figures for one partition, where the producer knows it (``-1``: records that
    failed before the partitioner placed them)."""

    partition: int
    queued: int | None
    in_flight: int | None
    delivered: int | None
    failed: int | None
    expired: int | None


def _partition_rows(
    parts: list[ClientPartition], totals: Counts, topic: str, counted: bool
) -> tuple[ProducerPartition, ...]:
    stats = {p.partition: p for p in parts}
    numbers = sorted(set(stats) | {p for t, p, _ in totals if t == topic})
    rows = []
    for n in numbers:
        mine = {o: c for (t, p, o), c in totals.items() if t == topic and p == n}
        expired = mine.get(TIMED_OUT, 0)
        failed = sum(c for o, c in mine.items() if o not in (DELIVERED, TIMED_OUT))
        stat = stats.get(n)
        rows.append(
            ProducerPartition(
                partition=n,
                queued=stat.queued if stat else None,
                in_flight=stat.in_flight if stat else None,
                delivered=mine.get(DELIVERED, 0) if counted else None,
                failed=failed if counted else None,
                expired=expired if counted else None,
            )
        )
    return tuple(rows)


def _sum(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def producer_topics(report: ClientReport, state: DeliveryState | None) -> list[ProducerTopic]:
    """Per topic the producer's statistics or its delivery counts mention, sorted by topic."""
    totals = state.totals() if state is not None else {}
    topics = sorted({p.topic for p in report.partitions} | {t for t, _, _ in totals})
    rows = []
    for topic in topics:
        parts = [p for p in report.partitions if p.topic == topic]
        reasons: dict[str, int] = {}
        delivered = 0
        for (t, _, outcome), n in totals.items():
            if t != topic:
                continue
            if outcome == DELIVERED:
                delivered += n
            else:
                reasons[outcome] = reasons.get(outcome, 0) + n
        counted = state is not None
        expired = reasons.get(TIMED_OUT, 0)
        rows.append(
            ProducerTopic(
                client_id=report.client_id,
                name=report.name,
                host=report.host,
                topic=topic,
                queued=_sum(p.queued for p in parts),
                in_flight=_sum(p.in_flight for p in parts),
                delivered=delivered if counted else None,
                failed=sum(reasons.values()) - expired if counted else None,
                expired=expired if counted else None,
                failed_by_reason=dict(sorted(reasons.items())),
                as_of_ms=report.time_ms,
                expired_grew_at_ms=state.expired_grew_at_ms.get(topic) if state else None,
                restarts=state.restarts if state else 0,
                partitions=_partition_rows(parts, totals, topic, counted),
            )
        )
    return rows
