"""A topic the brokers hide from the principal (no Describe permission: OffsetFetch of all
topics and the metadata leave it out, without an error) is a warning naming the group and the
topic, because ``__consumer_offsets`` holds the group's commits of it; a topic the metadata
lists, or whose commits OffsetFetch answered (a deleted topic), or a group whose OffsetFetch
failed (it has its own warning) is not. The warning waits for a second caught-up cycle that
finds the topic hidden: a topic deleted a moment ago looks hidden until the tombstones of its
offsets are read."""

from __future__ import annotations

import dataclasses

import pytest

from collectors.consumer_offsets.state import OffsetsTopicState
from collectors.kafka.cycle import Cycle
from collectors.kafka.offsets_topic import apply_offsets_topic
from collectors.records import CommittedOffset, GroupSnapshot, Source
from tests.collectors.test_offsets_topic_generations import NOW, OUTCOME
from tests.collectors.test_offsets_topic_state import offset_key, offset_value

# (group, topic) commits in __consumer_offsets; the cycle's groups, metadata, fetched commits.
CASES = [
    # hidden: committed, not in the metadata, not fetched
    ([("g", "secret")], ["g"], {}, [], ["group g topic secret"]),
    # listed by the metadata: the principal may describe it
    ([("g", "t")], ["g"], {"t": 1}, [("g", "t")], []),
    # in the metadata, committed but not fetched (a commit made since): not hidden
    ([("g", "t")], ["g"], {"t": 1}, [], []),
    # deleted: not in the metadata, but OffsetFetch still answers its commits
    ([("g", "gone")], ["g"], {}, [("g", "gone")], []),
    # a group the cycle did not collect (not listed, or not described)
    ([("other", "secret")], ["g"], {}, [], []),
    # several groups and topics, one warning per (group, topic), in order
    ([("b", "s2"), ("a", "s1"), ("a", "s1"), ("a", "t")], ["a", "b"], {"t": 1}, [("a", "t")],
     ["group a topic s1", "group b topic s2"]),
]  # fmt: skip


@pytest.mark.parametrize(("committed", "groups", "metadata", "fetched", "warned"), CASES)
def test_hidden_topics(
    committed: list[tuple[str, str]],
    groups: list[str],
    metadata: dict[str, int],
    fetched: list[tuple[str, str]],
    warned: list[str],
) -> None:
    state = OffsetsTopicState()
    for i, (group, topic) in enumerate(committed):
        state.apply(0, i, NOW, offset_key(group, topic, i % 2), offset_value(offset=5))

    def warnings() -> list[str]:
        cycle = Cycle(NOW, 5.0)
        cycle.result.groups.extend(GroupSnapshot(Source.KAFKA, g, "Stable") for g in groups)
        cycle.result.partition_counts.update(metadata)
        cycle.result.commits.extend(
            CommittedOffset(Source.KAFKA, g, t, 0, 5, where=f"group {g}") for g, t in fetched
        )
        apply_offsets_topic(dataclasses.replace(OUTCOME, caught_up=True), state, cycle)
        return [e.where for e in cycle.result.errors if "hides the topic" in e.error]

    assert warnings() == []  # seen once: maybe a topic deleted a moment ago
    assert warnings() == warned


def test_a_topic_deleted_meanwhile_is_never_warned_about() -> None:
    """Hidden at one caught-up cycle, then its offsets' tombstones read: no warning."""
    state = OffsetsTopicState()
    state.apply(0, 0, NOW, offset_key("g", "gone"), offset_value(offset=5))
    caught_up = dataclasses.replace(OUTCOME, caught_up=True)
    for step in ("hidden", "tombstone"):
        if step == "tombstone":
            state.apply(0, 1, NOW, offset_key("g", "gone"), None)
        cycle = Cycle(NOW, 5.0)
        cycle.result.groups.append(GroupSnapshot(Source.KAFKA, "g", "Stable"))
        apply_offsets_topic(caught_up, state, cycle)
        assert not [e for e in cycle.result.errors if "hides the topic" in e.error], step


def test_not_before_the_reader_has_read_to_the_end_nor_for_a_failed_group() -> None:
    state = OffsetsTopicState()
    state.apply(0, 0, NOW, offset_key("g", "secret"), offset_value())
    cycle = Cycle(NOW, 5.0)
    cycle.result.groups.append(GroupSnapshot(Source.KAFKA, "g", "Stable"))
    apply_offsets_topic(OUTCOME, state, cycle)  # not caught up: the picture is a prefix
    assert not [e for e in cycle.result.errors if "hides" in e.error]
    cycle = Cycle(NOW, 5.0)
    cycle.result.groups.append(GroupSnapshot(Source.KAFKA, "g", "Stable"))
    cycle.error("group g", "OffsetFetch: GROUP_AUTHORIZATION_FAILED")
    apply_offsets_topic(dataclasses.replace(OUTCOME, caught_up=True), state, cycle)
    assert [e.where for e in cycle.result.errors] == ["group g"]
