"""docs/SECURITY.md's kafka-acls.sh lines are the lab's grants: the secured tests prove exactly
those arguments enough (lab/secured_kafka.py, ``monitor_acls``), so the two must not drift."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from lab.secured_kafka import monitor_acls

DOC = Path(__file__).resolve().parents[1] / "docs" / "SECURITY.md"
CONNECTION = ["--bootstrap-server", "BROKER:9093", "--command-config", "admin.properties"]


def documented_runs() -> list[tuple[str, ...]]:
    """Each kafka-acls.sh command of the document's shell blocks, its connection options off."""
    runs = []
    for block in re.findall(r"```sh\n(.*?)```", DOC.read_text(), re.S):
        for command in block.replace("\\\n", " ").splitlines():
            words = shlex.split(command)
            if words and words[0] == "kafka-acls.sh":
                assert words[1:5] == CONNECTION, command
                runs.append(tuple(words[5:]))
    return runs


def test_the_documented_grants_are_the_labs() -> None:
    assert documented_runs() == list(monitor_acls("User:lagwatch"))


def test_the_grants_only_read() -> None:
    operations = {run[run.index("--operation") + 1] for run in monitor_acls("User:x")}
    assert operations == {"Describe", "DescribeConfigs", "Read"}
    reads = [run for run in monitor_acls("User:x") if "Read" in run]
    assert [run[run.index("--topic") + 1] for run in reads] == [
        "__consumer_offsets",
        "__share_group_state",
    ]
    assert all("--group" not in run for run in reads)  # never joins or commits in a group
