"""The ``__share_group_state`` reader: one group-less consumer per Kafka cluster, beside the
``__consumer_offsets`` one and built on it (``collectors.consumer_offsets.reader``): the same
poll (end offsets first, then assign, consume to them, unassign), the same position kept
between cycles, the same outage handling; only the topic, the fold and the state differ.

Where it starts: at the log start. The share coordinator prunes its topic itself, deleting the
records below each share-partition's latest snapshot once no partition needs them
(``share.coordinator.state.topic.prune.interval.ms``), so the log from its start is what the
coordinator replays when it takes over: a snapshot of every share-partition and the updates
since. A process restart re-reads it the same way, and an archived record whose update was
pruned meanwhile is seen again only in the snapshot that repeats it (its time then the
snapshot's).

Read access: the principal needs Describe and Read on the topic, as on ``__consumer_offsets``;
a cluster that denies it leaves the share groups' delivery figures unknown, with a warning.
"""

from __future__ import annotations

from typing import Any, Final

from collectors.consumer_offsets.reader import ConsumerOffsetsReader
from collectors.share_state.state import ShareStateTopic

__all__ = ["SHARE_STATE_TOPIC", "ShareStateFold", "ShareStateReader"]

SHARE_STATE_TOPIC: Final = "__share_group_state"


class ShareStateFold:
    """One poll's messages applied in order (``batch`` per consume() batch, then ``finish``).

    Record by record, unlike the ``__consumer_offsets`` fold: an update means something only
    laid over the state before it, so none can be skipped, and the topic is small (a few
    records per acknowledgement, pruned below each snapshot)."""

    __slots__ = ("_state",)

    def __init__(self, state: ShareStateTopic) -> None:
        self._state = state

    def batch(self, messages: list[Any]) -> tuple[int, list[Any]]:
        """Apply a batch; returns the records read and the error messages, in order."""
        state = self._state
        errors: list[Any] = []
        for message in messages:
            if message.error() is not None:
                errors.append(message)
                continue
            state.apply(
                message.partition(),
                message.offset(),
                message.timestamp()[1],
                message.key(),
                message.value(),
            )
        return len(messages) - len(errors), errors

    def finish(self) -> None:
        """Nothing is held back between batches."""


class ShareStateReader(ConsumerOffsetsReader):
    """Reads one cluster's ``__share_group_state`` into :attr:`state` (a
    :class:`ShareStateTopic`), poll after poll."""

    topic = SHARE_STATE_TOPIC
    group_id = "lagwatch-share-state-reader"
    state: ShareStateTopic  # type: ignore[assignment]

    def _new_state(self) -> ShareStateTopic:
        return ShareStateTopic()

    def _new_fold(self) -> ShareStateFold:
        return ShareStateFold(self.state)
