"""Parser and validator of the znode a storm-kafka ``KafkaSpout`` commits its offset to.

Each ``PartitionManager`` writes ``<zkRoot>/<spoutId>/partition_<N>`` (DOMAIN.md §1)::

    {"topology": {"id": "...", "name": "..."}, "offset": 1234, "partition": 3,
     "broker": {"host": "kafka-2.example", "port": 9092}, "topic": "orders"}

Whatever sits in ZooKeeper is untrusted input: anyone with write access (or a different
spout implementation sharing the root) can leave garbage there, and one bad node must cost
one error line, not the cycle (SPEC §2.1). So this module never guesses: a value of the
wrong type is rejected, not coerced (``true`` is not the integer 1, ``"12"`` is not 12), and
every rejection carries a reason an operator can act on.

Pure and I/O-free so the ZooKeeper adapter, a test, or an offline evidence dump can share it.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from collectors.records import CommittedOffset, Source

__all__ = ["MAX_ZNODE_BYTES", "BadZnode", "parse_spout_znode"]

# A commit is ~200 bytes. The cap exists so that a runaway writer cannot make the collector
# decode and parse megabytes per node; 1 MiB is also ZooKeeper's own default ceiling
# (jute.maxbuffer), so a node above it can only come from a server configured otherwise.
MAX_ZNODE_BYTES: Final = 1024 * 1024

# Storm builds the name as "partition_" + Integer.toString(id): ASCII digits, no sign, no
# leading zero. Anything else is not a node Storm wrote, and accepting "partition_03" next to
# "partition_3" would yield two commits for one partition.
_PARTITION_NAME: Final = re.compile(r"partition_(0|[1-9][0-9]{0,9})")

# Kafka's own ranges: offsets are int64, partitions int32. A larger number is corruption, and
# would overflow every store downstream.
_MAX_OFFSET: Final = 2**63 - 1
_MAX_PARTITION: Final = 2**31 - 1

_FIELDS: Final = (
    "topology.id",
    "topology.name",
    "offset",
    "partition",
    "topic",
    "broker.host",
    "broker.port",
)
_INT_FIELDS: Final = frozenset({"offset", "partition", "broker.port"})


class BadZnode(ValueError):
    """A znode whose content is not what its writer should have written; ``where`` is its path.

    Raised for spout commits here and for ZooKeeper-consumer nodes by the adapter.
    """

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason


def parse_spout_znode(
    path: str, data: bytes | None, stat_mtime_ms: int, stat_version: int
) -> CommittedOffset:
    """Turn one spout znode into the commit it records, or raise :class:`BadZnode`.

    ``stat_mtime_ms`` becomes the commit time: Storm rewrites the node only when the offset
    moves, so mtime is the time of the last progress, not of the last heartbeat.
    ``stat_version`` counts the writes, hence the commits, since the node was created.
    """
    root_and_spout, _, name = path.rpartition("/")
    spout_id = root_and_spout.rpartition("/")[2]
    if not spout_id:
        raise BadZnode(path, "path is not <zkRoot>/<spoutId>/partition_<N>")
    name_match = _PARTITION_NAME.fullmatch(name)
    if name_match is None:
        raise BadZnode(path, f"node name {name!r} is not partition_<N>")
    if data is None or not data:
        raise BadZnode(path, "node has no data")
    if len(data) > MAX_ZNODE_BYTES:
        # Checked before decoding so a huge node costs a len(), not a parse.
        raise BadZnode(path, f"data is {len(data)} bytes, over the {MAX_ZNODE_BYTES}-byte limit")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadZnode(path, f"not UTF-8: byte {exc.start}: {exc.reason}") from None
    try:
        # json.loads on bytes would sniff UTF-16/32 too; decoding first keeps the format
        # what Storm writes (UTF-8) and nothing else.
        obj = json.loads(text)
    except ValueError as exc:
        raise BadZnode(path, f"not JSON: {exc}") from None
    except RecursionError:
        raise BadZnode(path, "not JSON: nested too deeply") from None

    # Fast path: a well-formed node passes these lookups and checks without building
    # anything; only a bad one pays for the detailed diagnosis.
    try:
        topology = obj["topology"]
        broker = obj["broker"]
        topology_id = topology["id"]
        topology_name = topology["name"]
        offset = obj["offset"]
        partition = obj["partition"]
        topic = obj["topic"]
        host = broker["host"]
        port = broker["port"]
    except (KeyError, TypeError, IndexError):
        raise BadZnode(path, _diagnose(obj)) from None
    if not (
        type(topology) is dict
        and type(broker) is dict
        and type(topology_id) is str
        and type(topology_name) is str
        and type(topic) is str
        and type(host) is str
        and type(offset) is int
        and type(partition) is int
        and type(port) is int
        and topology_id
        and topology_name
        and topic
        and host
        and 0 <= offset <= _MAX_OFFSET
        and 0 <= partition <= _MAX_PARTITION
        and 0 < port < 65536
    ):
        raise BadZnode(path, _diagnose(obj))
    if partition != int(name_match.group(1)):
        raise BadZnode(path, f"field partition={partition} disagrees with node name {name!r}")
    if "\\u" in text:  # only a JSON escape can smuggle a lone surrogate past the decode
        fields = (("topology.id", topology_id), ("topology.name", topology_name),
                  ("topic", topic), ("broker.host", host))  # fmt: skip
        for field, value in fields:
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise BadZnode(
                    path, f"field {field} holds a lone surrogate escape: not text any store keeps"
                ) from None
    return CommittedOffset(
        source=Source.STORM,
        group=spout_id,
        topic=topic,
        partition=partition,
        offset=offset,
        commit_time_ms=stat_mtime_ms,
        commit_version=stat_version,
        owner=topology_name,
        topology_id=topology_id,
        broker=f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
        where=path,
    )


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }.get(type(value), type(value).__name__)


def _diagnose(obj: Any) -> str:
    """Say everything that is wrong with a decoded node, so one look at the error suffices."""
    if type(obj) is not dict:
        return f"JSON top level is {_type_name(obj)}, not an object"
    problems: list[str] = []
    missing: list[str] = []
    for container in ("topology", "broker"):
        if container in obj and type(obj[container]) is not dict:
            problems.append(
                f"field {container} must be an object, got {_type_name(obj[container])}"
            )
    for dotted in _FIELDS:
        head, _, tail = dotted.partition(".")
        if head not in obj:
            missing.append(dotted)
            continue
        value = obj[head]
        if tail:
            if type(value) is not dict:
                continue  # already reported as "must be an object"
            if tail not in value:
                missing.append(dotted)
                continue
            value = value[tail]
        if dotted in _INT_FIELDS:
            if type(value) is not int:
                problems.append(f"field {dotted} must be an integer, got {_type_name(value)}")
            elif dotted == "broker.port" and not 0 < value < 65536:
                problems.append(f"field broker.port={value} is not a TCP port (1-65535)")
            elif value < 0:
                problems.append(f"field {dotted}={value} is negative")
            elif value > (_MAX_OFFSET if dotted == "offset" else _MAX_PARTITION):
                kind = "int64" if dotted == "offset" else "int32"
                problems.append(f"field {dotted}={value} is beyond Kafka's {kind} range")
        elif type(value) is not str:
            problems.append(f"field {dotted} must be a string, got {_type_name(value)}")
        elif not value:
            problems.append(f"field {dotted} is empty")
    if missing:
        label = "missing fields" if len(missing) > 1 else "missing field"
        problems.insert(0, f"{label} {', '.join(missing)}")
    return "; ".join(problems) if problems else "invalid spout commit"
