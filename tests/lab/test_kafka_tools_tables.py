"""How the lab reads Kafka's tools' tables (pure): the streams groups' ASSIGNMENTS column of
``kafka-streams-groups.sh --describe --members`` as ``StreamsGroupCommand.getTasksForPrinting``
(kafka-tools 4.4.0) writes it, and the whitespace-aligned tables of the others."""

from __future__ import annotations

import pytest

from lab.kafka_tools import _active_tasks, table

ASSIGNMENTS = [
    # (the column as printed, the active tasks read)
    ("ACTIVE: 0:[1]; 1:[0,2]; TARGET-ACTIVE: 0:[1]; 1:[0,2]; ", (("0", 1), ("1", 0), ("1", 2))),
    ("ACTIVE: 0:[0,1]; 1:[2];", (("0", 0), ("0", 1), ("1", 2))),
    ("ACTIVE:0:[2];STANDBY:1:[0];", (("0", 2),)),
    ("STANDBY: 0:[0]; WARMUP: 1:[1];", ()),
    ("", ()),
    ("ACTIVE: 0:[1]; TARGET-ACTIVE: 0:[1,2];", (("0", 1),)),
    ("TARGET-ACTIVE: 0:[1,2];", ()),
    ("ACTIVE: sub-a:[10, 3];", (("sub-a", 3), ("sub-a", 10))),
]


@pytest.mark.parametrize(("printed", "active"), ASSIGNMENTS)
def test_active_tasks(printed: str, active: tuple[tuple[str, int], ...]) -> None:
    assert _active_tasks(printed) == active


def test_table_rows_under_their_header() -> None:
    text = (
        "\nGROUP  TOPIC  PARTITION  CURRENT-OFFSET\nwc     lines  0          12\nwc  lines  1  -\n"
    )
    assert table(text) == [
        {"GROUP": "wc", "TOPIC": "lines", "PARTITION": "0", "CURRENT-OFFSET": "12"},
        {"GROUP": "wc", "TOPIC": "lines", "PARTITION": "1", "CURRENT-OFFSET": "-"},
    ]
