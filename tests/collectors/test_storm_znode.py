"""The spout-commit parser: every way a znode can be right, and every way it can be wrong."""

from __future__ import annotations

import json
from typing import Any

import pytest

from collectors.records import CommittedOffset, Source
from collectors.storm_znode import MAX_ZNODE_BYTES, BadZnode, parse_spout_znode

PATH = "/kafka-spout/orders-spout/partition_3"
MTIME = 1_700_000_123_456
VERSION = 7


def commit(**overrides: Any) -> dict[str, Any]:
    """A valid node as storm-kafka writes it, with fields replaced (``None`` deletes)."""
    node: dict[str, Any] = {
        "topology": {"id": "orders-topo-12-1700000000", "name": "orders-topo"},
        "offset": 1234,
        "partition": 3,
        "broker": {"host": "kafka-2.example", "port": 9092},
        "topic": "orders",
    }
    for dotted, value in overrides.items():
        *parents, leaf = dotted.split("__")
        target = node
        for parent in parents:
            target = target[parent]
        if value is None:
            del target[leaf]
        else:
            target[leaf] = value
    return node


def encode(node: Any) -> bytes:
    return json.dumps(node, ensure_ascii=False).encode("utf-8")


def parse(data: bytes | None, path: str = PATH) -> CommittedOffset:
    return parse_spout_znode(path, data, MTIME, VERSION)


def reason_of(data: bytes | None, path: str = PATH) -> str:
    with pytest.raises(BadZnode) as caught:
        parse(data, path)
    assert caught.value.where == path
    assert str(caught.value) == f"{path}: {caught.value.reason}"
    return caught.value.reason


# --- valid nodes -------------------------------------------------------------------------


def test_a_valid_node_becomes_the_exact_record() -> None:
    assert parse(encode(commit())) == CommittedOffset(
        source=Source.STORM,
        group="orders-spout",
        topic="orders",
        partition=3,
        offset=1234,
        commit_time_ms=MTIME,
        commit_version=VERSION,
        owner="orders-topo",
        topology_id="orders-topo-12-1700000000",
        broker="kafka-2.example:9092",
        where=PATH,
    )


@pytest.mark.parametrize(
    ("path", "data", "expected"),
    [
        # non-ASCII spout id, topic and topology name are legal names
        (
            "/storm/spöut-заказы-κ/partition_0",
            encode(commit(partition=0, topic="заказы.événements", topology__name="топология")),
            {"group": "spöut-заказы-κ", "topic": "заказы.événements", "owner": "топология"},
        ),
        # escaped non-ASCII decodes to the same names
        (
            "/storm/s/partition_3",
            json.dumps(commit(topic="naïve")).encode("ascii"),
            {"topic": "naïve", "group": "s"},
        ),
        # zkRoot "" gives /<spoutId>/partition_<N>
        ("/orders-spout/partition_3", encode(commit()), {"group": "orders-spout"}),
        # deep roots
        ("/a/b/c/spout/partition_3", encode(commit()), {"group": "spout"}),
        # boundaries of the ranges
        ("/r/s/partition_0", encode(commit(partition=0, offset=0)), {"partition": 0, "offset": 0}),
        (PATH, encode(commit(offset=2**63 - 1)), {"offset": 2**63 - 1}),
        (
            "/r/s/partition_2147483647",
            encode(commit(partition=2**31 - 1)),
            {"partition": 2**31 - 1},
        ),
        (PATH, encode(commit(broker__port=1)), {"broker": "kafka-2.example:1"}),
        (PATH, encode(commit(broker__port=65535)), {"broker": "kafka-2.example:65535"}),
        # an IPv6 broker keeps host and port apart
        (PATH, encode(commit(broker__host="::1")), {"broker": "[::1]:9092"}),
        # unknown extra fields are tolerated (other storm-kafka versions add some)
        (
            PATH,
            encode({**commit(), "extra": [1, 2], "topology": {**commit()["topology"], "x": 1}}),
            {},
        ),
        # pretty-printed, with surrounding whitespace
        (PATH, b"\n  " + json.dumps(commit(), indent=2).encode() + b"\n", {"offset": 1234}),
    ],
)
def test_valid_variants(path: str, data: bytes, expected: dict[str, Any]) -> None:
    record = parse(data, path)
    for name, value in expected.items():
        assert getattr(record, name) == value, name
    assert record.where == path
    assert (record.commit_time_ms, record.commit_version) == (MTIME, VERSION)


def test_a_node_exactly_at_the_size_limit_is_accepted() -> None:
    body = encode(commit())
    data = body + b" " * (MAX_ZNODE_BYTES - len(body))
    assert len(data) == MAX_ZNODE_BYTES
    assert parse(data).offset == 1234


# --- bad encodings and bad JSON -----------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (None, "node has no data"),
        (b"", "node has no data"),
        (b"\xff\xfe\x00", "not UTF-8"),
        ('{"topic": "café"}'.encode("latin-1"), "not UTF-8"),
        # json.loads(bytes) would accept UTF-16; Storm never writes it
        (json.dumps(commit()).encode("utf-16"), "not UTF-8"),
        (b"\xef\xbb\xbf" + encode(commit()), "not JSON"),  # UTF-8 BOM
        (b"offset=1234", "not JSON"),
        (b"{", "not JSON"),
        (encode(commit())[:-1], "not JSON"),
        (encode(commit()) + b"}", "not JSON"),
        (b"{'offset': 1}", "not JSON"),
        (b"[" * 100_000, "not JSON: nested too deeply"),
        (b"[]", "JSON top level is array, not an object"),
        (b'"orders"', "JSON top level is string, not an object"),
        (b"1234", "JSON top level is integer, not an object"),
        (b"null", "JSON top level is null, not an object"),
        (b"true", "JSON top level is boolean, not an object"),
        (b"NaN", "JSON top level is number, not an object"),
    ],
)
def test_not_a_json_object(data: bytes | None, expected: str) -> None:
    assert reason_of(data).startswith(expected)


def test_size_is_checked_before_decoding() -> None:
    # Invalid UTF-8 and over the limit: the size is what gets reported.
    data = b"\xff" * (MAX_ZNODE_BYTES + 1)
    assert reason_of(data) == (
        f"data is {MAX_ZNODE_BYTES + 1} bytes, over the {MAX_ZNODE_BYTES}-byte limit"
    )


def test_a_valid_but_oversized_node_is_refused() -> None:
    body = encode(commit())
    assert "over the" in reason_of(body + b" " * (MAX_ZNODE_BYTES + 1 - len(body)))


# --- missing fields, wrong types, bad values ----------------------------------------------


@pytest.mark.parametrize(
    "field",
    [
        "topology__id",
        "topology__name",
        "offset",
        "partition",
        "topic",
        "broker__host",
        "broker__port",
    ],
)
def test_each_missing_field_is_named(field: str) -> None:
    assert reason_of(encode(commit(**{field: None}))) == f"missing field {field.replace('__', '.')}"


def test_all_missing_fields_are_named_at_once() -> None:
    reason = reason_of(encode(commit(topic=None, broker=None, offset=None)))
    assert reason == "missing fields offset, topic, broker.host, broker.port"
    assert reason_of(b"{}") == (
        "missing fields topology.id, topology.name, offset, partition, topic, broker.host, "
        "broker.port"
    )


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        # bool is an int in Python, never in a commit
        ({"offset": True}, "field offset must be an integer, got boolean"),
        ({"offset": False}, "field offset must be an integer, got boolean"),
        ({"partition": True}, "field partition must be an integer, got boolean"),
        ({"broker__port": True}, "field broker.port must be an integer, got boolean"),
        ({"offset": "1234"}, "field offset must be an integer, got string"),
        ({"offset": 1234.0}, "field offset must be an integer, got number"),
        ({"offset": [1234]}, "field offset must be an integer, got array"),
        ({"offset": {"v": 1}}, "field offset must be an integer, got object"),
        ({"partition": "3"}, "field partition must be an integer, got string"),
        ({"broker__port": "9092"}, "field broker.port must be an integer, got string"),
        ({"topic": 5}, "field topic must be a string, got integer"),
        ({"topic": ["orders"]}, "field topic must be a string, got array"),
        ({"topology__id": 12}, "field topology.id must be a string, got integer"),
        ({"topology__name": False}, "field topology.name must be a string, got boolean"),
        ({"broker__host": ["a"]}, "field broker.host must be a string, got array"),
        ({"topology": "orders-topo"}, "field topology must be an object, got string"),
        ({"topology": ["id", "name"]}, "field topology must be an object, got array"),
        ({"broker": "kafka-2:9092"}, "field broker must be an object, got string"),
        ({"broker": 9092}, "field broker must be an object, got integer"),
        # empty names
        ({"topic": ""}, "field topic is empty"),
        ({"topology__id": ""}, "field topology.id is empty"),
        ({"topology__name": ""}, "field topology.name is empty"),
        ({"broker__host": ""}, "field broker.host is empty"),
        # values out of range
        ({"offset": -1}, "field offset=-1 is negative"),
        ({"offset": -9_000_000_000}, "field offset=-9000000000 is negative"),
        ({"partition": -3}, "field partition=-3 is negative"),
        ({"offset": 2**63}, f"field offset={2**63} is beyond Kafka's int64 range"),
        ({"partition": 2**31}, f"field partition={2**31} is beyond Kafka's int32 range"),
        ({"broker__port": 0}, "field broker.port=0 is not a TCP port (1-65535)"),
        ({"broker__port": 65536}, "field broker.port=65536 is not a TCP port (1-65535)"),
        ({"broker__port": -1}, "field broker.port=-1 is not a TCP port (1-65535)"),
    ],
)
def test_wrong_types_and_values(overrides: dict[str, Any], expected: str) -> None:
    assert reason_of(encode(commit(**overrides))) == expected


def test_null_and_non_finite_numbers_are_wrong_types() -> None:
    assert reason_of(encode(commit(offset=None))[:-1] + b', "offset": null}') == (
        "field offset must be an integer, got null"
    )
    nan_node = encode(commit()).replace(b'"offset": 1234', b'"offset": NaN')
    assert reason_of(nan_node) == "field offset must be an integer, got number"
    inf_node = encode(commit()).replace(b'"offset": 1234', b'"offset": -Infinity')
    assert reason_of(inf_node) == "field offset must be an integer, got number"


def test_several_problems_are_reported_together() -> None:
    reason = reason_of(encode(commit(topic=None, offset=True, broker__port=0)))
    assert reason == (
        "missing field topic; field offset must be an integer, got boolean; "
        "field broker.port=0 is not a TCP port (1-65535)"
    )


# --- the node's name and path -------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/r/s/partition_4", "field partition=3 disagrees with node name 'partition_4'"),
        ("/r/s/partition_30", "field partition=3 disagrees with node name 'partition_30'"),
        ("/r/s/partition_x", "node name 'partition_x' is not partition_<N>"),
        ("/r/s/partition_", "node name 'partition_' is not partition_<N>"),
        ("/r/s/partition_03", "node name 'partition_03' is not partition_<N>"),
        ("/r/s/partition_-3", "node name 'partition_-3' is not partition_<N>"),
        ("/r/s/partition_+3", "node name 'partition_+3' is not partition_<N>"),
        ("/r/s/partition_٣", "node name 'partition_٣' is not partition_<N>"),  # Arabic-Indic 3
        ("/r/s/partition_3 ", "node name 'partition_3 ' is not partition_<N>"),
        ("/r/s/partition_12345678901", "node name 'partition_12345678901' is not partition_<N>"),
        ("/r/s/Partition_3", "node name 'Partition_3' is not partition_<N>"),
        ("/r/s/3", "node name '3' is not partition_<N>"),
        ("/r/s/user", "node name 'user' is not partition_<N>"),
        ("/partition_3", "path is not <zkRoot>/<spoutId>/partition_<N>"),
        ("partition_3", "path is not <zkRoot>/<spoutId>/partition_<N>"),
    ],
)
def test_node_name_must_be_the_partition_it_holds(path: str, expected: str) -> None:
    assert reason_of(encode(commit()), path) == expected


def test_the_name_is_checked_before_the_data() -> None:
    # A node that is not a partition node is reported as such, whatever it holds.
    assert reason_of(b"\xff" * 10, "/r/s/owner") == "node name 'owner' is not partition_<N>"


@pytest.mark.parametrize("field", ["topic", "topology.name", "broker.host"])
def test_a_lone_surrogate_escape_is_refused_naming_its_field(field: str) -> None:
    """Valid JSON, valid UTF-8 bytes, yet not text: ``\\ud800`` decodes to a lone surrogate
    no database keeps (found by the fuzz run)."""
    doc = {"topology": {"id": "t-1", "name": "t"}, "offset": 5, "partition": 0,
           "broker": {"host": "h", "port": 9092}, "topic": "orders"}  # fmt: skip
    if field == "topic":
        doc["topic"] = "\ud800"
    elif field == "topology.name":
        doc["topology"]["name"] = "x\udfff"
    else:
        doc["broker"]["host"] = "\udc00h"
    data = json.dumps(doc).encode()  # ensure_ascii: the surrogate travels as an escape
    with pytest.raises(BadZnode, match=f"field {field} holds a lone surrogate"):
        parse_spout_znode("/spouts/s/partition_0", data, 1, 1)
    # An escape of a real character is fine.
    doc.update(
        topic="caf\u00e9", broker={"host": "h", "port": 9092}, topology={"id": "t", "name": "t"}
    )
    assert (
        parse_spout_znode("/spouts/s/partition_0", json.dumps(doc).encode(), 1, 1).topic == "café"
    )
