"""The Storm 2 commit-metadata parser: the spout's own document, and everything else a Kafka
client may leave in a commit's metadata (which must be None, never an error)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from collectors.storm_commit_metadata import (
    MAX_METADATA_CHARS,
    SpoutCommitMetadata,
    parse_commit_metadata,
    topology_of,
)

# Verbatim from the real storm-kafka-client 2.8.2 spout of lab/storm2/ (OffsetFetch's answer).
REAL = '{"topologyId":"orders-storm2-1-1795907098","taskId":3,"threadName":"Thread-39-kafka-spout-executor[3, 3]"}'


def doc(**overrides: Any) -> str:
    """The spout's document with fields replaced (``None`` deletes), as Jackson writes it."""
    fields: dict[str, Any] = {
        "topologyId": "orders-storm2-1-1795907098",
        "taskId": 3,
        "threadName": "Thread-39-kafka-spout-executor[3, 3]",
    }
    for key, value in overrides.items():
        if value is None:
            del fields[key]
        else:
            fields[key] = value
    return json.dumps(fields, separators=(",", ":"))


def test_the_real_spouts_metadata() -> None:
    parsed = parse_commit_metadata(REAL)
    assert parsed == SpoutCommitMetadata(
        "orders-storm2-1-1795907098", 3, "Thread-39-kafka-spout-executor[3, 3]"
    )
    assert parsed.topology_name == "orders-storm2"
    assert parsed.submitted_s == 1795907098


@pytest.mark.parametrize(
    ("metadata", "topology_id", "task_id", "name"),
    [
        (doc(), "orders-storm2-1-1795907098", 3, "orders-storm2"),
        # dashes, spaces, underscores and non-ASCII are legal in a topology name
        (
            doc(topologyId="my-big-topo-12-1700000000"),
            "my-big-topo-12-1700000000",
            3,
            "my-big-topo",
        ),
        (doc(topologyId="a b_c-1-0"), "a b_c-1-0", 3, "a b_c"),
        (doc(topologyId="заказы-7-1700000000"), "заказы-7-1700000000", 3, "заказы"),
        (doc(topologyId="x-0-1"), "x-0-1", 3, "x"),
        # a name that ends in digits
        (doc(topologyId="orders-2-5-1700000000"), "orders-2-5-1700000000", 3, "orders-2"),
        # task ids: 1 and Java's largest int
        (doc(taskId=1), "orders-storm2-1-1795907098", 1, "orders-storm2"),
        (doc(taskId=2**31 - 1), "orders-storm2-1-1795907098", 2**31 - 1, "orders-storm2"),
        # the thread name is any string, even empty
        (doc(threadName=""), "orders-storm2-1-1795907098", 3, "orders-storm2"),
        # field order and whitespace are JSON's business, not the meaning's
        ('{"threadName":"t","taskId":3,"topologyId":"o-1-2"}', "o-1-2", 3, "o"),
        (' {"topologyId": "o-1-2", "taskId": 3, "threadName": "t"}'.strip(), "o-1-2", 3, "o"),
        ('{"topologyId":"o-1-2","taskId":3,"threadName":"t"}\n', "o-1-2", 3, "o"),
        # escapes that decode to ordinary text
        ('{"topologyId":"\\u043e-1-2","taskId":3,"threadName":"t"}', "о-1-2", 3, "о"),
    ],
)
def test_valid_documents(metadata: str, topology_id: str, task_id: int, name: str) -> None:
    parsed = parse_commit_metadata(metadata)
    assert parsed is not None
    assert (parsed.topology_id, parsed.task_id, parsed.topology_name) == (
        topology_id,
        task_id,
        name,
    )


@pytest.mark.parametrize(
    "metadata",
    [
        # what other clients leave: nothing, a NUL, librdkafka's trailing NUL, free text
        None,
        "",
        "\x00",
        "m\x00",
        "checkpoint-42",
        "OffsetAndMetadata",
        # other JSON documents
        "{}",
        "[]",
        "null",
        '"orders-storm2-1-1795907098"',
        "3",
        '{"topology": {"id": "orders-1-2", "name": "orders"}, "offset": 3}',  # storm-kafka's znode
        '{"flink":"checkpoint","id":12}',
        # not JSON, or cut short
        "{",
        REAL[:-1],
        REAL[:40],
        "{'topologyId': 'o-1-2', 'taskId': 3, 'threadName': 't'}",
        REAL + "\x00",
        REAL + "x",
        # missing fields
        doc(topologyId=None),
        doc(taskId=None),
        doc(threadName=None),
        # a field more than the spout writes, or one repeated
        doc(extra=1),
        doc(topologyName="orders-storm2"),
        '{"topologyId":"o-1-2","taskId":3,"threadName":"t","threadName":"u"}',
        '{"topologyId":"o-1-2","topologyId":"p-1-2","taskId":3,"threadName":"t"}',
        # wrong types: never coerced
        doc(topologyId=12),
        doc(topologyId=["o-1-2"]),
        doc(topologyId={"id": "o-1-2"}),
        doc(taskId="3"),
        doc(taskId=3.0),
        doc(taskId=True),
        doc(taskId=False),
        doc(threadName=7),
        doc(threadName=["t"]),
        '{"topologyId":null,"taskId":3,"threadName":"t"}',
        '{"topologyId":"o-1-2","taskId":null,"threadName":"t"}',
        '{"topologyId":"o-1-2","taskId":3,"threadName":null}',
        # task ids outside Storm's numbering or Java's int
        doc(taskId=0),
        doc(taskId=-1),
        doc(taskId=2**31),
        doc(taskId=10**30),
        # topology ids Nimbus never makes
        doc(topologyId=""),
        doc(topologyId="orders"),
        doc(topologyId="orders-1"),
        doc(topologyId="orders-1-"),
        doc(topologyId="-1-1700000000"),
        doc(topologyId="orders-01-1700000000"),
        doc(topologyId="orders-1-01700000000"),
        doc(topologyId="orders-x-1700000000"),
        doc(topologyId="orders-1--1700000000"),
        doc(topologyId="org.example-1-1700000000"),
        doc(topologyId="a/b-1-1700000000"),
        doc(topologyId="a:b-1-1700000000"),
        doc(topologyId="a\\b-1-1700000000"),
        doc(topologyId="orders-1-1700000000 "),
        doc(topologyId="orders-1-1700000000\n"),
        doc(topologyId="orders-1-" + "9" * 20),
        # control characters in the name, raw (refused by JSON) or escaped (a NUL no store keeps)
        '{"topologyId":"o\u0000-1-2","taskId":3,"threadName":"t"}',
        '{"topologyId":"o\t-1-2","taskId":3,"threadName":"t"}',
        '{"topologyId":"o\x00-1-2","taskId":3,"threadName":"t"}',
        doc(topologyId="a\x7fb-1-2"),
        # a lone surrogate escape: not text any store keeps
        '{"topologyId":"o\\ud800-1-2","taskId":3,"threadName":"t"}',
        '{"topologyId":"o-1-2","taskId":3,"threadName":"\\udc00"}',
        # deep nesting and huge strings cost a check, not a crash
        "[" * 100_000,
        "{" * 100_000,
        '{"a":' * 10_000 + "1" + "}" * 10_000,
        '{"a":' + "[" * 4000,  # under the length limit, deeper than the decoder goes
        '{"a":' * 600 + "1" + "}" * 600,
        doc(threadName="t" * MAX_METADATA_CHARS),
        "{" + " " * (MAX_METADATA_CHARS * 10) + "}",
        "x" * 10_000_000,
    ],
)
def test_anything_else_is_none(metadata: str | None) -> None:
    assert parse_commit_metadata(metadata) is None


def test_a_document_at_the_length_limit_is_read_one_over_is_not() -> None:
    base = doc(threadName="")
    room = MAX_METADATA_CHARS - len(base)
    assert parse_commit_metadata(doc(threadName="t" * room)) is not None
    assert parse_commit_metadata(doc(threadName="t" * (room + 1))) is None


def test_parsing_is_remembered_per_string() -> None:
    assert parse_commit_metadata(REAL) is parse_commit_metadata(REAL)


def meta(topology_id: str, task: int = 3) -> SpoutCommitMetadata:
    return SpoutCommitMetadata(topology_id, task, "t")


@pytest.mark.parametrize(
    ("commits", "expected"),
    [
        ([], None),
        ([None, None], None),
        ([meta("o-1-100")], "o-1-100"),
        ([meta("o-1-100"), None], "o-1-100"),
        ([meta("o-1-100", 3), meta("o-1-100", 4)], "o-1-100"),
        # most partitions win
        ([meta("o-1-100"), meta("o-1-100"), meta("o-2-200")], "o-1-100"),
        ([meta("o-2-200"), meta("o-2-200"), meta("o-1-100")], "o-2-200"),
        # a tie: the newest submission (by Nimbus's time, not by the id's text)
        ([meta("o-1-100"), meta("o-2-200")], "o-2-200"),
        ([meta("o-2-200"), meta("o-1-100")], "o-2-200"),
        ([meta("o-9-99"), meta("o-10-100")], "o-10-100"),
        # a tie at the same second: the greater id, whatever the order
        ([meta("a-1-100"), meta("b-1-100")], "b-1-100"),
        ([meta("b-1-100"), meta("a-1-100")], "b-1-100"),
    ],
)
def test_the_groups_topology(
    commits: list[SpoutCommitMetadata | None], expected: str | None
) -> None:
    assert topology_of(commits) == expected
