"""Producer delivery counts (collectors/producer_deliveries.py): the pushed block's validation,
merging pushes across client restarts and the per-topic rows, case by case: the figures the
evaluator's PRODUCER_EXPIRY rule reads (tests/spark_jobs/test_producer_expiry.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collectors.ingest_parsing import IngestError, parse_librdkafka_stats
from collectors.producer_deliveries import (
    DELIVERED,
    TIMED_OUT,
    DeliveryState,
    ProducerPartition,
    PushedDeliveries,
    accumulate,
    is_restart,
    parse_deliveries,
    producer_topics,
    state_from_dict,
    state_to_dict,
)
from spark_jobs.evaluator.producer_expiry import expiring_topics
from tests.collectors.ingest_documents import RECEIVED_MS, producer_doc

# --- parsing -----------------------------------------------------------------------------------

PARSED = [
    ({"counts": []}, {}, None),
    (
        {"instance": "a1", "counts": [{"topic": "t", "partition": 0, "delivered": 5}]},
        {("t", 0, "delivered"): 5},
        "a1",
    ),
    (
        {
            "counts": [
                {"topic": "t", "partition": 1, "failed": {TIMED_OUT: 3, "_MSG_SIZE_TOO_LARGE": 1}}
            ]
        },
        {("t", 1, TIMED_OUT): 3, ("t", 1, "_MSG_SIZE_TOO_LARGE"): 1},
        None,
    ),
    # -1: expired before the partitioner placed it; zero counts are not kept
    (
        {"counts": [{"topic": "t", "partition": -1, "delivered": 0, "failed": {TIMED_OUT: 2}}]},
        {("t", -1, TIMED_OUT): 2},
        None,
    ),
    # unknown fields ignored, like librdkafka's own
    (
        {"counts": [{"topic": "t", "partition": 0, "delivered": 1, "x": "y"}], "v": 2},
        {("t", 0, "delivered"): 1},
        None,
    ),
]


@pytest.mark.parametrize(("block", "counts", "instance"), PARSED)
def test_parse_deliveries(block: dict, counts: dict, instance: str | None) -> None:
    pushed = parse_deliveries(block)
    assert pushed.counts == counts
    assert pushed.instance == instance


REFUSED = [
    ("x", "lagwatch_deliveries: must be a JSON object, got a string"),
    ({}, "lagwatch_deliveries.counts: must be an array, got null"),
    ({"counts": {}}, "lagwatch_deliveries.counts: must be an array, got an object"),
    ({"counts": [1]}, "lagwatch_deliveries.counts.0: must be a JSON object, got an integer"),
    ({"counts": [{"partition": 0}]}, "lagwatch_deliveries.counts.0.topic: must be a string, got null"),
    ({"counts": [{"topic": "t"}]}, "lagwatch_deliveries.counts.0.partition: must be an integer, got null"),
    ({"counts": [{"topic": "t", "partition": -2}]},
     "lagwatch_deliveries.counts.0.partition: must be >= -1, got -2"),
    ({"counts": [{"topic": "t", "partition": 0, "delivered": "3"}]},
     "lagwatch_deliveries.counts.0.delivered: must be an integer, got a string"),
    ({"counts": [{"topic": "t", "partition": 0, "delivered": -1}]},
     "lagwatch_deliveries.counts.0.delivered: must be >= 0, got -1"),
    ({"counts": [{"topic": "t", "partition": 0, "failed": []}]},
     "lagwatch_deliveries.counts.0.failed: must be a JSON object, got an array"),
    ({"counts": [{"topic": "t", "partition": 0, "failed": {TIMED_OUT: 1.5}}]},
     f"lagwatch_deliveries.counts.0.failed.{TIMED_OUT}: must be an integer, got a number"),
    ({"counts": [{"topic": "t", "partition": 0, "failed": {"": 1}}]},
     "lagwatch_deliveries.counts.0.failed.: must be a librdkafka error name"),
    ({"counts": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 0}]},
     "lagwatch_deliveries.counts.1: t[0] repeats lagwatch_deliveries.counts.0"),
    ({"instance": 7, "counts": []}, "lagwatch_deliveries.instance: must be a string, got an integer"),
]  # fmt: skip


@pytest.mark.parametrize(("block", "message"), REFUSED)
def test_parse_deliveries_refuses_naming_the_field(block: Any, message: str) -> None:
    with pytest.raises(IngestError) as caught:
        parse_deliveries(block)
    assert str(caught.value).startswith(message)


# --- merging across restarts -------------------------------------------------------------------

T0 = ("t", 0, "delivered")
T0X = ("t", 0, TIMED_OUT)


def pushed(counts: dict, instance: str | None = None) -> PushedDeliveries:
    return PushedDeliveries(counts=counts, instance=instance)


RESTARTS = [
    # (previous last, previous instance, pushed, pushed instance, restart?)
    ({}, None, {T0: 1}, None, False),
    ({T0: 5}, None, {T0: 5}, None, False),
    ({T0: 5}, None, {T0: 7}, None, False),
    ({T0: 5}, None, {T0: 4}, None, True),  # went backwards
    ({T0: 5}, None, {}, None, True),  # a count vanished: 0 < 5
    ({T0: 5, T0X: 1}, None, {T0: 9}, None, True),  # one of two went back
    ({T0: 5}, "a", {T0: 6}, "b", True),  # new instance id, even growing
    ({T0: 5}, "a", {T0: 6}, "a", False),
    ({T0: 5}, "a", {T0: 6}, None, False),  # ids dropped: only the counts tell
    ({T0: 5}, None, {T0: 1}, "b", True),
]


@pytest.mark.parametrize(("last", "instance", "counts", "new_instance", "restart"), RESTARTS)
def test_is_restart(last: dict, instance: str | None, counts: dict, new_instance: str | None,
                    restart: bool) -> None:  # fmt: skip
    state = DeliveryState(instance=instance, last=last)
    assert is_restart(state, pushed(counts, new_instance)) is restart


def test_accumulate_first_push_is_the_totals() -> None:
    state = accumulate(None, pushed({T0: 3, T0X: 2}), 1000)
    assert state.totals() == {T0: 3, T0X: 2}
    assert state.restarts == 0
    assert state.expired_grew_at_ms == {"t": 1000}


def test_accumulate_growth_replaces_last_without_carrying() -> None:
    state = accumulate(accumulate(None, pushed({T0: 3}), 1000), pushed({T0: 8}), 2000)
    assert state.totals() == {T0: 8}
    assert state.carried == {}
    assert state.expired_grew_at_ms == {}


def test_accumulate_restart_carries_what_was_counted_before() -> None:
    before = accumulate(None, pushed({T0: 10, T0X: 4}, "a"), 1000)
    after = accumulate(before, pushed({T0: 2}, "a"), 2000)  # counts went back: a restart
    assert after.totals() == {T0: 12, T0X: 4}
    assert after.restarts == 1
    assert all(n >= 0 for n in after.totals().values())
    # expiry did not grow at the restart: the time stays the first one's
    assert after.expired_grew_at_ms == {"t": 1000}
    again = accumulate(after, pushed({T0: 3, T0X: 1}, "a"), 3000)
    assert again.totals() == {T0: 13, T0X: 5}
    assert again.expired_grew_at_ms == {"t": 3000}


def test_accumulate_does_not_modify_its_input() -> None:
    before = accumulate(None, pushed({T0: 10}), 1000)
    accumulate(before, pushed({T0: 1}), 2000)
    assert before.last == {T0: 10} and before.carried == {}


def test_stored_form_round_trips() -> None:
    state = accumulate(accumulate(None, pushed({T0: 10, T0X: 1}, "a"), 1), pushed({T0: 1}, "b"), 2)
    assert state_from_dict(state_to_dict(state)) == state
    assert state_from_dict(None) is None
    assert state_from_dict({}) is None


# --- rows and the predicate --------------------------------------------------------------------


def test_producer_topics_joins_statistics_and_counts() -> None:
    report = parse_librdkafka_stats(producer_doc(), None, RECEIVED_MS)
    state = accumulate(
        None,
        pushed({("orders", 0, "delivered"): 100, ("orders", 1, TIMED_OUT): 4,
                ("orders", -1, TIMED_OUT): 1, ("orders", 0, "_MSG_SIZE_TOO_LARGE"): 2,
                ("other", 0, "delivered"): 3}),
        5000,
    )  # fmt: skip
    rows = {r.topic: r for r in producer_topics(report, state)}
    orders = rows["orders"]
    assert (orders.queued, orders.in_flight) == (30 + 10 + 28 + 5, 25 + 22)
    assert (orders.delivered, orders.failed, orders.expired) == (100, 2, 5)
    assert orders.failed_by_reason == {TIMED_OUT: 5, "_MSG_SIZE_TOO_LARGE": 2}
    assert orders.as_of_ms == report.time_ms and orders.expired_grew_at_ms == 5000
    assert orders.partitions == (
        ProducerPartition(-1, None, None, 0, 0, 1),  # expired before the partitioner
        ProducerPartition(0, 40, 25, 100, 2, 0),
        ProducerPartition(1, 33, 22, 0, 0, 4),
    )
    other = rows["other"]  # counted, but absent from the statistics
    assert (other.queued, other.in_flight, other.delivered, other.expired) == (None, None, 3, 0)


def test_producer_topics_without_counts_says_unknown() -> None:
    report = parse_librdkafka_stats(producer_doc(), None, RECEIVED_MS)
    (orders,) = producer_topics(report, None)
    assert (orders.delivered, orders.failed, orders.expired) == (None, None, None)
    assert [(p.partition, p.queued, p.expired) for p in orders.partitions] == [
        (0, 40, None), (1, 33, None)]  # fmt: skip
    assert orders.queued == 73


def test_the_rows_are_what_the_evaluators_expiry_rule_reads() -> None:
    """Figures only here: PRODUCER_EXPIRY is decided by the evaluator's per-topic rule
    (tests/spark_jobs/test_producer_expiry.py has its table), on these very rows."""
    report = parse_librdkafka_stats(producer_doc(), None, RECEIVED_MS)
    pushed = PushedDeliveries({("orders", 0, TIMED_OUT): 4, ("orders", 1, DELIVERED): 9})
    state = accumulate(accumulate(None, PushedDeliveries({}), 1_000), pushed, 2_000)
    rows = producer_topics(report, state)
    assert expiring_topics(rows, 2_000, 600_000) == {"orders": 4}
    assert expiring_topics(rows, 2_001 + 600_000, 600_000) == {}


# --- properties: any sequence of pushes, restarts included -------------------------------------

_KEYS = st.sampled_from([T0, T0X, ("t", 1, "delivered"), ("u", -1, TIMED_OUT)])
_PUSH = st.tuples(
    st.dictionaries(_KEYS, st.integers(min_value=1, max_value=10**6), max_size=4),
    st.sampled_from([None, "a", "b"]),
)


@given(st.lists(_PUSH, min_size=1, max_size=12))
def test_totals_never_go_down_nor_negative(pushes) -> None:
    """Whatever the clients push (counts going back, ids changing), a figure shown never
    shrinks and is never negative, and each push's own counts are within the totals."""
    state = None
    previous: dict = {}
    for at, (counts, instance) in enumerate(pushes):
        state = accumulate(state, PushedDeliveries(counts, instance), at)
        totals = state.totals()
        assert all(n >= 0 for n in totals.values())
        assert all(totals.get(k, 0) >= n for k, n in previous.items())
        assert all(totals.get(k, 0) >= n for k, n in counts.items())
        previous = totals
        assert state_from_dict(state_to_dict(state)) == state


@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["counts", "topic", "partition", "delivered", "failed", "instance",
                         TIMED_OUT, "x"]), inner, max_size=4),
    max_leaves=12,
))  # fmt: skip
def test_any_json_is_parsed_or_refused_with_a_field(block) -> None:
    try:
        parse_deliveries(block)
    except IngestError as exc:
        assert str(exc).startswith("lagwatch_deliveries")
