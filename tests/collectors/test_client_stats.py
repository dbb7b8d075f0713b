"""Parsers of pushed client reports, and the merge of client assignments into group snapshots.

The two librdkafka documents below follow STATISTICS.md and the shape librdkafka 2.x writes
(captured from confluent-kafka 2.16 against the lab broker, then edited to carry two topics,
an unassigned partition and producer traffic). The last tests take a real document from a
real consumer's ``stats_cb``.
"""

from __future__ import annotations

import copy
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from collectors.client_stats import (
    CONSUMER,
    PRODUCER,
    ClientPartition,
    ClientReport,
    IngestError,
    apply_client_reports,
    client_report_from_dict,
    client_report_to_dict,
    parse_librdkafka_stats,
    parse_spout_report,
    spout_figures_from_dict,
    spout_figures_to_dict,
)
from collectors.records import GroupMember, GroupSnapshot, Source, SpoutFigures
from tests.waiting import wait_for

RECEIVED_MS = 1_795_255_999_000

_WINDOW = {
    "min": 0,
    "max": 0,
    "avg": 0,
    "sum": 0,
    "stddev": 0,
    "p50": 0,
    "p75": 0,
    "p90": 0,
    "p95": 0,
    "p99": 0,
    "p99_99": 0,
    "outofrange": 0,
    "hdrsize": 11376,
    "cnt": 0,
}


def _partition(n: int, **fields: Any) -> dict[str, Any]:
    """One ``topics.*.partitions.*`` entry with librdkafka's defaults for a partition the
    client knows but does not use (offsets -1001, lag -1)."""
    entry = {
        "partition": n, "broker": 111 if n >= 0 else -1, "leader": 111 if n >= 0 else -1,
        "desired": False, "unknown": False, "msgq_cnt": 0, "msgq_bytes": 0,
        "xmit_msgq_cnt": 0, "xmit_msgq_bytes": 0, "fetchq_cnt": 0, "fetchq_size": 0,
        "fetch_state": "none", "query_offset": -1001, "next_offset": 0, "app_offset": -1001,
        "stored_offset": -1001, "stored_leader_epoch": -1, "commited_offset": -1001,
        "committed_offset": -1001, "committed_leader_epoch": -1, "eof_offset": -1001,
        "lo_offset": -1001, "hi_offset": -1001, "ls_offset": -1001, "consumer_lag": -1,
        "consumer_lag_stored": -1, "leader_epoch": -1, "txmsgs": 0, "txbytes": 0, "rxmsgs": 0,
        "rxbytes": 0, "msgs": 0, "rx_ver_drops": 0, "msgs_inflight": 0, "next_ack_seq": 0,
        "next_err_seq": 0, "acked_msgid": 0,
    }  # fmt: skip
    if fields.get("commited_offset") is None and "committed_offset" in fields:
        fields["commited_offset"] = fields["committed_offset"]  # librdkafka's old misspelling
    entry.update(fields)
    return entry


def _assigned(n: int, committed: int, hi: int) -> dict[str, Any]:
    return _partition(
        n, desired=True, fetch_state="active", query_offset=-2, next_offset=hi,
        app_offset=committed, stored_offset=committed, stored_leader_epoch=0,
        committed_offset=committed, committed_leader_epoch=0, eof_offset=hi, lo_offset=0,
        hi_offset=hi, ls_offset=hi, consumer_lag=hi - committed,
        consumer_lag_stored=hi - committed, leader_epoch=0, rxmsgs=hi, rxbytes=hi, msgs=hi,
    )  # fmt: skip


def _broker(name: str, nodeid: int, **fields: Any) -> dict[str, Any]:
    entry = {
        "name": name, "nodeid": nodeid, "nodename": "10.0.0.7:9092", "source": "learned",
        "state": "UP", "stateage": 3951219, "outbuf_cnt": 0, "outbuf_msg_cnt": 0,
        "waitresp_cnt": 1, "waitresp_msg_cnt": 0, "tx": 10, "txbytes": 908, "txerrs": 0,
        "txretries": 0, "txidle": 392265, "req_timeouts": 0, "rx": 9, "rxbytes": 3110,
        "rxerrs": 0, "rxcorriderrs": 0, "rxpartial": 0, "rxidle": 392358, "zbuf_grow": 0,
        "buf_grow": 0, "wakeups": 25, "connects": 1, "disconnects": 0,
        "int_latency": dict(_WINDOW), "outbuf_latency": dict(_WINDOW), "rtt": dict(_WINDOW),
        "throttle": dict(_WINDOW), "req": {"Fetch": 4, "ListOffsets": 3, "Metadata": 1},
        "toppars": {"orders-0": {"topic": "orders", "partition": 0}},
    }  # fmt: skip
    entry.update(fields)
    return entry


def consumer_doc() -> dict[str, Any]:
    """A consumer of group ``billing`` owning orders[0], orders[2] and payments[0]."""
    return {
        "name": "billing-1#consumer-3", "client_id": "billing-1", "type": "consumer",
        "ts": 391309334, "time": 1795255936, "age": 4004035, "replyq": 0, "msg_cnt": 0,
        "msg_size": 0, "msg_max": 0, "msg_size_max": 0, "simple_cnt": 0,
        "metadata_cache_cnt": 2,
        "brokers": {
            "10.0.0.7:9092/111": _broker("10.0.0.7:9092/111", 111),
            "GroupCoordinator": _broker("GroupCoordinator", -1, source="logical", toppars={}),
        },
        "topics": {
            "orders": {
                "topic": "orders", "age": 996, "metadata_age": 996,
                "batchsize": dict(_WINDOW), "batchcnt": dict(_WINDOW),
                "partitions": {
                    "0": _assigned(0, committed=10, hi=15),
                    "1": _partition(1),
                    "2": _assigned(2, committed=7, hi=7),
                    "3": _partition(3),
                    "-1": _partition(-1),
                },
            },
            "payments": {
                "topic": "payments", "age": 996, "metadata_age": 996,
                "batchsize": dict(_WINDOW), "batchcnt": dict(_WINDOW),
                "partitions": {
                    "0": _assigned(0, committed=-1001, hi=4) | {"consumer_lag": -1},
                    "-1": _partition(-1),
                },
            },
        },
        "cgrp": {
            "state": "up", "stateage": 4001, "join_state": "steady", "rebalance_age": 996,
            "rebalance_cnt": 2, "rebalance_reason": "", "assignment_size": 3,
        },
        "tx": 24, "tx_bytes": 2389, "rx": 23, "rx_bytes": 4354, "txmsgs": 0,
        "txmsg_bytes": 0, "rxmsgs": 26, "rxmsg_bytes": 26,
    }  # fmt: skip


def producer_doc() -> dict[str, Any]:
    """A producer with records queued and in flight, a few errors and request timeouts."""
    return {
        "name": "orders-producer#producer-2", "client_id": "orders-producer",
        "type": "producer", "ts": 387197579, "time": 1795255932, "age": 500544, "replyq": 0,
        "msg_cnt": 120, "msg_size": 12000, "msg_max": 100000, "msg_size_max": 1073741824,
        "simple_cnt": 0, "metadata_cache_cnt": 1,
        "brokers": {
            "10.0.0.7:9092/111": _broker(
                "10.0.0.7:9092/111", 111, waitresp_msg_cnt=40, outbuf_msg_cnt=5, txerrs=2,
                txretries=3, req_timeouts=1,
            ),
            "10.0.0.8:9092/112": _broker(
                "10.0.0.8:9092/112", 112, waitresp_msg_cnt=7, txerrs=1, req_timeouts=2,
            ),
            "10.0.0.7:9092/bootstrap": _broker("10.0.0.7:9092/bootstrap", -1, state="INIT"),
        },
        "topics": {
            "orders": {
                "topic": "orders", "age": 12000, "metadata_age": 3000,
                "batchsize": dict(_WINDOW), "batchcnt": dict(_WINDOW),
                "partitions": {
                    "0": _partition(0, msgq_cnt=30, xmit_msgq_cnt=10, msgs_inflight=25,
                                    txmsgs=1000, msgs=1065, leader_epoch=0),
                    "1": _partition(1, msgq_cnt=28, xmit_msgq_cnt=5, msgs_inflight=22,
                                    txmsgs=990, msgs=1045, leader_epoch=0),
                    "-1": _partition(-1, msgs=30),
                },
            },
        },
        "eos": {
            "idemp_state": "Assigned", "idemp_stateage": 11000, "txn_state": "Init",
            "txn_stateage": 11000, "txn_may_enq": False, "producer_id": 4000,
            "producer_epoch": 0, "epoch_cnt": 1,
        },
        "tx": 32, "tx_bytes": 3813, "rx": 32, "rx_bytes": 2045, "txmsgs": 1990,
        "txmsg_bytes": 1990, "rxmsgs": 0, "rxmsg_bytes": 0,
    }  # fmt: skip


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


def spout_doc() -> dict[str, Any]:
    return {
        "topology_id": "orders-topology-3-1700000000",
        "spout_id": "orders-spout",
        "topology_name": "orders-topology",
        "time_ms": 1_795_255_990_000,
        "max_spout_pending": 1000,
        "max_offset_behind": 100000,
        "partitions": [
            {"topic": "orders", "partition": 0, "pending": 12, "failed": 3, "acked": 900,
             "emitted": 915, "smallest_failed_offset": 4021},
            {"topic": "orders", "partition": 1, "pending": 0, "failed": 0, "acked": 880,
             "smallest_failed_offset": None, "max_offset_behind": 50},
        ],
    }  # fmt: skip


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


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (_set("topology_id", _DELETE), "topology_id: must be a string, got null"),
        (_set("spout_id", ""), "spout_id: must not be empty"),
        (_set("topology_name", 5), "topology_name: must be a string, got an integer"),
        (_set("spout_id", "s" * 256), "spout_id: must be at most 255 characters"),
        (_set("max_spout_pending", "1000"), "max_spout_pending: must be an integer, got a string"),
        (_set("max_offset_behind", -1), "max_offset_behind: must be >= 0, got -1"),
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


# --- stored form ---------------------------------------------------------------------------


@pytest.mark.parametrize("make", [consumer_doc, producer_doc])
def test_reports_survive_the_json_round_trip_of_the_store(make: Callable[[], Any]) -> None:
    report = parse_librdkafka_stats(make(), "billing", RECEIVED_MS, host="10.0.0.21")
    stored = json.loads(json.dumps(client_report_to_dict(report)))
    assert client_report_from_dict(stored) == report


def test_stored_reports_tolerate_fields_from_a_newer_writer() -> None:
    report = parse_librdkafka_stats(consumer_doc(), None, RECEIVED_MS)
    stored = client_report_to_dict(report) | {"new_field": 1}
    stored["partitions"][0]["new_partition_field"] = 2
    assert client_report_from_dict(stored) == report


def test_spout_figures_survive_the_json_round_trip() -> None:
    for fig in parse_spout_report(spout_doc(), RECEIVED_MS):
        stored = json.loads(json.dumps(spout_figures_to_dict(fig)))
        assert spout_figures_from_dict(stored | {"later": 1}) == fig


# --- apply_client_reports ------------------------------------------------------------------


def rep(
    client_id: str,
    assignment: tuple[tuple[str, int], ...],
    *,
    group: str | None = "g",
    name: str | None = None,
    host: str | None = None,
    time_ms: int = 1000,
    kind: str = CONSUMER,
    cgrp_state: str | None = "up",
) -> ClientReport:
    return ClientReport(
        kind=kind,
        client_id=client_id,
        name=name or f"{client_id}#consumer-1",
        group=group,
        time_ms=time_ms,
        host=host,
        assignment=assignment,
        cgrp_state=cgrp_state,
    )


def snap(
    members: tuple[GroupMember, ...] = (),
    *,
    group: str = "g",
    members_known: bool = True,
    topics: tuple[str, ...] = ("t",),
) -> GroupSnapshot:
    return GroupSnapshot(
        source=Source.KAFKA,
        group=group,
        state="Stable",
        members=members,
        members_known=members_known,
        topics=topics,
    )


def member(
    member_id: str, client_id: str | None, host: str | None = None, *tps: tuple[str, int]
) -> GroupMember:
    return GroupMember(member_id=member_id, client_id=client_id, host=host, assignment=tuple(tps))


T0, T1, T2, T3 = ("t", 0), ("t", 1), ("t", 2), ("t", 3)


def assignments(s: GroupSnapshot) -> dict[str, tuple[tuple[str, int], ...]]:
    return {m.member_id: m.assignment for m in s.members}


def test_a_member_without_assignment_gets_its_clients_report() -> None:
    (out,) = apply_client_reports(
        [snap((member("m1", "a"), member("m2", "b")))], [rep("a", (T0, T1)), rep("b", (T2,))]
    )
    assert assignments(out) == {"m1": (T0, T1), "m2": (T2,)}
    assert out.members_known


def test_an_assignment_the_broker_reported_is_never_overwritten() -> None:
    original = snap((member("m1", "a", None, T0), member("m2", "b")))
    (out,) = apply_client_reports([original], [rep("a", (T2, T3)), rep("b", (T0, T1))])
    # m1 keeps the broker's T0; m2's report claims T0 too, but the broker's owner wins.
    assert assignments(out) == {"m1": (T0,), "m2": (T1,)}


def test_nothing_to_fill_returns_the_same_snapshot() -> None:
    original = snap((member("m1", "a", None, T0),))
    assert apply_client_reports([original], [rep("a", (T1,))])[0] is original
    other = snap((member("m1", "a"),))
    assert apply_client_reports([other], [])[0] is other


def test_a_report_of_another_group_does_not_apply() -> None:
    (out,) = apply_client_reports([snap((member("m1", "a"),))], [rep("a", (T0,), group="other")])
    assert assignments(out) == {"m1": ()}


def test_producer_reports_are_ignored() -> None:
    (out,) = apply_client_reports([snap((member("m1", "a"),))], [rep("a", (T0,), kind=PRODUCER)])
    assert assignments(out) == {"m1": ()}


def test_a_member_without_client_id_cannot_be_matched() -> None:
    (out,) = apply_client_reports([snap((member("m1", None),))], [rep("", (T0,))])
    assert assignments(out) == {"m1": ()}


def test_a_groupless_report_serves_the_only_group_with_that_client_id() -> None:
    groups = [snap((member("m1", "a"),), group="g"), snap((member("x1", "b"),), group="h")]
    out = apply_client_reports(groups, [rep("a", (T0,), group=None)])
    assert assignments(out[0]) == {"m1": (T0,)} and assignments(out[1]) == {"x1": ()}


def test_a_groupless_report_whose_client_id_is_in_two_groups_serves_neither() -> None:
    groups = [snap((member("m1", "a"),), group="g"), snap((member("x1", "a"),), group="h")]
    out = apply_client_reports(groups, [rep("a", (T0,), group=None)])
    assert assignments(out[0]) == {"m1": ()} and assignments(out[1]) == {"x1": ()}


def test_a_report_naming_the_group_beats_a_groupless_one() -> None:
    reports = [rep("a", (T0,), group=None, name="a#consumer-9"), rep("a", (T1,), group="g")]
    (out,) = apply_client_reports([snap((member("m1", "a"),))], reports)
    assert assignments(out) == {"m1": (T1,)}


def test_members_sharing_a_client_id_are_told_apart_by_host() -> None:
    members = (member("m1", "svc", "/10.0.0.1"), member("m2", "svc", "/10.0.0.2"))
    reports = [rep("svc", (T0,), host="10.0.0.2"), rep("svc", (T1,), host="::ffff:10.0.0.1")]
    (out,) = apply_client_reports([snap(members)], reports)
    assert assignments(out) == {"m1": (T1,), "m2": (T0,)}


def test_members_sharing_a_client_id_and_host_stay_unknown() -> None:
    members = (member("m1", "rdkafka", "/10.0.0.1"), member("m2", "rdkafka", "/10.0.0.1"))
    reports = [
        rep("rdkafka", (T0,), host="10.0.0.1", name="rdkafka#consumer-1"),
        rep("rdkafka", (T1,), host="10.0.0.1", name="rdkafka#consumer-2"),
    ]
    (out,) = apply_client_reports([snap(members)], reports)
    assert assignments(out) == {"m1": (), "m2": ()}


def test_one_member_and_two_candidate_reports_is_not_guessed() -> None:
    reports = [rep("svc", (T0,), host="10.0.0.1"), rep("svc", (T1,), host="10.0.0.2")]
    (out,) = apply_client_reports([snap((member("m1", "svc"),))], reports)
    assert assignments(out) == {"m1": ()}


def test_a_report_from_another_host_does_not_match() -> None:
    (out,) = apply_client_reports(
        [snap((member("m1", "a", "/10.0.0.1"),))], [rep("a", (T0,), host="10.0.0.9")]
    )
    assert assignments(out) == {"m1": ()}


def test_the_newest_report_of_one_client_instance_is_used() -> None:
    reports = [rep("a", (T0,), time_ms=5000), rep("a", (T1,), time_ms=1000)]
    (out,) = apply_client_reports([snap((member("m1", "a"),))], reports)
    assert assignments(out) == {"m1": (T0,)}


def test_members_are_synthesized_when_the_broker_lists_none() -> None:
    group = snap(members_known=False, topics=("t",))
    reports = [
        rep("b", (T2, T3), name="b#consumer-1", host="10.0.0.2"),
        rep("a", (T0, T1, ("u", 0)), name="a#consumer-1", host="10.0.0.1"),
        rep("c", (T0,), group=None),  # no group declared: cannot be a member of "g"
    ]
    (out,) = apply_client_reports([group], reports)
    assert out.members_known is True
    assert out.members == (
        GroupMember("a#consumer-1", "a", "10.0.0.1", (T0, T1, ("u", 0))),
        GroupMember("b#consumer-1", "b", "10.0.0.2", (T2, T3)),
    )
    assert out.topics == ("t", "u")
    assert (out.state, out.group) == ("Stable", "g")


def test_synthesized_members_with_the_same_name_are_told_apart_by_host() -> None:
    reports = [
        rep("svc", (T0,), name="svc#consumer-1", host="10.0.0.1"),
        rep("svc", (T1,), name="svc#consumer-1", host="10.0.0.2"),
    ]
    (out,) = apply_client_reports([snap(members_known=False)], reports)
    assert assignments(out) == {"svc#consumer-1@10.0.0.1": (T0,), "svc#consumer-1@10.0.0.2": (T1,)}


def test_a_stale_report_loses_partitions_to_a_newer_one() -> None:
    # After a rebalance the old owner's last report still claims T1.
    reports = [
        rep("a", (T0, T1), name="a#consumer-1", time_ms=1000),
        rep("b", (T1, T2), name="b#consumer-1", time_ms=2000),
    ]
    (out,) = apply_client_reports([snap(members_known=False)], reports)
    assert assignments(out) == {"a#consumer-1": (T0,), "b#consumer-1": (T1, T2)}


def test_a_terminating_consumer_is_not_synthesized() -> None:
    reports = [rep("a", (T0,), cgrp_state="term"), rep("b", (T1,))]
    (out,) = apply_client_reports([snap(members_known=False)], reports)
    assert assignments(out) == {"b#consumer-1": (T1,)}


def test_no_reports_for_a_memberless_group_leaves_it_alone() -> None:
    group = snap(members_known=False)
    assert apply_client_reports([group], [rep("a", (T0,), group="h")])[0] is group


def test_an_empty_group_stays_empty() -> None:
    # The broker says Empty with no members (members_known True): reports must be stale.
    group = snap(members_known=True)
    assert apply_client_reports([group], [rep("a", (T0,))])[0] is group


def test_order_and_untouched_groups_are_kept() -> None:
    groups = [
        snap(group="z", members_known=False),
        snap((member("m", "a"),), group="g"),
        snap(group="b"),
    ]
    out = apply_client_reports(groups, [rep("a", (T0,))])
    assert [s.group for s in out] == ["z", "g", "b"]
    assert out[0] is groups[0] and out[2] is groups[2]


def test_the_input_is_not_modified() -> None:
    groups = [snap((member("m1", "a"),))]
    before = copy.deepcopy(groups)
    apply_client_reports(groups, [rep("a", (T0,))])
    assert groups == before


# --- real clients against the lab broker ---------------------------------------------------


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
        # Statistics written after the split, while the assignment holds.
        marks = {cid: len(d) for cid, d in docs.items()}
        while any(len(docs[cid]) <= marks[cid] + 1 for cid in docs):
            assert time.monotonic() < deadline + 10, "no statistics after the rebalance"
            for c in consumers.values():
                c.poll(0.1)
        assert split(), "a rebalance happened meanwhile"
        reports = []
        for cid, c in consumers.items():
            report = parse_librdkafka_stats(json.loads(docs[cid][-1]), group, RECEIVED_MS)
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
            c.close()


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

    def counts(doc: str) -> list[tuple[int, int, int]]:
        parsed = parse_librdkafka_stats(json.loads(doc), None, RECEIVED_MS)
        return sorted(
            (p.partition, p.txmsgs, p.queued) for p in parsed.partitions if p.topic == topic
        )

    def all_delivered(doc: str) -> bool:
        # A statistics document is a snapshot: one taken mid-flush may count one partition's
        # records and not yet the other's. Wait for one that has both at 10.
        return topic in doc and [c[:2] for c in counts(doc)] == [(0, 10), (1, 10)]

    deadline = time.monotonic() + 30
    while not any(all_delivered(d) for d in docs):
        last = counts(docs[-1]) if docs else None
        assert time.monotonic() < deadline, f"{len(docs)} statistics, the last counting {last}"
        producer.poll(0.1)
    doc = next(d for d in reversed(docs) if all_delivered(d))
    report = parse_librdkafka_stats(json.loads(doc), None, RECEIVED_MS)
    assert (report.kind, report.client_id, report.msg_cnt) == (PRODUCER, "cs-producer", 0)
    mine = [p for p in report.partitions if p.topic == topic]
    assert [(p.partition, p.txmsgs, p.queued) for p in mine] == [(0, 10, 0), (1, 10, 0)]
    assert report.txerrs == 0 and report.in_flight == 0
