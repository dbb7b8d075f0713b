"""One poll's messages folded into the state, keeping only the last commit of each key.

A catch-up reads the topic's dirty tail: on a busy cluster dozens of commits of every
(group, topic, partition) in a row, of which the state keeps the last. Decoding each one cost
more than the client took to fetch it (``benchmarks/bench_offsets_reader.py``: the reader was
2.34 × a bare consumer). So the fold looks at each message only as far as to tell what it is:

* a commit under a key the state decoded before (``state.commit_keys``) with a non-empty
  value is kept as the key's latest message, undecoded: its position and size are counted,
  and a later commit of the key replaces it (``records_superseded``). Its value is decoded
  once, when the poll ends or when something else of its key arrives;
* everything else (a new key, a tombstone, group metadata, KIP-848 records, an empty value,
  anything malformed) is handed to :meth:`OffsetsTopicState.apply` in order, after the key's
  pending commit, so deletions, events and errors come out exactly as record by record.

A commit replaces the kept one undecoded only when its value has the kept one's length: the
same layout, as a key's commits almost always are. A value of another length (another
version, Kafka 4.2's tagged topic id, a truncated or extended one) first has the kept one
decoded, so a malformed commit after a good one is counted with its error and the good one
stays, as record by record. What the fold does not see: a malformed value of the same length
as its key's earlier commit in the poll (the earlier one is then not kept: the state holds
the commit from before the poll, and the error is counted), and a malformed value replaced
by a good one of the same length (not counted; the good one is kept either way).

The messages are confluent-kafka's (``error()``, ``partition()``, ``offset()``, ``key()``,
``len()`` for the value's size, and for the kept ones ``timestamp()`` and ``value()``).
"""

from __future__ import annotations

from typing import Any

from collectors.consumer_offsets.state import OffsetsTopicState

__all__ = ["PollFold"]


class PollFold:
    """The fold of one poll: :meth:`batch` for every ``consume()`` batch, then :meth:`finish`
    (also when the poll fails half-way: what was counted is then applied)."""

    __slots__ = ("_latest", "_state", "_superseded")

    def __init__(self, state: OffsetsTopicState) -> None:
        self._state = state
        self._latest: dict[bytes, Any] = {}  # key bytes -> the last message of that commit key
        self._superseded = 0  # kept messages less those handed over: see finish()

    def batch(self, messages: list[Any]) -> tuple[int, list[Any]]:
        """Fold a batch in; returns the records read and the error messages (end of partition
        and fetch errors, in order) for the caller to act on.

        The loop is the reader's hottest code, so it asks a message for no more than it must:
        a run of one partition's messages (they come in offset order) has its first offset
        checked against the position and its last one moves the position; a commit that
        replaces its key's kept one costs two lookups.
        """
        state = self._state
        known = state.commit_keys
        positions = state.position_table
        latest = self._latest
        get = latest.get
        errors: list[Any] = []
        stale = slow = handed = size = 0
        run = -1  # the partition of the current run, its last message
        last: Any = None
        for message in messages:
            if message.error() is not None:
                errors.append(message)
                continue
            partition = message.partition()
            if partition != run:
                if last is not None:
                    _advance(positions, run, last.offset())
                run, last = partition, None
                if message.offset() < positions.get(partition, 0):
                    # Already applied: the rare run that starts below the position is
                    # checked message by message until it reaches it.
                    stale += 1
                    run = -1
                    continue
            key = message.key()
            length = len(message)
            before = get(key)
            if before is not None and length == len(before):  # the same layout: replaced
                latest[key] = message
                size += length + len(key)
                last = message
                continue
            if before is not None and length:  # another layout: decoded, not assumed replaced
                _hand_over(state, before, key)
                handed += 1
                latest[key] = message
                size += length + len(key)
                last = message
                continue
            if length and key in known:
                latest[key] = message
                size += length + len(key)
                last = message
                continue
            if before is not None:
                del latest[key]
                _hand_over(state, before, key)
                handed += 1
            if last is not None:
                _advance(positions, run, last.offset())
                last = None
            state.apply(partition, message.offset(), message.timestamp()[1], key, message.value())
            slow += 1
        if last is not None:
            _advance(positions, run, last.offset())
        read = len(messages) - len(errors)
        self._superseded += read - stale - slow - handed  # kept, less those decoded already
        state.records_stale += stale
        state.bytes_read += size
        return read, errors

    def finish(self) -> None:
        """Apply every key's pending commit."""
        latest, self._latest = self._latest, {}
        state = self._state
        for key, message in latest.items():
            _hand_over(state, message, key)
        state.records_superseded += self._superseded - len(latest)
        self._superseded = 0


def _advance(positions: dict[int, int], partition: int, offset: int) -> None:
    if offset >= positions.get(partition, 0):
        positions[partition] = offset + 1


def _hand_over(state: OffsetsTopicState, message: Any, key: bytes) -> None:
    state.apply_latest(
        message.partition(), message.offset(), message.timestamp()[1], key, message.value()
    )
