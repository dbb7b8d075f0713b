"""Fuzzed inputs of the two byte-level parsers: the storm-kafka spout znode and the
``__consumer_offsets`` record decoder (and its ``decode_offsets_record`` command).

Properties: a valid input comes back field for field; anything else is refused with the
parser's own error type, naming where it went wrong, never another exception.
"""

from __future__ import annotations

import io
import json

from django.core.management import call_command
from django.core.management.base import CommandError
from hypothesis import given
from hypothesis import strategies as st

from collectors.consumer_offsets import (
    MALFORMED,
    TRUNCATED,
    UNKNOWN_VERSION,
    UNSUPPORTED_RECORD_TYPE,
    DecodeError,
    DecodeStats,
    decode_record,
)
from collectors.records import CommittedOffset
from collectors.storm_znode import BadZnode, parse_spout_znode
from tests.fuzz import strategies as fs

DECODE_KINDS = {MALFORMED, TRUNCATED, UNKNOWN_VERSION, UNSUPPORTED_RECORD_TYPE}

# --- spout znodes ----------------------------------------------------------------------------


def check_spout_znode(path: str, data: bytes | None, mtime_ms: int = 1, version: int = 2):
    """Parse one node; the commit, or the BadZnode. Raises AssertionError when the parser
    broke a property (an exception of another type escapes as it is)."""
    try:
        commit = parse_spout_znode(path, data, mtime_ms, version)
    except BadZnode as exc:
        assert exc.where == path and exc.reason and str(exc) == f"{path}: {exc.reason}"
        return exc
    # Accepted: it must be what the node says, types exact (no coercion).
    doc = json.loads(data.decode("utf-8"))
    assert isinstance(commit, CommittedOffset)
    assert type(doc["offset"]) is int and commit.offset == doc["offset"]
    assert type(doc["partition"]) is int and commit.partition == doc["partition"]
    assert path.endswith(f"/partition_{commit.partition}")
    assert commit.topic == doc["topic"] and isinstance(commit.topic, str) and commit.topic
    assert commit.owner == doc["topology"]["name"]
    assert commit.topology_id == doc["topology"]["id"]
    host, port = doc["broker"]["host"], doc["broker"]["port"]
    assert type(port) is int and 0 < port < 65536
    assert commit.broker in (f"{host}:{port}", f"[{host}]:{port}")
    assert commit.group == path.rsplit("/", 2)[-2]
    assert (commit.commit_time_ms, commit.commit_version, commit.where) == (
        mtime_ms, version, path,
    )  # fmt: skip
    return commit


@given(fs.spout_znodes(), st.integers(0, 2**63), st.integers(0, 2**31))
def test_valid_spout_znode_round_trips(node: dict, mtime_ms: int, version: int) -> None:
    commit = check_spout_znode(node["path"], node["data"], mtime_ms, version)
    assert isinstance(commit, CommittedOffset), commit
    assert commit.group == node["spout"]
    assert commit.offset == node["doc"]["offset"] and commit.topic == node["doc"]["topic"]


@given(fs.bad_spout_znodes())
def test_spoiled_spout_znode_is_refused_with_a_reason(case: tuple[str, bytes | None]) -> None:
    check_spout_znode(*case)


def test_spout_znode_names_are_valid_unicode() -> None:
    data = (b'{"topology": {"id": "t-1", "name": "t"}, "offset": 5, "partition": 0, '
            b'"broker": {"host": "h", "port": 9092}, "topic": "\\ud800"}')  # fmt: skip
    try:
        commit = parse_spout_znode("/spouts/s/partition_0", data, 1, 1)
    except BadZnode:
        return
    commit.topic.encode("utf-8")  # UnicodeEncodeError: what SQLite/PostgreSQL would raise


# --- __consumer_offsets ----------------------------------------------------------------------


def check_offsets_record(key: bytes | None, value: bytes | None):
    try:
        record = decode_record(key, value)
    except DecodeError as exc:
        assert exc.kind in DECODE_KINDS, exc.kind
        assert str(exc) and str(exc).split(":")[0], exc
        assert exc.offset is None or 0 <= exc.offset <= max(len(key or b""), len(value or b""))
        return exc
    assert record["type"] in ("offset_commit", "group_metadata")
    assert record["deleted"] is (value is None)
    json.dumps(record)  # what the command prints
    return record


@given(fs.offsets_records)
def test_valid_offsets_record_round_trips(case: tuple[bytes, bytes | None, dict]) -> None:
    key, value, expected = case
    assert decode_record(key, value) == expected
    # Client libraries hand out other buffer types.
    assert decode_record(bytearray(key), None if value is None else memoryview(value)) == expected


@given(fs.corrupted_offsets_records())
def test_corrupted_offsets_record_only_raises_decode_error(case: tuple) -> None:
    check_offsets_record(*case)


@given(st.binary(max_size=80), st.none() | st.binary(max_size=200))
def test_random_bytes_only_raise_decode_error(key: bytes, value: bytes | None) -> None:
    check_offsets_record(key, value)


@given(st.lists(fs.corrupted_offsets_records() | fs.offsets_records.map(lambda r: r[:2]),
                max_size=20))  # fmt: skip
def test_decode_stats_never_stops_on_a_bad_record(records: list[tuple]) -> None:
    stats = DecodeStats()
    decoded = [stats.decode(key, value) for key, value in records]
    assert stats.total_decoded + stats.total_skipped == len(records)
    assert stats.total_decoded == sum(record is not None for record in decoded)
    assert set(stats.skipped) <= DECODE_KINDS


def run_decode_command(key_hex: str, value_hex: str | None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    args = [key_hex] if value_hex is None else [key_hex, value_hex]
    try:
        call_command("decode_offsets_record", *args, stdout=out, stderr=err)
    except SystemExit as exc:
        return exc.code, out.getvalue(), err.getvalue()
    except CommandError as exc:  # argparse's refusal ("-x" is an option): exit 2 from a shell
        return 2, out.getvalue(), f"usage: {exc}"
    return 0, out.getvalue(), err.getvalue()


@given(
    fs.offsets_records.map(lambda r: (r[0].hex(), None if r[1] is None else r[1].hex()))
    | fs.corrupted_offsets_records().map(lambda r: (r[0].hex(), r[1] and r[1].hex()))
    | st.tuples(fs.hostile_text.filter(lambda s: "\x00" not in s), st.none() | fs.hostile_text)
)
def test_decode_offsets_record_command_prints_json_or_exits_2(case: tuple) -> None:
    key_hex, value_hex = case
    code, out, err = run_decode_command(key_hex, value_hex)
    if code == 0:
        record = json.loads(out)
        assert record["type"] in ("offset_commit", "group_metadata") and not err
    else:
        assert code == 2 and err.startswith(("decode_offsets_record: ", "usage: ")) and not out
