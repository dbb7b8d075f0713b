"""Hypothesis strategies of the fuzz targets: valid inputs (so a property can check the round
trip) and ways to spoil them (so it can check the refusal). Shared by ``tests/fuzz/`` and
``benchmarks/bench_fuzz.py``.

Every generator here is written from the documented formats (docs/INGEST.md, docs/EVALUATOR.md,
docs/CONSUMER_OFFSETS_LAYOUT.md, SPEC §2.4, docs/ALERTS.md), not from the parsers, so a parser
that drifted from its document fails here.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

from dashboard.secrecy import is_secret_key

INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1

# --- hostile JSON --------------------------------------------------------------------------

# What ``json.loads`` can hand a parser: NaN and Infinity (Python reads them), integers far
# beyond int64, lone surrogates (``"\ud800"`` is valid JSON text), NULs, empty strings.
EDGE_VALUES = (
    None, True, False, 0, -1, 1, 2**31, INT64_MAX, 2**63, -(2**63) - 1, 10**30, -(10**30),
    0.5, -0.0, 1e308, float("nan"), float("inf"), float("-inf"), "", " ", "0", "1", "-1",
    "true", "null", "\x00", "\ud800", "a\udfffb", "é", "</script>", [], {}, [None], {"": None},
)  # fmt: skip
edge_values = st.sampled_from(EDGE_VALUES)
hostile_text = st.text(st.characters(exclude_categories=()), max_size=12) | st.sampled_from(
    ["", "\x00", "\ud800", "a\udfffb", "/", "partition_1", " x ", "\u2028", "𝔘"]
)


def _json(text: st.SearchStrategy[str], edges: st.SearchStrategy) -> st.SearchStrategy:
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**64), max_value=2**64)
        | st.floats()
        | text
        | edges
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
        max_leaves=12,
    )


json_values = _json(hostile_text, edge_values)
# The same without lone surrogates: what a JSON writer of valid Unicode text can produce.
unicode_json_values = _json(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=12),
    st.sampled_from([v for v in EDGE_VALUES if not isinstance(v, str) or v.isascii()]),
)


def _paths(value: Any, prefix: tuple = ()) -> Iterator[tuple]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _at(doc: Any, path: tuple) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _replace(doc: Any, path: tuple, make: Any) -> Any:
    """A copy of ``doc`` with the value at ``path`` replaced by ``make(old)``."""
    if not path:
        return make(doc)
    head, rest = path[0], path[1:]
    copy = dict(doc) if isinstance(doc, dict) else list(doc)
    copy[head] = _replace(doc[head], rest, make)
    return copy


def _drop(doc: Any, path: tuple) -> Any:
    parent_path, last = path[:-1], path[-1]

    def without(parent: Any) -> Any:
        if isinstance(parent, dict):
            return {k: v for k, v in parent.items() if k != last}
        return [v for i, v in enumerate(parent) if i != last]

    return _replace(doc, parent_path, without)


@st.composite
def spoiled(draw: st.DrawFn, valid: st.SearchStrategy, max_changes: int = 3) -> Any:
    """A valid document with one to ``max_changes`` of its values replaced (by a hostile value
    or one of another type), removed, or given an extra member. Some results are still valid:
    a property must accept those as valid, not assume a refusal."""
    doc = draw(valid)
    for _ in range(draw(st.integers(1, max_changes))):
        path = draw(st.sampled_from(list(_paths(doc))))
        action = draw(st.sampled_from(("edge", "value", "drop", "extra")))
        if action == "drop" and path:
            doc = _drop(doc, path)
        elif action == "extra" and isinstance(_at(doc, path), dict | list):
            key, value = draw(hostile_text), draw(json_values)

            def grow(old: Any, key: str = key, value: Any = value) -> Any:
                return {**old, key: value} if isinstance(old, dict) else [*old, value]

            doc = _replace(doc, path, grow)
        else:
            value = draw(edge_values if action == "edge" else json_values)
            doc = _replace(doc, path, lambda old, value=value: value)
    return doc


EDGE_NUMBERS = (
    -1, 0, 2**31, INT64_MAX, 2**63, -(2**63) - 1, 10**30, 10**400, -(10**400), 0.5, -0.0,
    1e308, float("nan"), float("inf"), float("-inf"), True,
)  # fmt: skip


@st.composite
def edge_numbered(draw: st.DrawFn, valid: st.SearchStrategy) -> Any:
    """A valid document whose numbers are each, with even odds, replaced by a number at an
    edge: NaN, infinities, beyond int64 or a double (JSON has no limits; Python reads integers
    of up to 4,300 digits), negative, fractional, a boolean."""
    doc = draw(valid)
    for path in [p for p in _paths(doc) if p and type(_at(doc, p)) in (int, float)]:
        if draw(st.booleans()):
            value = draw(st.sampled_from(EDGE_NUMBERS))
            doc = _replace(doc, path, lambda old, value=value: value)
    return doc


def dumps(doc: Any) -> str:
    """JSON text as a careless writer would produce it: NaN, Infinity and lone surrogates
    (escaped) included."""
    return json.dumps(doc, allow_nan=True)


# --- names -----------------------------------------------------------------------------------

# Valid Unicode without surrogates: what a well-behaved client writes.
unicode_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)
names = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40)
long_names = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=255)

# --- storm-kafka spout znodes (DOMAIN.md §1) -------------------------------------------------

_path_part = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="/"),
                     min_size=1, max_size=12)  # fmt: skip


@st.composite
def spout_znodes(draw: st.DrawFn) -> dict[str, Any]:
    """A node as a KafkaSpout's PartitionManager writes it: ``{"path", "doc", "data"}``."""
    roots = draw(st.lists(_path_part, max_size=3))
    spout = draw(_path_part)
    partition = draw(st.integers(0, INT32_MAX))
    doc = {
        "topology": {"id": draw(names), "name": draw(names)},
        "offset": draw(st.integers(0, INT64_MAX)),
        "partition": partition,
        "broker": {"host": draw(names), "port": draw(st.integers(1, 65535))},
        "topic": draw(names),
    }
    extra = draw(st.booleans())
    if extra:  # a newer writer's extra field is not an error (escaped: it may hold anything)
        doc[draw(st.sampled_from(["version", "meta", "x"]))] = draw(json_values)
    path = "/" + "/".join([*roots, spout, f"partition_{partition}"])
    ascii_only = extra or draw(st.booleans())
    data = json.dumps(doc, ensure_ascii=ascii_only, allow_nan=True).encode("utf-8")
    return {"path": path, "spout": spout, "doc": doc, "data": data}


@st.composite
def bad_spout_znodes(draw: st.DrawFn) -> tuple[str, bytes | None]:
    """(path, data): a spoiled document, bytes that are not JSON or UTF-8, or a bad path."""
    node = draw(spout_znodes())
    kind = draw(st.sampled_from(("spoiled", "spoiled", "json", "bytes", "path", "empty")))
    path, data = node["path"], node["data"]
    if kind == "spoiled":
        data = dumps(draw(spoiled(st.just(node["doc"])))).encode("utf-8", "surrogatepass")
    elif kind == "json":
        data = dumps(draw(json_values)).encode("utf-8", "surrogatepass")
    elif kind == "bytes":
        data = draw(st.binary(max_size=300))
    elif kind == "path":
        path = draw(st.sampled_from([
            "", "/", "partition_0", "/partition_0", "//partition_0", "/s/partition_01",
            "/s/partition_-1", "/s/partition_", "/s/partition_99999999999", "/s/p_0",
            "/s/partition_0/", "/s/partition_٣",
        ]) | st.text(max_size=30))  # fmt: skip
    else:
        data = draw(st.sampled_from([None, b"", b" ", b"null", b"\xef\xbb\xbf{}"]))
    return path, data


# --- __consumer_offsets records (docs/CONSUMER_OFFSETS_LAYOUT.md) ----------------------------


def _i16(n: int) -> bytes:
    return struct.pack(">h", n)


def _i32(n: int) -> bytes:
    return struct.pack(">i", n)


def _i64(n: int) -> bytes:
    return struct.pack(">q", n)


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _string(s: str | None) -> bytes:
    if s is None:
        return _i16(-1)
    raw = s.encode("utf-8")
    return _i16(len(raw)) + raw


def _cstring(s: str | None) -> bytes:
    if s is None:
        return _uvarint(0)
    raw = s.encode("utf-8")
    return _uvarint(len(raw) + 1) + raw


def _blob(b: bytes | None) -> bytes:
    return _i32(-1) if b is None else _i32(len(b)) + b


def _cblob(b: bytes | None) -> bytes:
    return _uvarint(0) if b is None else _uvarint(len(b) + 1) + b


def _tagged(fields: list[tuple[int, bytes]]) -> bytes:
    out = _uvarint(len(fields))
    for tag, payload in fields:
        out += _uvarint(tag) + _uvarint(len(payload)) + payload
    return out


# Kafka strings are int16-length prefixed: keep them short (and valid UTF-8, so the decoder's
# replacement of bad sequences does not change them).
kafka_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=16)
int32s = st.integers(-(2**31), INT32_MAX)
int64s = st.integers(-(2**63), INT64_MAX)
tagged_fields = st.lists(st.tuples(st.integers(0, 2**20), st.binary(max_size=8)), max_size=2)


@st.composite
def consumer_assignments(draw: st.DrawFn) -> tuple[bytes, dict[str, list[int]]]:
    """ConsumerProtocolAssignment v0-v3 bytes and the topic -> partitions they hold."""
    version = draw(st.integers(0, 3))
    topics = draw(st.dictionaries(kafka_text, st.lists(int32s, max_size=4), max_size=3))
    out = _i16(version) + _i32(len(topics))
    for topic, partitions in topics.items():
        out += _string(topic) + _i32(len(partitions)) + b"".join(_i32(p) for p in partitions)
    out += _blob(draw(st.none() | st.binary(max_size=8)))
    return out, topics


@st.composite
def offset_commit_records(draw: st.DrawFn) -> tuple[bytes, bytes | None, dict[str, Any]]:
    """(key, value, the decoded record) of an offset commit, any key and value version, or a
    tombstone."""
    key_version = draw(st.sampled_from((0, 1)))
    group, topic, partition = draw(kafka_text), draw(kafka_text), draw(int32s)
    key = _i16(key_version) + _string(group) + _string(topic) + _i32(partition)
    base = {"type": "offset_commit", "group": group, "topic": topic, "partition": partition,
            "key_version": key_version}  # fmt: skip
    if draw(st.integers(0, 9)) == 0:
        return key, None, {**base, "deleted": True}
    version = draw(st.integers(0, 4))
    offset, metadata, commit_ts = draw(int64s), draw(kafka_text), draw(int64s)
    epoch = draw(int32s) if version >= 3 else -1
    expire = draw(int64s) if version == 1 else -1
    value = _i16(version) + _i64(offset)
    if version >= 3:
        value += _i32(epoch)
    value += _cstring(metadata) if version >= 4 else _string(metadata)
    value += _i64(commit_ts)
    if version == 1:
        value += _i64(expire)
    if version >= 4:
        value += _tagged(draw(tagged_fields))
    record = {
        **base, "offset": offset, "commit_timestamp_ms": commit_ts, "metadata": metadata,
        "leader_epoch": None if epoch == -1 else epoch,
        "expire_timestamp_ms": None if expire == -1 else expire, "value_version": version,
        "deleted": False,
    }  # fmt: skip
    return key, value, record


@st.composite
def group_metadata_records(draw: st.DrawFn) -> tuple[bytes, bytes | None, dict[str, Any]]:
    """(key, value, the decoded record) of a classic group's metadata, value v0-v4, members
    with consumer-protocol assignments, or a tombstone."""
    group = draw(kafka_text)
    key = _i16(2) + _string(group)
    if draw(st.integers(0, 9)) == 0:
        return key, None, {"type": "group_metadata", "group": group, "key_version": 2,
                           "deleted": True}  # fmt: skip
    version = draw(st.integers(0, 4))
    flexible = version >= 4
    string, nullable, blob = (_cstring, _cstring, _cblob) if flexible else (_string, _string, _blob)
    protocol_type = draw(st.sampled_from(["consumer", "connect", ""]) | kafka_text)
    generation = draw(int32s)
    protocol, leader = draw(st.none() | kafka_text), draw(st.none() | kafka_text)
    state_ts = draw(int64s) if version >= 2 else -1
    value = _i16(version) + string(protocol_type) + _i32(generation)
    value += nullable(protocol) + nullable(leader)
    if version >= 2:
        value += _i64(state_ts)
    count = draw(st.integers(0, 3))
    value += _uvarint(count + 1) if flexible else _i32(count)
    members = []
    for _ in range(count):
        member_id, client_id, host = draw(kafka_text), draw(kafka_text), draw(kafka_text)
        instance = draw(st.none() | kafka_text) if version >= 3 else None
        rebalance_timeout = draw(int32s) if version >= 1 else None
        session_timeout = draw(int32s)
        if protocol_type == "consumer" and draw(st.booleans()):
            assignment_bytes, assignment = draw(consumer_assignments())
        else:
            assignment_bytes = draw(st.binary(max_size=12)) if protocol_type != "consumer" else b""
            assignment = {}
        value += string(member_id)
        if version >= 3:
            value += nullable(instance)
        value += string(client_id) + string(host)
        if version >= 1:
            value += _i32(rebalance_timeout)
        value += _i32(session_timeout) + blob(draw(st.binary(max_size=8))) + blob(assignment_bytes)
        if flexible:
            value += _tagged(draw(tagged_fields))
        members.append({
            "member_id": member_id, "group_instance_id": instance, "client_id": client_id,
            "client_host": host,
            "rebalance_timeout_ms": session_timeout if rebalance_timeout is None
            else rebalance_timeout,
            "session_timeout_ms": session_timeout, "assignment": assignment,
        })  # fmt: skip
    if flexible:
        value += _tagged(draw(tagged_fields))
    record = {
        "type": "group_metadata", "group": group, "key_version": 2, "generation": generation,
        "protocol_type": protocol_type, "protocol": protocol, "leader": leader,
        "current_state_timestamp_ms": None if state_ts == -1 else state_ts, "members": members,
        "value_version": version, "deleted": False,
    }  # fmt: skip
    return key, value, record


offsets_records = offset_commit_records() | group_metadata_records()


@st.composite
def corrupted_offsets_records(draw: st.DrawFn) -> tuple[bytes, bytes | None]:
    """A valid record's bytes truncated, extended, overwritten in places, or random bytes."""
    key, value, _ = draw(offsets_records)
    kind = draw(st.sampled_from(("flip", "flip", "truncate", "extend", "random", "swap")))
    target_value = value is not None and draw(st.booleans())
    data = bytearray(value if target_value else key)
    if kind == "flip" and data:
        for _ in range(draw(st.integers(1, 4))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    elif kind == "truncate":
        del data[draw(st.integers(0, len(data))) :]
    elif kind == "extend":
        data += draw(st.binary(min_size=1, max_size=8))
    elif kind == "random":
        data = bytearray(draw(st.binary(max_size=64)))
    else:  # a key of one record type over a value of another
        other_key, other_value, _ = draw(offsets_records)
        return other_key, value
    if target_value:
        return key, bytes(data)
    return bytes(data), value


# --- evaluate_window documents (docs/EVALUATOR.md) -------------------------------------------

_offsets = st.integers(0, INT64_MAX)
_maybe_offset = st.none() | _offsets


@st.composite
def window_partitions(draw: st.DrawFn) -> dict[str, Any]:
    timestamps = sorted(draw(st.lists(st.integers(0, 2**53), max_size=12)))
    commits = []
    for ts in timestamps:
        commit = {"offset": draw(_offsets), "timestamp_ms": ts}
        for name in ("lag", "earliest", "latest"):
            if draw(st.booleans()):
                commit[name] = draw(_maybe_offset)
        commits.append(commit)
    doc: dict[str, Any] = {
        "id": draw(names),
        "commits": commits,
        "latest_offsets": draw(st.lists(_offsets, max_size=12)),
        "current_lag": draw(st.integers(-(2**63), INT64_MAX)),
    }
    optional = {
        "earliest": _maybe_offset,
        "latest": _maybe_offset,
        "alive": st.none() | st.booleans(),
        "spout": st.none()
        | st.fixed_dictionaries(
            {},
            optional={
                k: st.none() | st.lists(_offsets, max_size=12)
                for k in ("pending", "failed", "acked")
            },
        ),  # fmt: skip
        "stale": st.none() | st.booleans(),
        "stale_since_ms": _maybe_offset,
        "max_spout_pending": st.none() | st.integers(1, INT64_MAX),
        "smallest_failed_offset": _maybe_offset,
        "rebalances_ms": st.none() | st.lists(_offsets, max_size=6),
        "rebalancing": st.none() | st.booleans(),
        "topology_ids": st.none() | st.lists(names, max_size=3),
        "topics": st.none() | st.lists(names, max_size=3),
        "polls": st.none() | st.integers(1, 10_000),
        "poll_times_ms": st.none() | st.lists(st.integers(0, 2**53), max_size=12).map(sorted),
        "down_polls_ms": st.none() | st.lists(st.integers(0, 2**53), max_size=6).map(sorted),
        "time_lag_s": st.none() | st.floats(0.0, allow_nan=False, allow_infinity=False),
        "retention_ms": st.none() | st.integers(-1, INT64_MAX),
        "cleanup_policy": st.none() | st.sampled_from(["delete", "compact", "compact,delete"]),
    }
    for name, strategy in optional.items():
        if draw(st.booleans()):
            doc[name] = draw(strategy)
    return doc


_finite = {"allow_nan": False, "allow_infinity": False}
window_configs = st.fixed_dictionaries({}, optional={
    "allowed_lag": st.integers(0, INT64_MAX),
    "minimum_complete": st.floats(0.0, 1.0, **_finite),
    "window": st.integers(1, 50),
    "min_distance_s": st.floats(0.0, 1e9, **_finite) | st.integers(0, 10**9),
    "rebalance_storm_count": st.integers(0, 100),
    "backpressure_share": st.floats(0.01, 1.0, **_finite),
    "retention_risk_s": st.integers(0, INT64_MAX),
})  # fmt: skip


@st.composite
def window_documents(draw: st.DrawFn) -> dict[str, Any]:
    doc: dict[str, Any] = {"now_ms": draw(st.integers(0, 2**53))}
    if draw(st.booleans()):
        doc["config"] = draw(st.none() | window_configs)
    if draw(st.booleans()):
        doc["partitions"] = draw(st.none() | st.lists(window_partitions(), max_size=3))
    if draw(st.booleans()):
        doc["groups"] = draw(st.none() | st.lists(
            st.fixed_dictionaries({"id": names, "partitions": st.lists(window_partitions(),
                                                                       max_size=3)}),
            max_size=2,
        ))  # fmt: skip
    return doc


# --- ingest pushes (docs/INGEST.md) ----------------------------------------------------------

_counts = st.integers(0, INT64_MAX)


@st.composite
def spout_pushes(draw: st.DrawFn) -> dict[str, Any]:
    keys = draw(st.lists(st.tuples(long_names, st.integers(0, INT32_MAX)), max_size=6,
                         unique=True))  # fmt: skip
    partitions = []
    for topic, partition in keys:
        p = {"topic": topic, "partition": partition, "pending": draw(_counts),
             "failed": draw(_counts), "acked": draw(_counts),
             "smallest_failed_offset": draw(st.none() | _counts)}  # fmt: skip
        if draw(st.booleans()):
            p["emitted"] = draw(st.none() | _counts)
        if draw(st.booleans()):
            p["max_offset_behind"] = draw(st.none() | _counts)
        partitions.append(p)
    doc = {
        "topology_id": draw(long_names),
        "spout_id": draw(long_names),
        "max_spout_pending": draw(st.none() | _counts),
        "partitions": partitions,
    }
    for name, strategy in (("topology_name", st.none() | long_names),
                           ("time_ms", st.none() | st.integers(1, INT64_MAX)),
                           ("max_offset_behind", st.none() | _counts),
                           ("pending", st.none() | _counts)):  # fmt: skip
        if draw(st.booleans()):
            doc[name] = draw(strategy)
    return doc


_librdkafka_offset = st.integers(-1001, INT64_MAX) | st.sampled_from([-1001, -1])


@st.composite
def librdkafka_stats(draw: st.DrawFn) -> dict[str, Any]:
    """A librdkafka statistics document (STATISTICS.md), consumer or producer, with the fields
    Lagwatch reads and a few it ignores."""
    kind = draw(st.sampled_from(("consumer", "producer")))
    topics = {}
    for topic in draw(st.lists(long_names, max_size=3, unique=True)):
        partitions = {}
        for n in draw(st.lists(st.integers(-1, 1000), max_size=4, unique=True)):
            p: dict[str, Any] = {"partition": n} if draw(st.booleans()) else {}
            p["desired"] = draw(st.booleans())
            for name in ("committed_offset", "consumer_lag", "lo_offset", "hi_offset",
                         "stored_offset"):  # fmt: skip
                if draw(st.booleans()):
                    p[name] = draw(_librdkafka_offset)
            for name in ("msgq_cnt", "xmit_msgq_cnt", "msgs_inflight", "txmsgs"):
                if draw(st.booleans()):
                    p[name] = draw(st.integers(0, 2**40))
            if draw(st.booleans()):
                p["fetch_state"] = draw(unicode_text)
            p["unknown_field"] = draw(unicode_json_values)  # librdkafka adds fields: ignored
            partitions[str(n)] = p
        topics[topic] = {"topic": topic, "partitions": partitions}
    doc: dict[str, Any] = {
        "name": draw(long_names),
        "client_id": draw(st.text(st.characters(exclude_categories=("Cs",)), max_size=255)),
        "type": kind,
        "ts": draw(st.integers(0, 2**50)),
        "time": draw(st.integers(0, 2**40)),
        "topics": topics,
    }
    if kind == "consumer" and draw(st.booleans()):
        doc["cgrp"] = {"state": draw(unicode_text), "join_state": draw(unicode_text),
                       "rebalance_cnt": draw(st.integers(0, 2**31)),
                       "rebalance_reason": draw(unicode_text),
                       "rebalance_age": draw(st.integers(0, 2**40)),
                       "assignment_size": draw(st.integers(0, 2**31))}  # fmt: skip
    if kind == "producer":
        doc["msg_cnt"] = draw(st.integers(0, 2**40))
        doc["brokers"] = {
            name: {"waitresp_msg_cnt": draw(st.integers(0, 2**40)),
                   "txerrs": draw(st.integers(0, 2**40))}
            for name in draw(st.lists(names, max_size=2, unique=True))
        }  # fmt: skip
    return doc


# --- clusters YAML (SPEC §2.4) ---------------------------------------------------------------

_cluster_names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,30}", fullmatch=True)
# What the parser keeps as given: no surrounding blanks (it strips them).
_settings_text = st.text(st.characters(exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp")),
                         min_size=1, max_size=40)  # fmt: skip
_librdkafka_values = (
    _settings_text | st.integers(-(2**31), 2**31) | st.booleans()
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
)  # fmt: skip


@st.composite
def cluster_entries(draw: st.DrawFn, name: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name}
    if draw(st.booleans()):
        entry["poll_interval_s"] = draw(st.integers(1, 86400))
    with_kafka = draw(st.booleans())
    if with_kafka:
        kafka: dict[str, Any] = {"bootstrap_servers": draw(_settings_text)}
        if draw(st.booleans()):
            # Secret keys (sasl.password…) export as {env: VAR} references, not values, so
            # the round trip drawn here is of the other settings; tests/accounts/test_secrets.py
            # covers the secrets' own.
            kafka["config"] = draw(st.dictionaries(
                st.from_regex(r"[a-z][a-z0-9.]{0,30}", fullmatch=True).filter(
                    lambda key: not is_secret_key(key)),
                _librdkafka_values, max_size=4,
            ))  # fmt: skip
        if draw(st.booleans()):
            kafka["read_consumer_offsets_topic"] = draw(st.booleans())
        entry["kafka"] = kafka
    if not with_kafka or draw(st.booleans()):
        zk: dict[str, Any] = {"hosts": draw(_settings_text)}
        if draw(st.booleans()):
            zk["storm_spout_roots"] = draw(st.lists(
                st.from_regex(r"/|(/[A-Za-z0-9._-]{1,12}){1,3}", fullmatch=True), max_size=3,
            ))  # fmt: skip
        if draw(st.booleans()):
            zk["zk_consumers"] = draw(st.booleans())
        entry["zookeeper"] = zk
    if draw(st.booleans()):
        entry["storm_ui_url"] = draw(
            st.none()
            | st.from_regex(
                r"https?://[a-z0-9.-]{1,30}(:[0-9]{2,5})?(/[a-z0-9/]{0,20})?", fullmatch=True
            )  # fmt: skip
        )
    if draw(st.booleans()):
        entry["broker_metrics_urls"] = draw(st.lists(
            st.from_regex(r"https?://[a-z0-9-]{1,20}(:[1-9][0-9]{1,3})?/[a-z0-9/]{0,20}",
                          fullmatch=True),
            max_size=3, unique=True,
        ))  # fmt: skip
    return entry


@st.composite
def cluster_files(draw: st.DrawFn) -> dict[str, Any]:
    cluster_names = draw(st.lists(_cluster_names, min_size=1, max_size=3, unique=True))
    return {"clusters": [draw(cluster_entries(name)) for name in cluster_names]}


# --- alerts YAML (docs/ALERTS.md) ------------------------------------------------------------

_alert_names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 ._-]{0,30}", fullmatch=True).map(str.strip)
# Django's form fields refuse NUL characters (a PostgreSQL text column cannot hold one).
_reasons = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
                   max_size=20)  # fmt: skip
_patterns = st.sampled_from(["*", "orders-*", "billing", "[ab]*", "?x"])


@st.composite
def alerts_files(draw: st.DrawFn) -> dict[str, Any]:
    channels = []
    for name in draw(st.lists(_alert_names, max_size=3, unique=True)):
        kind = draw(st.sampled_from(("webhook", "slack", "email")))
        channel: dict[str, Any] = {"name": name, "kind": kind}
        if kind == "email":
            channel["recipients"] = draw(st.lists(
                st.from_regex(r"[a-z]{1,8}@[a-z]{1,8}\.(com|org)", fullmatch=True),
                min_size=1, max_size=3,
            ))  # fmt: skip
            if draw(st.booleans()):
                channel["smtp_host"] = "relay.example.com"
                channel["smtp_port"] = draw(st.integers(1, 65535))
        else:
            channel["url"] = draw(st.from_regex(r"https?://[a-z]{1,10}\.example/[a-z0-9]{0,12}",
                                                fullmatch=True))  # fmt: skip
        for flag in ("enabled", "send_resolved"):
            if draw(st.booleans()):
                channel[flag] = draw(st.booleans())
        channels.append(channel)
    rules = []
    for name in draw(st.lists(_alert_names, max_size=3, unique=True)):
        rule: dict[str, Any] = {
            "name": name,
            "statuses": draw(st.lists(st.sampled_from(["WARN", "STALL", "STOP", "REWIND", "ERR"]),
                                      min_size=1, max_size=3, unique=True)),
            "group_pattern": draw(_patterns),
            "min_evaluations": draw(st.integers(1, 20)),
            "severity": draw(st.sampled_from(["info", "warning", "critical"])),
            "level": draw(st.sampled_from(["partition", "group"])),
        }  # fmt: skip
        if channels and draw(st.booleans()):
            rule["channels"] = draw(st.lists(st.sampled_from([c["name"] for c in channels]),
                                             max_size=2, unique=True))  # fmt: skip
        rules.append(rule)
    silences = [
        {"group_pattern": draw(_patterns), "hours": draw(st.floats(0.1, 2000)),
         "reason": draw(_reasons)}
        for _ in range(draw(st.integers(0, 2)))
    ]  # fmt: skip
    return {"channels": channels, "rules": rules, "silences": silences}
