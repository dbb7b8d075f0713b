"""What ``__share_group_state`` adds to a Kafka cycle (``collectors/kafka/share_state.py``),
pure: each share commit matched to its share-partition by group, topic id and partition, and
the warnings when the topic is not readable or still being caught up with."""

from __future__ import annotations

import base64
import uuid

import pytest

from collectors.consumer_offsets.reader import ReaderOutcome
from collectors.kafka.cycle import Cycle
from collectors.kafka.share_state import apply_share_state, topic_uuid
from collectors.records import CommittedOffset, ShareStateFigures, Source
from collectors.share_state import ShareStateTopic
from tests.collectors.test_share_state_decode import TOPIC, batch, key, snapshot

TEXT_ID = base64.urlsafe_b64encode(TOPIC.bytes).rstrip(b"=").decode()


def outcome(readable: bool = True, caught_up: bool = True, behind: int | None = 0) -> ReaderOutcome:
    return ReaderOutcome(True, readable, caught_up, 1, 1, behind, {}, 10, 1, (), 0, 1)


def commits(cycle: Cycle) -> list[CommittedOffset]:
    made = [
        CommittedOffset(Source.KAFKA, "q", "jobs", 3, 10, share=True, topic_id=TEXT_ID),
        CommittedOffset(Source.KAFKA, "q", "jobs", 4, 10, share=True, topic_id=TEXT_ID),
        CommittedOffset(Source.KAFKA, "classic", "jobs", 3, 10),
    ]
    cycle.result.commits.extend(made)
    return made


def state() -> ShareStateTopic:
    topic = ShareStateTopic()
    topic.apply(0, 0, 1000, key(0, "q", 3), snapshot(10, (batch(10, 10, 0, 3),)))
    return topic


def test_topic_ids_in_kafkas_text_form() -> None:
    assert topic_uuid(TEXT_ID) == TOPIC
    assert topic_uuid(str(uuid.UUID(int=0))) is None  # 36 characters: not base64 of 16 bytes
    assert topic_uuid("!!") is None


def test_each_share_commit_gets_its_share_partitions_figures() -> None:
    cycle = Cycle(0, 5)
    made = commits(cycle)
    apply_share_state(outcome(), state(), cycle)
    assert made[0].share_state == ShareStateFigures(
        max_deliveries=3, redelivered_offset=10, redelivered_count=3
    )
    assert made[1].share_state == ShareStateFigures()  # read: nothing to say
    assert made[2].share_state is None  # not a share group's
    assert cycle.result.errors == []


@pytest.mark.parametrize(
    ("read", "error"),
    [
        (outcome(readable=False), "not readable"),
        (outcome(caught_up=False, behind=7), "catching up: 7 records behind"),
    ],
)
def test_unread_figures_stay_unknown_and_say_why(read: ReaderOutcome, error: str) -> None:
    cycle = Cycle(0, 5)
    made = commits(cycle)
    apply_share_state(read, state(), cycle)
    assert all(c.share_state is None for c in made)
    [said] = cycle.result.errors
    assert said.where == "__share_group_state" and error in said.error


def test_no_share_group_no_warning() -> None:
    cycle = Cycle(0, 5)
    apply_share_state(outcome(readable=False), state(), cycle)
    assert cycle.result.errors == []
