"""Kafka's own command-line tools, run against the lab broker, and their tables read back.

The lab's tests compare what Lagwatch reads over the wire with what Kafka's tools print at
the same moment: ``kafka-share-groups.sh`` is ``ShareGroupCommand`` (kafka-tools) and
``kafka-streams-groups.sh`` is ``StreamsGroupCommand``, run here
as the script runs it (the broker's jars and the tools jar on the class path), so no Kafka
distribution is needed. Not part of the product.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence

from lab.kafka_dist import broker_libs, installed_tools

__all__ = [
    "run_tool",
    "share_group_members",
    "share_group_offsets",
    "streams_group_members",
    "streams_group_offsets",
    "streams_group_state",
    "table",
]

SHARE_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
# kafka-streams-groups.sh (KIP-1071's streams groups).
STREAMS_GROUP_COMMAND = "org.apache.kafka.tools.streams.StreamsGroupCommand"


def run_tool(main_class: str, args: Sequence[str], timeout_s: float = 90) -> str:
    """The tool's standard output; a failed run raises with its standard error."""
    from lab.services import java

    class_path = f"{broker_libs()}/*:{installed_tools()}"
    done = subprocess.run(
        [java(), "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", class_path, main_class, *args],
        capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{main_class} {' '.join(args)}: exit {done.returncode}: {done.stderr}")
    return done.stdout


def table(text: str, first_column: str = "GROUP") -> list[dict[str, str]]:
    """Rows of a tool's whitespace-aligned table (the line starting with ``first_column`` is
    its header); a value Kafka leaves unknown is "-"."""
    rows: list[dict[str, str]] = []
    header: list[str] | None = None
    for line in text.splitlines():
        cells = line.split()
        if not cells:
            continue
        if cells[0] == first_column:
            header = cells
        elif header is not None and len(cells) == len(header):
            rows.append(dict(zip(header, cells, strict=True)))
    return rows


def _number(cell: str) -> int | None:
    return None if cell == "-" else int(cell)


def share_group_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], tuple]:
    """``kafka-share-groups.sh --describe --offsets``: (topic, partition) -> (start offset,
    lag), None where the tool prints "-"."""
    out = run_tool(
        SHARE_GROUP_COMMAND,
        ["--bootstrap-server", bootstrap, "--describe", "--offsets", "--group", group],
    )
    return {
        (row["TOPIC"], int(row["PARTITION"])): (
            _number(row["START-OFFSET"]),
            _number(row["LAG"]),
        )
        for row in table(out)
    }


def share_group_members(bootstrap: str, group: str) -> dict[str, dict]:
    """``kafka-share-groups.sh --describe --members``: member id -> host, client id and the
    sorted (topic, partition) pairs of its assignment ("jobs:0,1,2;mail:0" as printed)."""
    out = run_tool(
        SHARE_GROUP_COMMAND,
        ["--bootstrap-server", bootstrap, "--describe", "--members", "--group", group],
    )
    members = {}
    for row in table(out):
        pairs = []
        for part in row["ASSIGNMENT"].split(";"):
            if ":" in part:
                topic, partitions = part.rsplit(":", 1)
                pairs.extend((topic, int(p)) for p in partitions.split(",") if p)
        members[row["CONSUMER-ID"]] = {
            "host": row["HOST"],
            "client_id": row["CLIENT-ID"],
            "assignment": tuple(sorted(pairs)),
        }
    return members


def _streams_tool(bootstrap: str, group: str, what: str) -> str:
    return run_tool(
        STREAMS_GROUP_COMMAND,
        ["--bootstrap-server", bootstrap, "--describe", what, "--verbose", "--group", group],
    )


def streams_group_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], tuple]:
    """``kafka-streams-groups.sh --describe --offsets --verbose``: (topic, partition) ->
    (current offset, log end offset, lag), None where the tool prints "-". Without
    ``--verbose`` the tool prints the lag only."""
    return {
        (row["TOPIC"], int(row["PARTITION"])): (
            _number(row["CURRENT-OFFSET"]),
            _number(row["LOG-END-OFFSET"]),
            _number(row["OFFSET-LAG"]),
        )
        for row in table(_streams_tool(bootstrap, group, "--offsets"))
    }


def streams_group_state(bootstrap: str, group: str) -> dict[str, object]:
    """``kafka-streams-groups.sh --describe --state --verbose``: the coordinator ("host:port"),
    assignor, state, group epoch, target assignment epoch and member count."""
    (row,) = table(_streams_tool(bootstrap, group, "--state"))
    return {
        "coordinator": row["COORDINATOR"],
        "assignor": row["ASSIGNOR"],
        "state": row["STATE"],
        "group_epoch": int(row["GROUP-EPOCH"]),
        "assignment_epoch": int(row["TARGET-ASSIGNMENT-EPOCH"]),
        "members": int(row["#MEMBERS"]),
    }


_TASKS = re.compile(r"([^\s:;\[\]]+):\[([\d,\s]*)\]")


def _active_tasks(assignments: str) -> tuple[tuple[str, int], ...]:
    """The (subtopology, partition) pairs after "ACTIVE:" in the ASSIGNMENTS column, up to the
    next task kind ("ACTIVE: 0:[1]; 1:[0,2]; TARGET-ACTIVE: ..." as printed)."""
    found = re.search(r"(?<!-)ACTIVE:(.*?)(?:STANDBY:|WARMUP:|TARGET-|$)", assignments)
    if found is None:
        return ()
    return tuple(
        sorted(
            (sub, int(p))
            for sub, parts in _TASKS.findall(found.group(1))
            for p in parts.replace(" ", "").split(",")
            if p
        )
    )


# --describe --members --verbose: GROUP TARGET-ASSIGNMENT-EPOCH TOPOLOGY-EPOCH MEMBER
# MEMBER-PROTOCOL MEMBER-EPOCH PROCESS CLIENT-ID, then ASSIGNMENTS (with spaces in it).
_MEMBER_COLUMNS = 8


def streams_group_members(bootstrap: str, group: str) -> dict[str, dict]:
    """``kafka-streams-groups.sh --describe --members --verbose``: member id -> its member
    epoch, process id, client id and active tasks (sorted (subtopology, partition) pairs)."""
    members = {}
    header = None
    for line in _streams_tool(bootstrap, group, "--members").splitlines():
        cells = line.split(maxsplit=_MEMBER_COLUMNS)
        if cells[:1] == ["GROUP"]:
            header = cells
        elif header is not None and len(cells) >= _MEMBER_COLUMNS:
            row = dict(zip(header, cells, strict=False))
            members[row["MEMBER"]] = {
                "member_epoch": int(row["MEMBER-EPOCH"]),
                "process_id": row["PROCESS"],
                "client_id": row["CLIENT-ID"],
                "active": _active_tasks(row.get("ASSIGNMENTS", "")),
            }
    return members
