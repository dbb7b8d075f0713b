"""librdkafka statistics documents and a spout push, as clients send them to the ingest endpoint.

The two librdkafka documents follow STATISTICS.md and the shape librdkafka 2.x writes
(captured from confluent-kafka 2.16 against the lab broker, then edited to carry two topics,
an unassigned partition and producer traffic). Shared by the parsers' tests and the ingest
endpoint's (tests/dashboard/test_ingest.py).
"""

from __future__ import annotations

from typing import Any

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
