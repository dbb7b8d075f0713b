"""PartitionManager against an in-memory partition: storm-kafka's rules and traps, one by one."""

from __future__ import annotations

import pytest

from lab.storm.partition_manager import (
    EARLIEST_TIME,
    LATEST_TIME,
    FetchFailedError,
    OffsetOutOfRangeError,
    PartitionIdentity,
    PartitionManager,
    PartitionManagerConfig,
    TooManyTupleFailuresError,
    committed_path,
    resolve_start_offset,
)

IDENT = PartitionIdentity(
    topology_id="orders-7-1700000000",
    topology_name="orders",
    topic="orders",
    partition=3,
    broker_host="kafka-2.example",
    broker_port=9092,
)


class FakeLog:
    """A partition holding offsets [earliest, latest); fetching outside it is out of range."""

    def __init__(self, latest: int, earliest: int = 0) -> None:
        self.earliest = earliest
        self.latest = latest
        self.fetched_from: list[int] = []

    def fetch(self, offset: int, max_messages: int) -> list[tuple[int, bytes | None]]:
        self.fetched_from.append(offset)
        if offset < self.earliest or offset > self.latest:
            raise OffsetOutOfRangeError(offset)
        end = min(offset + max_messages, self.latest)
        return [(o, b"v%d" % o) for o in range(offset, end)]

    def watermarks(self) -> tuple[int, int]:
        return self.earliest, self.latest


def make_pm(log: FakeLog, start: int = 0, **config: object) -> PartitionManager:
    cfg = PartitionManagerConfig(**config)  # type: ignore[arg-type]
    return PartitionManager(IDENT, cfg, start, log.fetch, log.watermarks)


def emit_all(pm: PartitionManager, limit: int = 10_000) -> list[int]:
    """Call next() until it emits nothing; return the emitted offsets in order."""
    out: list[int] = []
    for _ in range(limit):
        msg = pm.next()
        if msg is None:
            return out
        out.append(msg[0])
    raise AssertionError("next() never ran dry")


# --- commit and lastCompletedOffset -------------------------------------------------------


def test_commit_returns_storm_json_once_then_none_until_progress() -> None:
    pm = make_pm(FakeLog(latest=5), fetch_max_messages=5)
    assert pm.commit() is None  # nothing happened since start
    emit_all(pm)
    for o in range(3):
        pm.ack(o)
    data = pm.commit()
    assert data == {
        "topology": {"id": "orders-7-1700000000", "name": "orders"},
        "offset": 3,
        "partition": 3,
        "broker": {"host": "kafka-2.example", "port": 9092},
        "topic": "orders",
    }
    assert list(data) == ["topology", "offset", "partition", "broker", "topic"]
    assert pm.committed_to == 3
    assert pm.commit() is None
    pm.ack(3)
    assert pm.commit()["offset"] == 4  # type: ignore[index]


def test_last_completed_offset_is_smallest_pending() -> None:
    pm = make_pm(FakeLog(latest=10), fetch_max_messages=10)
    emit_all(pm)
    pm.ack(0)
    pm.ack(2)
    assert pm.last_completed_offset() == 1


def test_last_completed_offset_is_emitted_to_when_nothing_pending() -> None:
    pm = make_pm(FakeLog(latest=4), start=0, fetch_max_messages=10)
    emitted = emit_all(pm)
    for o in emitted:
        pm.ack(o)
    assert pm.emitted_to_offset == 4
    assert pm.last_completed_offset() == 4


def test_fetched_but_not_yet_emitted_messages_count_as_pending() -> None:
    pm = make_pm(FakeLog(latest=10), fetch_max_messages=10)
    assert pm.next() == (0, b"v0")
    pm.ack(0)
    assert pm.has_waiting
    assert pm.last_completed_offset() == 1  # not 10: offsets 1..9 are still waiting


def test_committed_path_is_root_spout_partition() -> None:
    assert (
        committed_path("/kafka-spout", "orders-spout", 3) == "/kafka-spout/orders-spout/partition_3"
    )


def test_null_value_is_acked_without_emitting() -> None:
    def fetch(offset: int, n: int) -> list[tuple[int, bytes | None]]:
        return [(0, None), (1, b"x")][offset:]

    pm = PartitionManager(IDENT, PartitionManagerConfig(), 0, fetch, lambda: (0, 2))
    assert pm.next() == (1, b"x")
    assert pm.number_acked == 1
    assert pm.emitted == 1


# --- failures and retries -----------------------------------------------------------------


def test_fill_refetches_from_smallest_failed_and_reemits_only_failed() -> None:
    log = FakeLog(latest=10)
    pm = make_pm(log, fetch_max_messages=10)
    assert emit_all(pm) == list(range(10))
    for o in range(10):
        if o in (4, 7):
            pm.fail(o)
        else:
            pm.ack(o)
    assert pm.counters().smallest_failed == 4
    assert pm.counters().failed_waiting == 2
    log.latest = 15  # new data exists, but failed messages come first
    assert pm.next() == (4, b"v4")
    assert log.fetched_from[-1] == 4
    assert pm.next() == (7, b"v7")  # 5 and 6 were in the batch but are not re-emitted
    assert pm.counters().failed_waiting == 0
    assert pm.emitted_to_offset == 10
    assert pm.next() == (10, b"v10")  # nothing failed any more: back to new messages


def test_new_messages_resume_after_retries_succeed() -> None:
    log = FakeLog(latest=3)
    pm = make_pm(log, fetch_max_messages=10)
    emit_all(pm)
    pm.fail(1)
    pm.ack(0)
    pm.ack(2)
    assert emit_all(pm) == [1]
    pm.ack(1)
    log.latest = 5
    assert emit_all(pm) == [3, 4]


def test_retry_needing_several_fetches_walks_through_failed_offsets() -> None:
    log = FakeLog(latest=20)
    pm = make_pm(log, fetch_max_messages=4)
    while pm.emitted_to_offset < 20:
        emit_all(pm)
    for o in range(20):
        (pm.fail if o in (2, 15) else pm.ack)(o)
    assert emit_all(pm) == [2, 15]
    assert log.fetched_from[-3:] == [2, 15, 20]  # the batch from 2 only reaches 5


def test_poison_message_pins_commit_while_counters_rise() -> None:
    log = FakeLog(latest=50)
    pm = make_pm(log, fetch_max_messages=10)
    poison = 5
    committed: list[int] = []
    for _ in range(30):
        msg = pm.next()
        if msg is None:
            continue
        (pm.fail if msg[0] == poison else pm.ack)(msg[0])
        data = pm.commit()
        if data is not None:
            committed.append(data["offset"])
    first_emitted, first_failed = pm.emitted, pm.number_failed
    for _ in range(30):
        msg = pm.next()
        if msg is not None:
            (pm.fail if msg[0] == poison else pm.ack)(msg[0])
        assert pm.commit() is None or pm.committed_to == poison
    assert committed and max(committed) == poison
    assert pm.last_completed_offset() == poison
    assert pm.emitted > first_emitted
    assert pm.number_failed > first_failed
    assert pm.number_failed >= 10


# --- maxOffsetBehind traps ----------------------------------------------------------------


def test_ack_far_ahead_drops_pending_below_offset_minus_max_behind() -> None:
    pm = make_pm(FakeLog(latest=20), fetch_max_messages=20, max_offset_behind=5)
    emit_all(pm)
    pm.ack(19)  # 0 < 19 - 5: offsets 0..13 are dropped though never acked
    assert pm.last_completed_offset() == 14
    assert pm.counters().dropped_pending == 14
    assert pm.commit()["offset"] == 14  # type: ignore[index]


def test_ack_within_max_behind_drops_nothing() -> None:
    pm = make_pm(FakeLog(latest=20), fetch_max_messages=20, max_offset_behind=5)
    emit_all(pm)
    pm.ack(5)  # 0 < 5 - 5 is false
    assert pm.last_completed_offset() == 0
    assert pm.counters().dropped_pending == 0
    assert len(pm.pending) == 19


def test_fail_too_far_behind_is_ignored_and_never_retried() -> None:
    log = FakeLog(latest=20)
    pm = make_pm(log, fetch_max_messages=20, max_offset_behind=5)
    emit_all(pm)
    pm.fail(3)  # 3 < 20 - 5
    assert pm.number_failed == 0
    assert pm.counters().ignored_failures == 1
    assert not pm.failed
    assert emit_all(pm) == []  # no retry of 3
    assert log.fetched_from[-1] == 20


def test_fail_at_exact_max_behind_boundary_is_retried() -> None:
    pm = make_pm(FakeLog(latest=20), fetch_max_messages=20, max_offset_behind=5)
    emit_all(pm)
    pm.fail(15)  # 15 < 20 - 5 is false
    assert pm.number_failed == 1
    assert emit_all(pm) == [15]


def test_ignored_failure_stays_pending_forever_commit_frozen() -> None:
    log = FakeLog(latest=10)
    pm = make_pm(log, fetch_max_messages=10, max_offset_behind=5)
    emit_all(pm)
    pm.fail(2)  # ignored: 2 < 10 - 5
    for o in (0, 1, 3, 4, 5, 6, 7):  # every ack stays within 5 of offset 2
        pm.ack(o)
    assert pm.commit()["offset"] == 2  # type: ignore[index]
    for _ in range(20):  # the spout keeps polling; nothing will ever free offset 2
        assert pm.next() is None
        assert pm.commit() is None
    assert 2 in pm.pending
    assert pm.last_completed_offset() == 2


def test_ignored_failure_is_lost_when_a_later_ack_drops_it() -> None:
    log = FakeLog(latest=10)
    pm = make_pm(log, fetch_max_messages=10, max_offset_behind=5)
    emit_all(pm)
    pm.fail(2)
    for o in (0, 1, 3, 4, 5, 6, 7, 8, 9):
        pm.ack(o)
    assert 2 not in pm.pending  # ack(8) dropped it: message 2 was never processed
    assert pm.commit()["offset"] == 10  # type: ignore[index]
    assert pm.number_failed == 0


def test_too_many_tuple_failures_when_nothing_acked() -> None:
    pm = make_pm(FakeLog(latest=10), fetch_max_messages=10, max_offset_behind=3)
    emit_all(pm)
    for o in range(3):
        pm.fail(7 + o)
    with pytest.raises(TooManyTupleFailuresError, match="Too many tuple failures"):
        pm.fail(9)  # fourth counted failure > 3


def test_no_too_many_failures_once_anything_was_acked() -> None:
    pm = make_pm(FakeLog(latest=10), fetch_max_messages=10, max_offset_behind=3)
    emit_all(pm)
    pm.ack(6)
    for _ in range(10):
        pm.fail(9)
    assert pm.number_failed == 10


def test_no_too_many_failures_at_exactly_max_behind() -> None:
    pm = make_pm(FakeLog(latest=10), fetch_max_messages=10, max_offset_behind=3)
    emit_all(pm)
    for o in (7, 8, 9):
        pm.fail(o)
    assert pm.number_failed == 3


def test_ignored_failures_do_not_count_toward_too_many() -> None:
    pm = make_pm(FakeLog(latest=10), fetch_max_messages=10, max_offset_behind=3)
    emit_all(pm)
    for _ in range(10):
        pm.fail(0)  # 0 < 10 - 3: ignored
    assert pm.number_failed == 0


# --- offset out of range ------------------------------------------------------------------


def test_out_of_range_jumps_to_latest_without_force_from_start() -> None:
    log = FakeLog(latest=100, earliest=40)  # retention deleted 0..39
    pm = make_pm(log, start=10, fetch_max_messages=10)
    assert pm.next() is None  # the failed fetch emits nothing
    assert pm.emitted_to_offset == 100
    c = pm.counters()
    assert c.skipped_messages == 60  # 40..99 were still there and are never read
    assert c.out_of_range_jumps == 1
    assert pm.commit()["offset"] == 100  # type: ignore[index]


def test_out_of_range_jumps_to_earliest_with_force_from_start() -> None:
    log = FakeLog(latest=100, earliest=40)
    pm = make_pm(log, start=10, fetch_max_messages=10, force_from_start=True)
    assert pm.next() is None
    assert pm.emitted_to_offset == 40
    assert pm.counters().skipped_messages == 0
    assert pm.next() == (40, b"v40")


def test_offset_beyond_log_end_after_topic_recreation_jumps_back_to_latest() -> None:
    log = FakeLog(latest=500)
    pm = make_pm(log, start=500)
    log.latest = 7  # topic deleted and re-created, 7 new messages
    assert pm.next() is None
    assert pm.emitted_to_offset == 7
    assert pm.counters().skipped_messages == 7


def test_out_of_range_without_start_offset_time_fails_the_fetch() -> None:
    log = FakeLog(latest=100, earliest=40)
    pm = make_pm(log, start=10, use_start_offset_time_if_offset_out_of_range=False)
    with pytest.raises(FetchFailedError):
        pm.next()
    assert pm.emitted_to_offset == 10


def test_out_of_range_while_retrying_drops_vanished_failed_offsets() -> None:
    log = FakeLog(latest=20)
    pm = make_pm(log, fetch_max_messages=20)
    emit_all(pm)
    pm.fail(3)
    pm.fail(12)
    for o in set(range(20)) - {3, 12}:
        pm.ack(o)
    log.earliest = 10  # retention removed offset 3
    assert pm.next() is None
    assert pm.counters().lost_failed == 1
    assert 3 not in pm.pending
    assert pm.emitted_to_offset == 20  # no jump: only the vanished retry is given up
    assert emit_all(pm) == [12]


# --- start offset rules ---------------------------------------------------------------------


def stored(topology_id: str, offset: int) -> dict[str, object]:
    return {"topology": {"id": topology_id, "name": "orders"}, "offset": offset}


def test_start_without_stored_state_uses_latest() -> None:
    d = resolve_start_offset(None, "t-2", PartitionManagerConfig(), earliest=5, latest=50)
    assert d.offset == 50
    assert "No partition information" in d.reason


def test_start_without_stored_state_with_force_from_start_uses_start_offset_time() -> None:
    cfg = PartitionManagerConfig(force_from_start=True, start_offset_time=EARLIEST_TIME)
    assert resolve_start_offset(None, "t-2", cfg, earliest=5, latest=50).offset == 5
    cfg = PartitionManagerConfig(force_from_start=True, start_offset_time=LATEST_TIME)
    assert resolve_start_offset(None, "t-2", cfg, earliest=5, latest=50).offset == 50


def test_start_same_topology_uses_stored_offset_even_with_force_from_start() -> None:
    cfg = PartitionManagerConfig(force_from_start=True)
    assert resolve_start_offset(stored("t-1", 20), "t-1", cfg, earliest=5, latest=50).offset == 20


def test_start_new_topology_without_force_from_start_uses_stored_offset() -> None:
    cfg = PartitionManagerConfig(force_from_start=False)
    assert resolve_start_offset(stored("t-1", 20), "t-2", cfg, earliest=5, latest=50).offset == 20


def test_start_new_topology_with_force_from_start_ignores_stored_offset() -> None:
    cfg = PartitionManagerConfig(force_from_start=True)
    d = resolve_start_offset(stored("t-1", 20), "t-2", cfg, earliest=5, latest=50)
    assert d.offset == 5
    assert "Topology change detected" in d.reason


def test_start_stored_offset_zero_is_replaced_by_latest() -> None:
    d = resolve_start_offset(stored("t-1", 0), "t-1", PartitionManagerConfig(), 0, latest=50)
    assert d.offset == 50


def test_start_stored_offset_too_far_behind_resets() -> None:
    cfg = PartitionManagerConfig(max_offset_behind=10)
    assert resolve_start_offset(stored("t-1", 20), "t-1", cfg, earliest=0, latest=50).offset == 50
    assert resolve_start_offset(stored("t-1", 40), "t-1", cfg, earliest=0, latest=50).offset == 40


def test_start_malformed_stored_state_counts_as_none() -> None:
    bad = {"topology": "oops", "offset": "12"}
    assert resolve_start_offset(bad, "t-1", PartitionManagerConfig(), 0, latest=50).offset == 50


def test_config_rejects_timestamp_start_offset_time() -> None:
    with pytest.raises(ValueError):
        PartitionManagerConfig(start_offset_time=1_700_000_000_000)


# --- counters -----------------------------------------------------------------------------


def test_counters_reflect_state() -> None:
    pm = make_pm(FakeLog(latest=6), fetch_max_messages=6)
    emit_all(pm)
    pm.ack(0)
    pm.fail(2)
    pm.fail(4)
    c = pm.counters()
    assert (c.emitted, c.acked, c.failed) == (6, 1, 2)
    assert c.pending == 5
    assert (c.failed_waiting, c.smallest_failed) == (2, 2)
    assert c.emitted_to_offset == 6
    assert c.last_completed_offset == 1
