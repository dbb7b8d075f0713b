"""What clients push to the ingest endpoint (SPEC §2.3), validated into plain records.

Two formats arrive: a librdkafka statistics document (``stats_cb``'s JSON, as STATISTICS.md
describes it) and Lagwatch's own spout push. Both come from outside, so every field is
checked and a refusal names the field's path (``topics.orders.partitions.3.committed_offset:
must be an integer``); keys this module does not know are ignored, because librdkafka adds
fields from version to version.

No Django here: the ingest views and the tests call these functions directly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from collectors.client_reports import CONSUMER, KINDS, PRODUCER, ClientPartition, ClientReport
from collectors.records import SpoutFigures

MAX_NAME_LEN = 255  # topic, group, client, topology and spout names
MAX_TEXT_LEN = 500  # free text (rebalance reasons, fatal errors) is cut, not refused
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
INTERNAL_PARTITION = -1  # librdkafka's UA (unassigned) pseudo-partition of each topic


class IngestError(ValueError):
    """A pushed document that cannot be accepted; the message starts with the field path."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


# --- field checks --------------------------------------------------------------------------


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def _object(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise IngestError(path, f"must be a JSON object, got {_type(value)}")
    return value


def _type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _int(value: object, path: str, minimum: int = INT64_MIN) -> int:
    # bool is an int subclass in Python, never in JSON.
    if isinstance(value, bool) or not isinstance(value, int):
        raise IngestError(path, f"must be an integer, got {_type(value)}")
    if not INT64_MIN <= value <= INT64_MAX:
        raise IngestError(path, "must fit in 64 bits")
    if value < minimum:
        raise IngestError(path, f"must be >= {minimum}, got {value}")
    return value


def _opt_int(m: Mapping[str, Any], key: str, path: str, minimum: int = INT64_MIN) -> int | None:
    value = m.get(key)
    return None if value is None else _int(value, _join(path, key), minimum)


def _offset(m: Mapping[str, Any], key: str, path: str) -> int | None:
    """librdkafka writes -1001 (invalid) and -1 (unknown) where it knows no offset."""
    value = _opt_int(m, key, path)
    return value if value is not None and value >= 0 else None


def _name(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise IngestError(path, f"must be a string, got {_type(value)}")
    if not value:
        raise IngestError(path, "must not be empty")
    if len(value) > MAX_NAME_LEN:
        raise IngestError(path, f"must be at most {MAX_NAME_LEN} characters")
    return value


def _opt_name(m: Mapping[str, Any], key: str, path: str) -> str | None:
    value = m.get(key)
    return None if value is None else _name(value, _join(path, key))


def _opt_text(m: Mapping[str, Any], key: str, path: str) -> str | None:
    value = m.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise IngestError(_join(path, key), f"must be a string, got {_type(value)}")
    return value[:MAX_TEXT_LEN]


def _opt_bool(m: Mapping[str, Any], key: str, path: str) -> bool:
    value = m.get(key, False)
    if not isinstance(value, bool):
        raise IngestError(_join(path, key), f"must be true or false, got {_type(value)}")
    return value


def _opt_group(group: object) -> str | None:
    if group is None or group == "":
        return None
    return _name(group, "group")


# --- librdkafka statistics -----------------------------------------------------------------


def parse_librdkafka_stats(
    doc: object, group: str | None, received_ms: int, *, host: str | None = None
) -> ClientReport:
    """Validate one librdkafka statistics document and keep what Lagwatch uses.

    A consumer's assignment is the set of partitions librdkafka marks ``desired``: the
    consumer sets that flag on every partition it adds to its assignment and clears it on
    removal (rdkafka_assignment.c), whereas ``topics.*.partitions`` lists every partition of
    the topic it knows. Partition -1 is librdkafka's internal unassigned queue, never real.
    """
    d = _object(doc, "document")
    kind = d.get("type")
    if kind not in KINDS:
        got = "missing" if kind is None else repr(kind)
        raise IngestError(
            "type",
            f'must be "consumer" or "producer", got {got}: not a librdkafka statistics document',
        )
    name = _name(d.get("name"), "name")
    client_id = d.get("client_id")
    if not isinstance(client_id, str) or len(client_id) > MAX_NAME_LEN:
        raise IngestError("client_id", f"must be a string of at most {MAX_NAME_LEN} characters")
    wall_s = _opt_int(d, "time", "", minimum=0)
    time_ms = wall_s * 1000 if wall_s else received_ms
    if host is not None:
        host = _name(host, "host")

    partitions = _partitions(d.get("topics"), kind)
    report = ClientReport(
        kind=kind,
        client_id=client_id,
        name=name,
        group=_opt_group(group),
        time_ms=time_ms,
        host=host,
        partitions=partitions,
        fatal_error=_fatal(d.get("fatal")),
    )
    if kind == CONSUMER:
        report = dataclasses.replace(
            report,
            assignment=tuple(sorted((p.topic, p.partition) for p in partitions if p.assigned)),
            **_cgrp(d.get("cgrp")),
        )
    else:
        report = dataclasses.replace(
            report, msg_cnt=_opt_int(d, "msg_cnt", "", minimum=0), **_broker_totals(d)
        )
    return report


def _partitions(topics: object, kind: str) -> tuple[ClientPartition, ...]:
    if topics is None:
        return ()
    out: list[ClientPartition] = []
    for topic, tdoc in _object(topics, "topics").items():
        tpath = _join("topics", topic)
        _name(topic, tpath)
        t = _object(tdoc, tpath)
        parts = t.get("partitions")
        if parts is None:
            continue
        ppath = _join(tpath, "partitions")
        for key, pdoc in _object(parts, ppath).items():
            path = _join(ppath, key)
            p = _object(pdoc, path)
            number = _partition_number(key, p, path)
            if number == INTERNAL_PARTITION:
                continue
            part = _client_partition(topic, number, p, path)
            # A consumer reports every partition of the topics it knows; only its own matter.
            if kind == PRODUCER or part.assigned:
                out.append(part)
    out.sort(key=lambda p: (p.topic, p.partition))
    return tuple(out)


def _partition_number(key: str, p: Mapping[str, Any], path: str) -> int:
    if "partition" in p:
        number = _int(p["partition"], _join(path, "partition"), minimum=INTERNAL_PARTITION)
    else:
        try:
            number = int(key)
        except ValueError:
            raise IngestError(path, "partition key must be an integer") from None
        if number < INTERNAL_PARTITION:
            raise IngestError(path, f"must be >= {INTERNAL_PARTITION}, got {number}")
    return number


def _client_partition(topic: str, number: int, p: Mapping[str, Any], path: str) -> ClientPartition:
    fetch_state = p.get("fetch_state")
    if fetch_state is not None and not isinstance(fetch_state, str):
        raise IngestError(_join(path, "fetch_state"), f"must be a string, got {_type(fetch_state)}")
    msgq = _opt_int(p, "msgq_cnt", path, minimum=0)
    xmit = _opt_int(p, "xmit_msgq_cnt", path, minimum=0)
    queued = None if msgq is None and xmit is None else (msgq or 0) + (xmit or 0)
    return ClientPartition(
        topic=topic,
        partition=number,
        assigned=_opt_bool(p, "desired", path),
        committed=_offset(p, "committed_offset", path),
        consumer_lag=_offset(p, "consumer_lag", path),
        lo_offset=_offset(p, "lo_offset", path),
        hi_offset=_offset(p, "hi_offset", path),
        stored=_offset(p, "stored_offset", path),
        fetch_state=fetch_state[:MAX_NAME_LEN] if fetch_state else None,
        queued=queued,
        in_flight=_opt_int(p, "msgs_inflight", path, minimum=0),
        txmsgs=_opt_int(p, "txmsgs", path, minimum=0),
    )


def _cgrp(value: object) -> dict[str, Any]:
    if value is None:
        return {}
    c = _object(value, "cgrp")
    # STATISTICS.md names it "joinstate"; librdkafka writes "join_state".
    join_key = "join_state" if "join_state" in c else "joinstate"
    return {
        "cgrp_state": _opt_text(c, "state", "cgrp"),
        "join_state": _opt_text(c, join_key, "cgrp"),
        "rebalance_cnt": _opt_int(c, "rebalance_cnt", "cgrp", minimum=0),
        "rebalance_reason": _opt_text(c, "rebalance_reason", "cgrp") or None,
        "rebalance_age_ms": _opt_int(c, "rebalance_age", "cgrp", minimum=0),
        "assignment_size": _opt_int(c, "assignment_size", "cgrp", minimum=0),
    }


def _broker_totals(d: Mapping[str, Any]) -> dict[str, int | None]:
    brokers = d.get("brokers")
    fields = {
        "in_flight": "waitresp_msg_cnt",
        "txerrs": "txerrs",
        "txretries": "txretries",
        "req_timeouts": "req_timeouts",
    }
    if brokers is None:
        return dict.fromkeys(fields)
    totals = dict.fromkeys(fields, 0)
    for broker, bdoc in _object(brokers, "brokers").items():
        path = _join("brokers", broker)
        b = _object(bdoc, path)
        for out, key in fields.items():
            totals[out] += _opt_int(b, key, path, minimum=0) or 0
    return totals


def _fatal(value: object) -> str | None:
    if value is None:
        return None
    f = _object(value, "fatal")
    error = _opt_text(f, "error", "fatal") or "fatal error"
    reason = _opt_text(f, "reason", "fatal")
    return f"{error}: {reason}"[:MAX_TEXT_LEN] if reason else error


# --- spout push ----------------------------------------------------------------------------


def parse_spout_report(doc: object, received_ms: int) -> list[SpoutFigures]:
    """Validate a spout's push and return one ``SpoutFigures`` per partition.

    The format (docs/INGEST.md)::

        {"topology_id": str, "spout_id": str, "topology_name"?: str, "time_ms"?: int,
         "max_spout_pending": int | null, "max_offset_behind"?: int | null,
         "pending"?: int | null,
         "partitions": [{"topic": str, "partition": int, "pending": int, "failed": int,
                         "acked": int, "emitted"?: int, "smallest_failed_offset": int | null,
                         "max_offset_behind"?: int | null}]}

    Counts are non-negative integers; a partition's ``max_offset_behind`` overrides the
    spout's. ``time_ms`` defaults to the receive time. The top-level ``pending`` is the spout
    task's tuples in flight, what ``max_spout_pending`` caps (BACKPRESSURE compares the two).
    """
    d = _object(doc, "document")
    topology_id = _name(d.get("topology_id"), "topology_id")
    spout_id = _name(d.get("spout_id"), "spout_id")
    _opt_name(d, "topology_name", "")
    time_ms = _opt_int(d, "time_ms", "", minimum=0) or received_ms
    max_pending = _opt_int(d, "max_spout_pending", "", minimum=0)
    spout_pending = _opt_int(d, "pending", "", minimum=0)
    default_behind = _opt_int(d, "max_offset_behind", "", minimum=0)
    parts = d.get("partitions")
    if not isinstance(parts, list):
        raise IngestError("partitions", f"must be an array, got {_type(parts)}")
    seen: dict[tuple[str, int], int] = {}
    figures: list[SpoutFigures] = []
    for i, pdoc in enumerate(parts):
        path = _join("partitions", i)
        p = _object(pdoc, path)
        topic = _name(p.get("topic"), _join(path, "topic"))
        partition = _int(p.get("partition"), _join(path, "partition"), minimum=0)
        if (topic, partition) in seen:
            raise IngestError(
                path, f"{topic}[{partition}] repeats partitions.{seen[topic, partition]}"
            )
        seen[topic, partition] = i
        behind = _opt_int(p, "max_offset_behind", path, minimum=0)
        figures.append(
            SpoutFigures(
                topology_id=topology_id,
                spout_id=spout_id,
                topic=topic,
                partition=partition,
                pending=_int(p.get("pending"), _join(path, "pending"), minimum=0),
                failed=_int(p.get("failed"), _join(path, "failed"), minimum=0),
                acked=_int(p.get("acked"), _join(path, "acked"), minimum=0),
                emitted=_opt_int(p, "emitted", path, minimum=0),
                smallest_failed_offset=_opt_int(p, "smallest_failed_offset", path, minimum=0),
                max_offset_behind=behind if behind is not None else default_behind,
                max_spout_pending=max_pending,
                spout_pending=spout_pending,
                time_ms=time_ms,
            )
        )
    return figures
