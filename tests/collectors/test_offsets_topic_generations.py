"""A classic group's generation from ``__consumer_offsets`` only once the reader has read the
topic to its end: a prefix of the coordinator's log holds old generations, which a rebalance
tracker rebuilt from another collector's stored groups would read as the group re-created."""

from __future__ import annotations

import dataclasses

from collectors.consumer_offsets.reader import ReaderOutcome
from collectors.consumer_offsets.state import OffsetsTopicState
from collectors.kafka.cycle import Cycle
from collectors.kafka.offsets_topic import apply_offsets_topic
from collectors.records import GroupSnapshot, Source
from tests.collectors.test_offsets_topic_state import group_key, group_value, member

NOW = 1_700_000_000_000
OUTCOME = ReaderOutcome(
    reachable=True, readable=True, caught_up=False, records_read=1, records_decoded=1,
    records_behind=5, skipped={}, bytes_read=100, partitions=1, errors=(), started_ms=NOW,
    finished_ms=NOW,
)  # fmt: skip


def generation_after(state: OffsetsTopicState, caught_up: bool) -> int | None:
    cycle = Cycle(NOW, 5.0)
    cycle.result.groups.append(GroupSnapshot(Source.KAFKA, "g", "Stable", protocol_type="classic"))
    apply_offsets_topic(dataclasses.replace(OUTCOME, caught_up=caught_up), state, cycle)
    [group] = cycle.result.groups
    return group.generation


def test_a_generation_is_taken_once_the_reader_has_read_to_the_end() -> None:
    state = OffsetsTopicState()
    state.apply(0, 0, NOW, group_key("g"), group_value(7, [member("m-1")]))
    assert generation_after(state, caught_up=False) is None  # generation 10 may follow
    state.apply(0, 1, NOW + 1, group_key("g"), group_value(10, [member("m-1")]))
    assert generation_after(state, caught_up=True) == 10
    # Falling behind later (a burst of commits) does not make the picture a prefix again.
    assert generation_after(state, caught_up=False) == 10
