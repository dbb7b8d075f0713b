"""The reader's fold (``collectors/consumer_offsets/fold.py``): a poll's messages folded into
the state keeping only the last commit of each known key, against the same messages applied
record by record (``OffsetsTopicState.apply``), which the rest of the state's tests pin down.

Messages are confluent-kafka's own ``Message`` objects, as the client hands them out.
"""

from __future__ import annotations

import random

import pytest
from confluent_kafka import KafkaError, Message

from collectors.consumer_offsets import MALFORMED, TRUNCATED
from collectors.consumer_offsets.fold import PollFold
from collectors.consumer_offsets.picture import OffsetDeleted
from collectors.consumer_offsets.state import OffsetsTopicState
from tests.collectors.test_offsets_topic_state import (
    KAFKA_44_VALUES,
    group_key,
    group_value,
    kip848_key,
    member,
    offset_key,
    offset_value,
)

TOPIC = "__consumer_offsets"


def message(partition: int, offset: int, key: bytes | None, value: bytes | None) -> Message:
    return Message(
        topic=TOPIC, partition=partition, offset=offset, key=key, value=value,
        timestamp=(1, 10_000 + offset), error=None,
    )  # fmt: skip


def eof(partition: int, offset: int) -> Message:
    return Message(
        topic=TOPIC, partition=partition, offset=offset, error=KafkaError(KafkaError._PARTITION_EOF)
    )


def one_by_one(
    messages: list[Message], state: OffsetsTopicState | None = None
) -> OffsetsTopicState:
    state = state or OffsetsTopicState()
    for m in messages:
        if m.error() is None:
            state.apply(m.partition(), m.offset(), m.timestamp()[1], m.key(), m.value())
    return state


def folded(
    batches: list[list[Message]], state: OffsetsTopicState | None = None
) -> tuple[OffsetsTopicState, int, list[Message]]:
    state = state or OffsetsTopicState()
    fold = PollFold(state)
    read, errors = 0, []
    for batch in batches:
        n, errs = fold.batch(batch)
        read += n
        errors += errs
    fold.finish()
    return state, read, errors


def picture(state: OffsetsTopicState) -> tuple:
    return (
        dict(state.commits),
        dict(state.groups),
        dict(state.deleted_groups),
        dict(state.deleted_offsets),
        dict(state.positions),
        state.bytes_read,
        state.records_stale,
        dict(state.skipped),
        dict(state.skipped_key_versions),
        state.drain_events(),
    )


def counts(state: OffsetsTopicState) -> int:
    return state.records_decoded + state.records_superseded


def test_superseded_commits_are_not_decoded_and_the_last_wins() -> None:
    key = offset_key("g", "t", 3)
    messages = [message(0, o, key, offset_value(4, offset=o)) for o in range(10)]
    state, read, errors = folded([messages[:4], messages[4:]])
    assert read == 10 and errors == []
    assert state.commits[("g", "t", 3)].offset == 9
    assert state.commits[("g", "t", 3)].log_offset == 9
    assert state.commits[("g", "t", 3)].record_timestamp_ms == 10_009
    # The first commit of the key is decoded (it makes the key known), the last too.
    assert state.records_decoded == 2 and state.records_superseded == 8
    assert picture(state) == picture(one_by_one(messages))


def test_a_tombstone_sees_the_commit_before_it_then_a_new_commit_starts_over() -> None:
    key = offset_key("g", "t", 0)
    messages = [
        message(0, 0, key, offset_value(4, offset=5)),
        message(0, 1, key, offset_value(4, offset=6)),
        message(0, 2, key, None),  # offsets deleted
        message(0, 3, key, offset_value(4, offset=1)),
        message(0, 4, key, offset_value(4, offset=2)),
    ]
    state, _, _ = folded([messages])
    events = state.drain_events()
    assert [type(e) for e in events] == [OffsetDeleted]
    assert events[0].offset_before == 6 and events[0].log_offset == 2
    assert state.commits[("g", "t", 0)].offset == 2
    assert ("g", "t", 0) not in state.deleted_offsets
    assert picture(folded([messages])[0]) == picture(one_by_one(messages))


@pytest.mark.parametrize(
    ("bad", "kind"),
    [
        (b"", TRUNCATED),  # empty, non-null: not a tombstone in Kafka
        (offset_value(4, offset=9)[:-3], TRUNCATED),
        (offset_value(4, offset=9) + b"\x00", MALFORMED),  # trailing bytes
        (b"\x00\x63" + bytes(30), "unknown_version"),
    ],
)
def test_a_malformed_last_commit_is_counted_with_its_error_and_loses_nothing(
    bad: bytes, kind: str
) -> None:
    key, other = offset_key("g", "t", 0), offset_key("g", "t", 1)
    messages = [
        message(0, 0, key, offset_value(4, offset=1)),
        message(0, 1, other, offset_value(4, offset=1)),
        message(0, 2, key, offset_value(4, offset=2)),
        message(0, 3, key, bad),
        message(0, 4, other, offset_value(4, offset=2)),
    ]
    state, read, _ = folded([messages])
    assert read == 5
    assert state.skipped == {kind: 1} and state.last_error
    assert state.commits[("g", "t", 0)].offset == 2  # the commit before it stands
    assert state.commits[("g", "t", 1)].offset == 2
    assert state.positions[0] == 5
    assert picture(state) == picture(one_by_one(messages))


def test_a_malformed_commit_of_another_length_is_decoded_and_counted_even_if_replaced() -> None:
    key = offset_key("g", "t", 0)
    messages = [
        message(0, 0, key, offset_value(4, offset=1)),
        message(0, 1, key, offset_value(4, offset=2)[:-2]),
        message(0, 2, key, offset_value(4, offset=3)),
    ]
    state, read, _ = folded([messages])
    assert read == 3 and state.records_skipped == 1 and state.records_superseded == 0
    assert picture(state) == picture(one_by_one(messages))


def test_a_malformed_commit_of_the_same_length_replaced_within_the_poll_keeps_the_commits() -> None:
    """Record by record it is skipped and counted; folded it is never decoded (fold.py says
    so). Either way the state keeps the later commit."""
    key = offset_key("g", "t", 0)
    null_metadata = bytearray(offset_value(4, offset=2))
    null_metadata[14] = 0  # a null where Kafka's schema allows none
    messages = [
        message(0, 0, key, offset_value(4, offset=1)),
        message(0, 1, key, bytes(null_metadata)),
        message(0, 2, key, offset_value(4, offset=3)),
    ]
    state, read, _ = folded([messages])
    alone = one_by_one(messages)
    assert read == 3 and state.records_superseded == 1
    assert dict(state.commits) == dict(alone.commits)
    assert state.positions == alone.positions and state.bytes_read == alone.bytes_read
    assert alone.records_skipped == 1 and state.records_skipped == 0


def test_errors_come_back_in_order_and_stale_records_are_counted() -> None:
    key = offset_key("g", "t", 0)
    state = OffsetsTopicState()
    state.advance(0, 3)
    batch = [
        message(0, 1, key, offset_value(4, offset=1)),  # below the position: applied before
        message(0, 3, key, offset_value(4, offset=3)),
        eof(0, 4),
        eof(1, 0),
    ]
    state, read, errors = folded([batch], state)
    assert read == 2 and state.records_stale == 1
    assert [(e.partition(), e.offset()) for e in errors] == [(0, 4), (1, 0)]
    assert state.commits[("g", "t", 0)].offset == 3


def test_commits_of_kafka_44_are_folded() -> None:
    messages = [
        message(p, o, offset_key("g", "t", o % 3), value)
        for p in (0, 1)
        for o, value in enumerate(KAFKA_44_VALUES)
    ]
    state, _, _ = folded([messages[:7], messages[7:]])
    assert picture(state) == picture(one_by_one(messages))
    assert state.records_skipped == 0


def _random_log(rng: random.Random, n: int) -> list[Message]:
    """Commits, tombstones, group metadata, KIP-848 and unknown records over two partitions."""
    next_offset = {0: 0, 1: 0}
    out = []
    for _ in range(n):
        p = rng.randrange(2)
        group = f"g{rng.randrange(3)}-{p}"  # a group lives on one log partition
        roll = rng.random()
        if roll < 0.7:
            key = offset_key(group, rng.choice("ab"), rng.randrange(3))
            value = rng.choice(
                [
                    offset_value(4, offset=rng.randrange(1000)),
                    offset_value(3, offset=rng.randrange(1000), metadata="m", leader_epoch=2),
                    rng.choice(KAFKA_44_VALUES),
                ]
            )
        elif roll < 0.8:
            key, value = offset_key(group, rng.choice("ab"), rng.randrange(3)), None
        elif roll < 0.9:
            key = group_key(group)
            gen = rng.randrange(5)
            value = (
                group_value(gen, [member(f"m{gen}", {"a": [0]})]) if rng.random() < 0.8 else None
            )
        elif roll < 0.95:
            key, value = kip848_key(rng.randrange(3, 9), group), b"\x00\x00"
        else:
            key, value = b"\x00\x63" + group.encode(), b"x"
        out.append(message(p, next_offset[p], key, value))
        next_offset[p] += 1
    return out


@pytest.mark.parametrize("seed", range(25))
def test_folding_gives_what_record_by_record_gives(seed: int) -> None:
    rng = random.Random(seed)
    log = _random_log(rng, rng.randrange(1, 400))
    cuts = sorted(rng.sample(range(len(log) + 1), k=min(len(log) + 1, rng.randrange(1, 6))))
    batches = [log[a:b] for a, b in zip([0, *cuts], [*cuts, len(log)], strict=True)]
    # Two polls: the second starts with what the first made known.
    half = rng.randrange(len(batches) + 1)
    state, read1, _ = folded(batches[:half])
    state, read2, _ = folded(batches[half:], state)
    alone = one_by_one(log)
    assert read1 + read2 == len(log)
    assert picture(state) == picture(alone)
    assert counts(state) + state.records_skipped == len(log)


def test_a_run_starting_below_the_position_is_checked_until_it_reaches_it() -> None:
    key, other = offset_key("g", "t", 0), offset_key("g", "t", 1)
    log = [message(0, o, key if o % 2 else other, offset_value(4, offset=o)) for o in range(8)]
    log += [message(1, o, offset_key("h", "t", o), offset_value(4, offset=o)) for o in range(3)]
    for position in range(9):
        alone = OffsetsTopicState()
        alone.advance(0, position)
        one_by_one(log, alone)
        state = OffsetsTopicState()
        state.advance(0, position)
        # partitions interleaved within the batch: 0, 1, 0, 1
        batch = log[:3] + log[8:9] + log[3:8] + log[9:]
        state, read, _ = folded([batch], state)
        assert read == len(log)
        assert state.records_stale == min(position, 8)
        assert picture(state) == picture(alone), position
