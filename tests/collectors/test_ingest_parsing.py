"""Parsers of what clients push: librdkafka statistics and spout figures, good and bad.

The documents are in ingest_documents.py; test_real_client_statistics.py parses what real
clients write.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from collectors.client_reports import CONSUMER, PRODUCER, ClientPartition
from collectors.ingest_parsing import IngestError, parse_librdkafka_stats, parse_spout_report
from collectors.records import SpoutFigures
from tests.collectors.ingest_documents import RECEIVED_MS, consumer_doc, producer_doc, spout_doc

# --- librdkafka: good documents ------------------------------------------------------------


def test_consumer_document_gives_its_assignment_offsets_and_group_state() -> None:
    report = parse_librdkafka_stats(consumer_doc(), "billing", RECEIVED_MS, host="10.0.0.21")
    assert (report.kind, report.name, report.client_id) == (
        CONSUMER, "billing-1#consumer-3", "billing-1",
    )  # fmt: skip
    assert (report.group, report.host) == ("billing", "10.0.0.21")
    assert report.time_ms == 1795255936000, "the document's wall clock, not its monotonic ts"
    # Only "desired" partitions are assigned; -1 is librdkafka's internal queue.
    assert report.assignment == (("orders", 0), ("orders", 2), ("payments", 0))
    assert report.assignment_size == 3
    assert [(p.topic, p.partition) for p in report.partitions] == list(report.assignment)
    orders0, orders2, payments0 = report.partitions
    assert (orders0.committed, orders0.consumer_lag, orders0.hi_offset) == (10, 5, 15)
    assert (orders0.lo_offset, orders0.stored, orders0.fetch_state) == (0, 10, "active")
    assert orders0.assigned and orders2.consumer_lag == 0
    assert payments0.committed is None and payments0.consumer_lag is None, "-1001 / -1: unknown"
    assert (report.cgrp_state, report.join_state) == ("up", "steady")
    assert (report.rebalance_cnt, report.rebalance_age_ms) == (2, 996)
    assert report.rebalance_reason is None, "an empty reason says nothing"
    assert report.msg_cnt is None and report.in_flight is None and report.txerrs is None


def test_producer_document_gives_queued_in_flight_errors_and_timeouts() -> None:
    report = parse_librdkafka_stats(producer_doc(), None, RECEIVED_MS)
    assert (report.kind, report.group, report.assignment) == (PRODUCER, None, ())
    assert report.msg_cnt == 120
    assert report.in_flight == 47, "Σ brokers' waitresp_msg_cnt"
    assert (report.txerrs, report.txretries, report.req_timeouts) == (3, 3, 3)
    assert report.cgrp_state is None and report.rebalance_cnt is None
    assert report.partitions == (
        ClientPartition("orders", 0, fetch_state="none", queued=40, in_flight=25, txmsgs=1000),
        ClientPartition("orders", 1, fetch_state="none", queued=33, in_flight=22, txmsgs=990),
    )


def test_without_a_wall_clock_time_the_receive_time_is_used() -> None:
    doc = consumer_doc()
    del doc["time"]
    assert parse_librdkafka_stats(doc, None, RECEIVED_MS).time_ms == RECEIVED_MS


def test_unknown_keys_are_ignored_and_missing_blocks_are_fine() -> None:
    doc = consumer_doc()
    doc["future_block"] = {"anything": [1, 2]}
    doc["topics"]["orders"]["partitions"]["0"]["future_field"] = "x"
    assert parse_librdkafka_stats(doc, None, RECEIVED_MS).assignment[0] == ("orders", 0)
    minimal = {"name": "c#consumer-1", "client_id": "c", "type": "consumer"}
    report = parse_librdkafka_stats(minimal, None, RECEIVED_MS)
    assert report.assignment == () and report.partitions == () and report.cgrp_state is None


def test_documented_joinstate_spelling_and_partition_keys_without_partition_field() -> None:
    doc = consumer_doc()
    cgrp = doc["cgrp"]
    cgrp["joinstate"] = cgrp.pop("join_state")
    del doc["topics"]["orders"]["partitions"]["2"]["partition"]
    report = parse_librdkafka_stats(doc, None, RECEIVED_MS)
    assert report.join_state == "steady"
    assert ("orders", 2) in report.assignment


def test_a_fatal_error_is_kept_and_long_text_is_cut() -> None:
    doc = producer_doc()
    doc["fatal"] = {"error": "Local: Fatal error", "reason": "x" * 2000, "cnt": 1}
    report = parse_librdkafka_stats(doc, None, RECEIVED_MS)
    assert report.fatal_error is not None and report.fatal_error.startswith("Local: Fatal error: x")
    assert len(report.fatal_error) == 500


def test_an_empty_group_or_one_of_blanks_means_no_group() -> None:
    assert parse_librdkafka_stats(consumer_doc(), "", RECEIVED_MS).group is None


# --- librdkafka: bad documents -------------------------------------------------------------


def _set(path: str | tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], Any]:
    """Change (or, with _DELETE, remove) the field at ``a/b/c``, or at a tuple of keys when
    a key holds a "/" (broker names do); list items are addressed by their index."""
    keys = path.split("/") if isinstance(path, str) else path

    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = keys
        target: Any = doc
        for key in parents:
            target = target[int(key) if isinstance(target, list) else key]
        index: Any = int(last) if isinstance(target, list) else last
        if value is _DELETE:
            del target[index]
        else:
            target[index] = value

    return mutate


_DELETE = object()
_P0 = "topics/orders/partitions/0"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            _set("type", _DELETE),
            'type: must be "consumer" or "producer", got missing: not a librdkafka statistics document',
        ),
        (
            _set("type", "admin"),
            'type: must be "consumer" or "producer", got \'admin\': not a librdkafka statistics document',
        ),
        (_set("name", _DELETE), "name: must be a string, got null"),
        (_set("name", ""), "name: must not be empty"),
        (_set("name", "n" * 256), "name: must be at most 255 characters"),
        (_set("client_id", 7), "client_id: must be a string of at most 255 characters"),
        (_set("time", "now"), "time: must be an integer, got a string"),
        (_set("time", -5), "time: must be >= 0, got -5"),
        (_set("topics", []), "topics: must be a JSON object, got an array"),
        (_set("topics/orders", "x"), "topics.orders: must be a JSON object, got a string"),
        (
            _set("topics/orders/partitions", [1]),
            "topics.orders.partitions: must be a JSON object, got an array",
        ),
        (_set(_P0, None), "topics.orders.partitions.0: must be a JSON object, got null"),
        (
            _set(f"{_P0}/committed_offset", "10"),
            "topics.orders.partitions.0.committed_offset: must be an integer, got a string",
        ),
        (
            _set(f"{_P0}/committed_offset", 10.5),
            "topics.orders.partitions.0.committed_offset: must be an integer, got a number",
        ),
        (
            _set(f"{_P0}/committed_offset", True),
            "topics.orders.partitions.0.committed_offset: must be an integer, got a boolean",
        ),
        (
            _set(f"{_P0}/hi_offset", 2**63),
            "topics.orders.partitions.0.hi_offset: must fit in 64 bits",
        ),
        (
            _set(f"{_P0}/consumer_lag", [5]),
            "topics.orders.partitions.0.consumer_lag: must be an integer, got an array",
        ),
        (
            _set(f"{_P0}/desired", "yes"),
            "topics.orders.partitions.0.desired: must be true or false, got a string",
        ),
        (
            _set(f"{_P0}/partition", -2),
            "topics.orders.partitions.0.partition: must be >= -1, got -2",
        ),
        (
            _set(f"{_P0}/fetch_state", 3),
            "topics.orders.partitions.0.fetch_state: must be a string, got an integer",
        ),
        (
            _set(f"{_P0}/msgs_inflight", -1),
            "topics.orders.partitions.0.msgs_inflight: must be >= 0, got -1",
        ),
        (
            _set("topics/orders/partitions/x", {"desired": True}),
            "topics.orders.partitions.x: partition key must be an integer",
        ),
        (
            _set("topics/" + "t" * 256, {}),
            "topics." + "t" * 256 + ": must be at most 255 characters",
        ),
        (_set("cgrp", "up"), "cgrp: must be a JSON object, got a string"),
        (_set("cgrp/rebalance_cnt", -1), "cgrp.rebalance_cnt: must be >= 0, got -1"),
        (_set("cgrp/state", 1), "cgrp.state: must be a string, got an integer"),
        (_set("fatal", 1), "fatal: must be a JSON object, got an integer"),
    ],
)
def test_bad_consumer_documents_are_refused_naming_the_field(
    mutate: Callable[[dict[str, Any]], None], message: str
) -> None:
    doc = consumer_doc()
    mutate(doc)
    with pytest.raises(IngestError) as raised:
        parse_librdkafka_stats(doc, None, RECEIVED_MS)
    assert str(raised.value) == message


def test_a_consumers_broker_figures_are_not_read_so_not_checked() -> None:
    doc = consumer_doc()
    doc["brokers"]["GroupCoordinator"]["waitresp_msg_cnt"] = "x"
    assert parse_librdkafka_stats(doc, None, RECEIVED_MS).in_flight is None


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (_set("brokers", []), "brokers: must be a JSON object, got an array"),
        (
            _set(("brokers", "10.0.0.8:9092/112", "txerrs"), "2"),
            "brokers.10.0.0.8:9092/112.txerrs: must be an integer, got a string",
        ),
        (_set("msg_cnt", -1), "msg_cnt: must be >= 0, got -1"),
        (
            _set("topics/orders/partitions/1/msgq_cnt", 1.0),
            "topics.orders.partitions.1.msgq_cnt: must be an integer, got a number",
        ),
    ],
)
def test_bad_producer_documents_are_refused_naming_the_field(
    mutate: Callable[[dict[str, Any]], None], message: str
) -> None:
    doc = producer_doc()
    mutate(doc)
    with pytest.raises(IngestError) as raised:
        parse_librdkafka_stats(doc, None, RECEIVED_MS)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "document: must be a JSON object, got an array"),
        ("stats", "document: must be a JSON object, got a string"),
        (None, "document: must be a JSON object, got null"),
        (
            {"hello": "world"},
            'type: must be "consumer" or "producer", got missing: not a librdkafka statistics document',
        ),
    ],
)
def test_what_is_not_a_statistics_document_is_refused(doc: object, message: str) -> None:
    with pytest.raises(IngestError) as raised:
        parse_librdkafka_stats(doc, None, RECEIVED_MS)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("group", "host", "message"),
    [
        ("g" * 256, None, "group: must be at most 255 characters"),
        (7, None, "group: must be a string, got an integer"),
        (None, "h" * 256, "host: must be at most 255 characters"),
    ],
)
def test_declared_group_and_host_are_checked(group: Any, host: Any, message: str) -> None:
    with pytest.raises(IngestError, match=message):
        parse_librdkafka_stats(consumer_doc(), group, RECEIVED_MS, host=host)


def test_ingest_error_is_a_value_error_with_its_path() -> None:
    with pytest.raises(ValueError) as raised:
        parse_librdkafka_stats({"type": "consumer"}, None, RECEIVED_MS)
    assert isinstance(raised.value, IngestError) and raised.value.path == "name"


# --- spout push ----------------------------------------------------------------------------


def test_spout_push_gives_one_figure_per_partition() -> None:
    first, second = parse_spout_report(spout_doc(), RECEIVED_MS)
    assert first == SpoutFigures(
        topology_id="orders-topology-3-1700000000", spout_id="orders-spout", topic="orders",
        partition=0, pending=12, failed=3, acked=900, emitted=915, smallest_failed_offset=4021,
        max_offset_behind=100000, max_spout_pending=1000, time_ms=1_795_255_990_000,
    )  # fmt: skip
    assert second.emitted is None and second.smallest_failed_offset is None
    assert second.max_offset_behind == 50, "a partition's own setting overrides the spout's"


def test_spout_push_minimal_form() -> None:
    doc = {"topology_id": "t-1-1", "spout_id": "s", "partitions": []}
    assert parse_spout_report(doc, RECEIVED_MS) == []
    doc["partitions"] = [{"topic": "a", "partition": 2, "pending": 0, "failed": 0, "acked": 0}]
    (fig,) = parse_spout_report(doc, RECEIVED_MS)
    assert (fig.time_ms, fig.max_spout_pending, fig.max_offset_behind) == (RECEIVED_MS, None, None)
    assert fig.spout_pending is None


def test_spout_push_task_pending_goes_with_every_partition() -> None:
    """The top-level ``pending`` is the task's tuples in flight, what ``max_spout_pending``
    caps: every partition's figure carries it for BACKPRESSURE."""
    doc = {**spout_doc(), "pending": 1000}
    figures = parse_spout_report(doc, RECEIVED_MS)
    assert [(f.spout_pending, f.max_spout_pending) for f in figures] == [(1000, 1000)] * 2
    assert figures[0].pending == 12, "the partition's own pending stays its own"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (_set("topology_id", _DELETE), "topology_id: must be a string, got null"),
        (_set("spout_id", ""), "spout_id: must not be empty"),
        (_set("topology_name", 5), "topology_name: must be a string, got an integer"),
        (_set("spout_id", "s" * 256), "spout_id: must be at most 255 characters"),
        (_set("max_spout_pending", "1000"), "max_spout_pending: must be an integer, got a string"),
        (_set("max_offset_behind", -1), "max_offset_behind: must be >= 0, got -1"),
        (_set("pending", -3), "pending: must be >= 0, got -3"),
        (_set("pending", "40"), "pending: must be an integer, got a string"),
        (_set("time_ms", 1.5), "time_ms: must be an integer, got a number"),
        (_set("partitions", {"0": {}}), "partitions: must be an array, got an object"),
        (_set("partitions", _DELETE), "partitions: must be an array, got null"),
        (_set("partitions/1", 7), "partitions.1: must be a JSON object, got an integer"),
        (_set("partitions/1/pending", -1), "partitions.1.pending: must be >= 0, got -1"),
        (_set("partitions/0/failed", _DELETE), "partitions.0.failed: must be an integer, got null"),
        (_set("partitions/0/acked", 2.0), "partitions.0.acked: must be an integer, got a number"),
        (
            _set("partitions/0/acked", False),
            "partitions.0.acked: must be an integer, got a boolean",
        ),
        (_set("partitions/0/partition", -1), "partitions.0.partition: must be >= 0, got -1"),
        (
            _set("partitions/0/topic", "t" * 256),
            "partitions.0.topic: must be at most 255 characters",
        ),
        (
            _set("partitions/0/smallest_failed_offset", "4021"),
            "partitions.0.smallest_failed_offset: must be an integer, got a string",
        ),
        (_set("partitions/1/partition", 0), "partitions.1: orders[0] repeats partitions.0"),
        (_set("partitions/0/emitted", 2**64), "partitions.0.emitted: must fit in 64 bits"),
    ],
)
def test_bad_spout_pushes_are_refused_naming_the_field(
    mutate: Callable[[dict[str, Any]], None], message: str
) -> None:
    doc = spout_doc()
    mutate(doc)
    with pytest.raises(IngestError) as raised:
        parse_spout_report(doc, RECEIVED_MS)
    assert str(raised.value) == message


@pytest.mark.parametrize("doc", [[], "x", None, 3])
def test_a_spout_push_must_be_an_object(doc: object) -> None:
    with pytest.raises(IngestError, match="^document: must be a JSON object"):
        parse_spout_report(doc, RECEIVED_MS)
