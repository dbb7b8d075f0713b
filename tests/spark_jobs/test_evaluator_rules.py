"""The evaluator rule by rule: Burrow's rules, each improvement, each diagnosis, the group rules.

Every case is small and built here, so that each assertion fails when its rule is removed or
reordered. Times are epoch milliseconds; a window of commits every 60 s is Burrow's default
(10 intervals of 60 s) unless a case needs otherwise.
"""

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from spark_jobs.evaluator import (
    BACKPRESSURE,
    DEAD_CONSUMER,
    ERR,
    OK,
    OUT_OF_RANGE,
    PENDING_LEAK,
    POISON_MESSAGE,
    REBALANCE_STORM,
    REBALANCING,
    REWIND,
    SKIPPED_DATA,
    SLOW_CONSUMER,
    SOURCE_UNREACHABLE,
    SPOUT_ID_COLLISION,
    STALL,
    STOP,
    TOPOLOGY_RESTARTED,
    UNKNOWN,
    WARN,
    Commit,
    EvaluatorConfig,
    PartitionVerdict,
    PartitionWindow,
    SpoutSeries,
    WindowInputError,
    build_window,
    evaluate_document,
    evaluate_group,
    evaluate_partition,
    find_unrecovered_rewind,
    is_commit_overdue,
    lag_never_decreased,
    lag_rise_within_jitter,
    parse_config,
    parse_request,
)

ROOT = Path(__file__).resolve().parents[2]
FIVE = EvaluatorConfig(window=5)
CONFIG10 = EvaluatorConfig()
MIN = 60_000


def commits(*rows: tuple) -> tuple[Commit, ...]:
    """Commits from (offset, timestamp_ms, lag) rows."""
    return tuple(Commit(*row) for row in rows)


def every_minute(offsets: list[int], lags: list[int | None], start_ms: int = MIN) -> tuple:
    return tuple(
        Commit(o, start_ms + i * MIN, lag)
        for i, (o, lag) in enumerate(zip(offsets, lags, strict=True))
    )


def window(cs: tuple, latest_offsets=(), current_lag: int = 0, **extra) -> PartitionWindow:
    return PartitionWindow("t/0", cs, tuple(latest_offsets), current_lag, **extra)


def codes(verdict: PartitionVerdict) -> list[str]:
    return [d.code for d in verdict.diagnosis]


def evidence(verdict: PartitionVerdict, code: str) -> dict:
    return next(d.evidence for d in verdict.diagnosis if d.code == code)


# Shapes reused below -----------------------------------------------------------------------

# Offsets frozen at 1000 while the lag grows: Burrow's STALL (case 05), evaluated at 600 s.
FROZEN = commits(
    (1000, 100_000, 100),
    (1000, 200_000, 150),
    (1000, 300_000, 200),
    (1000, 400_000, 250),
    (1000, 500_000, 300),
)
# Advancing offsets whose lag never decreases: Burrow's WARN.
SLOW = commits(
    (1000, 100_000, 100),
    (2000, 200_000, 150),
    (3000, 300_000, 200),
    (4000, 400_000, 250),
    (5000, 500_000, 300),
)
# Ten commits a minute apart, zero lag at the first: a consumer that was keeping up.
KEPT_UP = every_minute([1000 + 100 * i for i in range(10)], [0, 10, 20, 30, 40, 50, 60, 70, 80, 90])
KEPT_UP_LAST_MS = KEPT_UP[-1].timestamp_ms


# Burrow's rules, in order ------------------------------------------------------------------


def test_rule1_window_below_minimum_complete_is_ok() -> None:
    three = FROZEN[:3]
    strict = EvaluatorConfig(window=5, minimum_complete=0.8)
    verdict = evaluate_partition(window(three, [1300], 300), strict, 600_000)
    assert verdict.status == OK and verdict.complete == pytest.approx(0.6)
    assert "not enough data" in verdict.reason
    lenient = EvaluatorConfig(window=5, minimum_complete=0.6)
    assert evaluate_partition(window(three, [1300], 300), lenient, 350_000).status == STALL


def test_rule2_current_lag_within_allowed_is_ok() -> None:
    w = window(FROZEN, [1005], 5)
    assert evaluate_partition(w, EvaluatorConfig(window=5, allowed_lag=5), 600_000).status == OK
    assert evaluate_partition(w, EvaluatorConfig(window=5, allowed_lag=4), 600_000).status == STALL


def test_rule3_stop_needs_idle_strictly_longer_than_the_window_span() -> None:
    w = window(SLOW, [5300], 300)
    assert evaluate_partition(w, FIVE, 900_000).status == WARN  # idle 400 s = span 400 s
    stopped = evaluate_partition(w, FIVE, 900_001)
    assert stopped.status == STOP
    assert "No commit for 400.0 s, longer than the window's 400 s span" in stopped.reason


def test_rule3_no_stop_when_a_recent_broker_offset_showed_no_lag() -> None:
    """Burrow #290: new data may just not be consumed yet when the consumer was caught up."""
    assert evaluate_partition(window(SLOW, [5300, 5000], 300), FIVE, 2_000_000).status == WARN
    assert evaluate_partition(window(SLOW, [5300, 5001], 300), FIVE, 2_000_000).status == STOP


def test_rule3_stop_comes_before_an_old_zero_lag_commit() -> None:
    zero_first = (Commit(1000, 100_000, 0), *SLOW[1:])
    assert evaluate_partition(window(zero_first, [5300], 300), FIVE, 1_000_000).status == STOP
    assert evaluate_partition(window(zero_first, [5300], 300), FIVE, 800_000).status == OK


def test_rule4_rewind_that_never_climbs_back() -> None:
    cs = commits(
        (1000, 100_000, 100),
        (3000, 200_000, 100),
        (2000, 300_000, 1100),
        (2500, 400_000, 600),
        (2900, 500_000, 200),
    )
    verdict = evaluate_partition(window(cs, [3100], 200), FIVE, 600_000)
    assert verdict.status == REWIND
    assert "went back from 3000 to 2000" in verdict.reason


def test_rule4_reaching_the_offset_it_fell_from_is_a_recovery() -> None:
    cs = commits(
        (1000, 100_000, 100),
        (3000, 200_000, 100),
        (2000, 300_000, 1100),
        (2500, 400_000, 700),
        (3000, 500_000, 200),
    )
    assert find_unrecovered_rewind(cs) is None
    assert evaluate_partition(window(cs, [3200], 200), FIVE, 600_000).status == OK
    assert find_unrecovered_rewind((*cs[:4], Commit(2999, 500_000, 201))) == 2


def test_rule4_a_later_rewind_counts_even_when_an_earlier_one_recovered() -> None:
    cs = commits(
        (1000, 100_000, 100),
        (3000, 200_000, 100),
        (2000, 300_000, 1100),
        (4000, 400_000, 100),
        (3500, 500_000, 700),
    )
    assert find_unrecovered_rewind(cs) == 4
    assert evaluate_partition(window(cs, [4200], 700), FIVE, 600_000).status == REWIND


def test_rule4_rewind_beats_a_zero_lag_commit() -> None:
    cs = commits(
        (1000, 100_000, 0),
        (3000, 200_000, 0),
        (2000, 300_000, 1000),
        (2100, 400_000, 900),
        (2200, 500_000, 800),
    )
    assert evaluate_partition(window(cs, [3000], 800), FIVE, 600_000).status == REWIND


def test_rule5_a_commit_within_allowed_lag_is_ok() -> None:
    cs = (Commit(1000, 100_000, 0), *FROZEN[1:])
    verdict = evaluate_partition(window(cs, [1300], 300), FIVE, 600_000)
    assert verdict.status == OK
    assert "Lag was 0" in verdict.reason and "500 s ago" in verdict.reason
    assert evaluate_partition(window(FROZEN, [1300], 300), FIVE, 600_000).status == STALL


def test_rule5_unknown_lags_do_not_count_as_zero() -> None:
    cs = tuple(Commit(c.offset, c.timestamp_ms, None) for c in SLOW)
    assert evaluate_partition(window(cs, [5300], 300), FIVE, 600_000).status == WARN


def test_rule6_stall_when_every_commit_is_at_one_offset() -> None:
    verdict = evaluate_partition(window(FROZEN, [1300], 300), FIVE, 600_000)
    assert verdict.status == STALL
    assert "All 5 commits in the window are at offset 1000 with lag 300" in verdict.reason


def test_rule7_warn_when_lag_never_decreases() -> None:
    verdict = evaluate_partition(window(SLOW, [5300], 300), FIVE, 600_000)
    assert verdict.status == WARN
    assert "from 100 to 300" in verdict.reason


def test_rule7_skips_unknown_lags_between_known_ones() -> None:
    rising = commits((1, 0, 100), (2, 1, None), (3, 2, 100), (4, 3, None), (5, 4, 120))
    falling = commits((1, 0, 100), (2, 1, None), (3, 2, 90))
    assert lag_never_decreased(rising) is True
    assert lag_never_decreased(falling) is False


def test_rule8_ok_when_lag_went_down_once() -> None:
    cs = (*SLOW[:4], Commit(5000, 500_000, 240))
    verdict = evaluate_partition(window(cs, [5240], 240), FIVE, 600_000)
    assert verdict.status == OK
    assert "from 250 to 240" in verdict.reason


def test_no_commit_yet_is_ok_and_incomplete() -> None:
    verdict = evaluate_partition(window((), [500], 500), FIVE, 600_000)
    assert (verdict.status, verdict.complete) == (OK, 0.0)


# Burrow's documentation (wiki "Consumer Lag Evaluation Rules"), a 10-commit, 60 s window ----


@pytest.mark.parametrize(
    ("offsets", "lags", "now_after_last_ms", "expected"),
    [
        # any lag of zero in the window: OK
        ([10 * i for i in range(1, 11)], [0, 0, 0, 0, 1, 1, 1, 2, 2, 3], 30_000, OK),
        # offsets advancing, lag fixed or increasing: WARN (consumer slower than producers)
        ([10 * i for i in range(1, 11)], [1, 1, 1, 1, 1, 2, 2, 2, 3, 3], 30_000, WARN),
        # offsets advancing, lag up then down once: OK
        ([10 * i for i in range(1, 11)], [5, 6, 7, 8, 9, 10, 11, 12, 9, 10], 30_000, OK),
        # offset unchanged, lag increasing: STALL
        ([10] * 10, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 30_000, STALL),
        # offset unchanged, lag fixed: STALL
        ([10] * 10, [5] * 10, 30_000, STALL),
        # good commits but the last one longer ago than the window's span: STOP
        ([10 * i for i in range(1, 11)], [1, 1, 1, 1, 1, 2, 2, 2, 3, 3], 9 * MIN + 1, STOP),
    ],
    ids=["zero-lag-ok", "lag-growing-warn", "lag-dropped-ok", "stalled", "stalled-flat", "stopped"],
)
def test_burrow_documentation_examples(offsets, lags, now_after_last_ms, expected) -> None:
    cs = every_minute(offsets, lags)
    lag = lags[-1] + 1
    w = window(cs, [offsets[-1] + lag], lag)
    verdict = evaluate_partition(w, EvaluatorConfig(), cs[-1].timestamp_ms + now_after_last_ms)
    assert verdict.status == expected


# Improvements over Burrow ------------------------------------------------------------------


def test_frozen_lag_is_recomputed_from_the_fresh_latest_offset() -> None:
    """Burrow keeps the lag of the last commit (0 here) until the next commit, so a consumer
    that died caught up stays OK forever; the fresh latest offset shows 300 waiting."""
    cs = (*SLOW[:4], Commit(5000, 500_000, 0))
    frozen = window(cs, [5300], 0)
    assert evaluate_partition(frozen, FIVE, 1_000_000).status == OK
    fresh = window(cs, [5300], 0, latest=5300)
    verdict = evaluate_partition(fresh, FIVE, 1_000_000)
    assert verdict.status == STOP and verdict.lag == 300
    assert "300 new messages arrived" in verdict.reason


def test_live_owner_turns_stop_into_stall() -> None:
    w = window(SLOW, [5300], 300, alive=True)
    verdict = evaluate_partition(w, FIVE, 1_000_000)
    assert verdict.status == STALL
    assert "stalled, not stopped" in verdict.reason
    assert evaluate_partition(window(SLOW, [5300], 300), FIVE, 1_000_000).status == STOP


def test_dead_owner_turns_stall_into_stop() -> None:
    verdict = evaluate_partition(window(FROZEN, [1300], 300, alive=False), FIVE, 600_000)
    assert verdict.status == STOP
    assert codes(verdict)[0] == DEAD_CONSUMER
    assert (
        evaluate_partition(window(FROZEN, [1300], 300, alive=True), FIVE, 600_000).status == STALL
    )


def test_dead_consumer_after_an_old_zero_lag_commit_is_stop_without_waiting() -> None:
    """Burrow says OK for the whole window span (9 minutes here): a commit had zero lag."""
    now = KEPT_UP_LAST_MS + 90_000  # one and a half commit intervals: overdue
    burrow = evaluate_partition(window(KEPT_UP, [2000], 1100), EvaluatorConfig(), now)
    assert burrow.status == OK
    verdict = evaluate_partition(window(KEPT_UP, [2000], 1100, alive=False), EvaluatorConfig(), now)
    assert verdict.status == STOP
    dead = evidence(verdict, DEAD_CONSUMER)
    assert dead["alive"] is False and dead["lag"] == 1100 and dead["idle_s"] == 90
    assert "Nobody owns the partition" in verdict.reason


def test_missing_owner_with_commits_still_on_time_is_not_yet_dead() -> None:
    now = KEPT_UP_LAST_MS + 30_000
    assert not is_commit_overdue(KEPT_UP, now)
    assert (
        evaluate_partition(
            window(KEPT_UP, [2000], 1100, alive=False), EvaluatorConfig(), now
        ).status
        == OK
    )


def test_missing_owner_during_a_rebalance_is_not_death() -> None:
    now = KEPT_UP_LAST_MS + 90_000
    w = window(KEPT_UP, [2000], 1100, alive=False, rebalancing=True)
    verdict = evaluate_partition(w, EvaluatorConfig(), now)
    assert verdict.status == OK
    assert codes(verdict) == [REBALANCING]


def test_storm_spout_with_old_mtime_but_failing_is_stall_with_poison_message() -> None:
    """A spout rewrites its znode only on progress: the last mtime is old, yet it works."""
    spout = SpoutSeries(pending=(5, 5, 5, 5), failed=(10, 20, 30, 40), acked=(900, 900, 900, 900))
    w = window(SLOW, [5300], 300, spout=spout)
    verdict = evaluate_partition(w, FIVE, 1_000_000)
    assert verdict.status == STALL
    poison = evidence(verdict, POISON_MESSAGE)
    assert poison == {"offset": 5000, "committed": 5000, "failed_rise": 30}
    assert "failed +30" in verdict.reason and "poison message" in verdict.reason


def test_poison_message_names_the_smallest_failed_offset_when_known() -> None:
    spout = SpoutSeries(failed=(1, 2, 3))
    w = window(FROZEN, [1300], 300, spout=spout, smallest_failed_offset=1003)
    verdict = evaluate_partition(w, FIVE, 600_000)
    assert verdict.status == STALL
    assert evidence(verdict, POISON_MESSAGE)["offset"] == 1003


def test_a_counter_reset_counts_from_zero_not_as_negative_work() -> None:
    """A restarted spout's failed counter starts again: 50 -> 60 -> (restart) 3 -> 8 is 18."""
    spout = SpoutSeries(failed=(50, 60, 3, 8))
    verdict = evaluate_partition(window(FROZEN, [1300], 300, spout=spout), FIVE, 600_000)
    assert evidence(verdict, POISON_MESSAGE)["failed_rise"] == 18


def test_spout_that_neither_acks_nor_fails_with_a_frozen_commit_is_dead() -> None:
    spout = SpoutSeries(pending=(0, 0, 0), failed=(7, 7, 7), acked=(900, 900, 900))
    verdict = evaluate_partition(window(FROZEN, [1300], 300, spout=spout), FIVE, 600_000)
    assert verdict.status == STOP
    dead = evidence(verdict, DEAD_CONSUMER)
    assert dead["source"] == "spout" and dead["acked_rise"] == 0 and dead["failed_rise"] == 0


def test_nobody_holding_the_partition_now_outweighs_counts_that_moved_before() -> None:
    """A killed topology: Storm UI no longer lists it and no counts come with the poll, so
    the counts that moved in the window are its last work. During a rebalance, owning nothing
    is expected and the counts speak."""
    spout = SpoutSeries(acked=(100, 150), failed=(0, 0))
    w = window(FROZEN, [1300], 300, spout=spout, alive=False)
    verdict = evaluate_partition(w, FIVE, 600_000)
    assert verdict.status == STOP
    assert evidence(verdict, DEAD_CONSUMER)["source"] == "owner"
    assert evaluate_partition(replace(w, rebalancing=True), FIVE, 600_000).status == STALL


def test_one_spout_sample_says_nothing_about_liveness() -> None:
    spout = SpoutSeries(acked=(100,), failed=(3,))
    assert (
        evaluate_partition(window(SLOW, [5300], 300, spout=spout), FIVE, 1_000_000).status == STOP
    )


def test_quiet_topic_with_zero_lag_is_ok_however_old_the_commit() -> None:
    day = 86_400_000
    w = window(commits((7000, 1_000, 0)), [7000, 7000], 0, latest=7000, alive=False)
    verdict = evaluate_partition(w, FIVE, 3 * day)
    assert verdict.status == OK
    assert "although the last commit is 259199 s old" in verdict.reason


def test_quiet_topic_waking_up_is_not_a_stop_before_the_consumer_had_a_chance() -> None:
    w = window(commits((7000, 1_000, 0)), [7000, 7001], 1)
    assert evaluate_partition(w, FIVE, 86_400_000).status == OK
    assert (
        evaluate_partition(window(commits((7000, 1_000, 0)), [7001], 1), FIVE, 86_400_000).status
        == STOP
    )


def test_unreachable_source_is_unknown_never_stop() -> None:
    w = window(SLOW, [5300], 300, stale=True, stale_since_ms=900_000, alive=False)
    verdict = evaluate_partition(w, FIVE, 1_000_000)
    assert verdict.status == UNKNOWN
    assert codes(verdict) == [SOURCE_UNREACHABLE]
    assert evidence(verdict, SOURCE_UNREACHABLE) == {
        "stale_since_ms": 900_000,
        "last_known_lag": 300,
        "committed": 5000,
    }
    assert "could not be reached for 100 s" in verdict.reason


def test_committed_below_earliest_is_err() -> None:
    w = window(SLOW, [5300], 300, earliest=6000, latest=9000)
    verdict = evaluate_partition(w, FIVE, 600_000)
    assert verdict.status == ERR and verdict.lag == 4000
    assert evidence(verdict, OUT_OF_RANGE)["side"] == "behind_earliest"
    assert "below the earliest available offset 6000" in verdict.reason


def test_committed_beyond_latest_is_err_not_a_negative_lag() -> None:
    verdict = evaluate_partition(window(SLOW, [5300], 300, latest=4000), FIVE, 600_000)
    assert verdict.status == ERR and verdict.lag is None
    assert evidence(verdict, OUT_OF_RANGE) == {
        "committed": 5000,
        "latest": 4000,
        "side": "ahead_of_latest",
    }
    negative = evaluate_partition(window(SLOW, [5300], -20), FIVE, 600_000)
    assert negative.status == ERR


def test_out_of_range_is_err_even_with_an_incomplete_window() -> None:
    strict = EvaluatorConfig(window=10, minimum_complete=1.0)
    verdict = evaluate_partition(window(SLOW, [5300], 300, earliest=6000), strict, 600_000)
    assert verdict.status == ERR


# Windows from a poller (``polls`` known) -----------------------------------------------------

# The lab's first polls (2026-11-21, 5 s polls): a Kafka partition seen once, committed 26 with
# lag 1. With one commit the window's span is 0, so any later "now" read as "stopped for longer
# than the span": every healthy partition was STALL at its first status run.
FIRST_POLL = (Commit(26, 1_000_000, 1, 0, 27),)


def test_a_partition_seen_by_one_poll_is_not_enough_data() -> None:
    config = EvaluatorConfig(minimum_complete=0.5)
    w = window(FIRST_POLL, [27], 1, latest=27, alive=True, polls=1)
    verdict = evaluate_partition(w, config, 1_001_000)
    assert verdict.status == OK and verdict.complete == pytest.approx(0.1)
    assert "seen by 1 polls" in verdict.reason and "not enough data" in verdict.reason
    # Burrow's rules on the same commit: stopped for longer than its zero span.
    burrow = evaluate_partition(w, EvaluatorConfig(), 1_001_000)
    assert burrow.status == STALL


def test_a_partition_stuck_longer_than_the_look_back_is_judged_by_its_polls() -> None:
    """One commit (the look-back cut the others off) but hundreds of polls: enough data."""
    w = window(FIRST_POLL, [900], 874, latest=900, alive=True, polls=360)
    verdict = evaluate_partition(w, EvaluatorConfig(minimum_complete=0.5), 4_600_000)
    assert verdict.status == STALL and verdict.complete == pytest.approx(0.1)
    without_polls = window(FIRST_POLL, [900], 874, latest=900, alive=True)
    assert (
        evaluate_partition(without_polls, EvaluatorConfig(minimum_complete=0.5), 4_600_000).status
        == OK
    )


# The lab's healthy audit-spout partition 2 (2026-11-21): it read 8 to 12 messages between
# polls at 2 msg/s and its lag, measured at each poll, stepped from 1 to 4 when the phase of
# the poll in its 2 s commit cycle drifted. Burrow's rule 7 saw "lag never decreased": WARN
# with SLOW_CONSUMER for a consumer keeping pace.
AUDIT_OFFSETS = (126, 134, 146, 154, 166, 171, 183, 191, 203, 211)
AUDIT_LAGS = (1, 1, 1, 1, 1, 4, 4, 4, 4, 4)
AUDIT_TIMES = (51676, 55687, 61737, 65791, 71932, 73979, 80145, 84197, 90383, 94427)
AUDIT = tuple(
    Commit(o, t, lag, 0, o + lag)
    for o, t, lag in zip(AUDIT_OFFSETS, AUDIT_TIMES, AUDIT_LAGS, strict=True)
)


def test_a_lag_rise_within_one_batch_between_polls_is_not_a_warning() -> None:
    w = window(AUDIT, [215], 4, latest=215, alive=True, polls=10)
    verdict = evaluate_partition(w, EvaluatorConfig(), 95_000)
    assert (verdict.status, verdict.diagnosis) == (OK, ())
    assert "rose by 3" in verdict.reason and "12 messages read between two polls" in verdict.reason
    assert lag_rise_within_jitter(AUDIT) == (3, 12)
    # Lags measured when the commits arrived (Burrow's input): WARN, as Burrow says.
    burrow = evaluate_partition(window(AUDIT, [215], 4, latest=215, alive=True), CONFIG10, 95_000)
    assert burrow.status == WARN


def test_a_consumer_falling_behind_by_more_than_a_batch_is_still_warn() -> None:
    """The lab's slow-consumer: 10 messages read between polls, lag growing 10 a poll."""
    slow = tuple(Commit(100 + 10 * i, 5_000 * i, 5 + 10 * i, 0) for i in range(10))
    w = window(slow, [300], 105, latest=300, alive=True, polls=10)
    verdict = evaluate_partition(w, EvaluatorConfig(), 46_000)
    assert verdict.status == WARN and codes(verdict) == [SLOW_CONSUMER]
    assert lag_rise_within_jitter(slow) is None


def test_no_jitter_allowance_without_progress() -> None:
    frozen = tuple(Commit(1000, 5_000 * i, 5, 0) for i in range(3))
    assert lag_rise_within_jitter(frozen) is None
    assert lag_rise_within_jitter(frozen[:1]) is None


# Diagnoses ---------------------------------------------------------------------------------


def test_pending_leak_while_other_offsets_are_acked() -> None:
    """DOMAIN §1: an offset stuck in _pending pins the commit while later ones are acked."""
    spout = SpoutSeries(pending=(10, 40, 90, 160), failed=(0, 0, 0, 0), acked=(100, 200, 300, 400))
    verdict = evaluate_partition(window(SLOW, [5300], 300, spout=spout), FIVE, 1_000_000)
    assert verdict.status == STALL
    assert codes(verdict) == [PENDING_LEAK]
    assert evidence(verdict, PENDING_LEAK) == {
        "committed": 5000,
        "pending_from": 10,
        "pending_to": 160,
    }


def test_pending_that_went_down_is_no_leak() -> None:
    spout = SpoutSeries(pending=(10, 40, 30, 160), acked=(100, 200, 300, 400))
    verdict = evaluate_partition(window(SLOW, [5300], 300, spout=spout), FIVE, 1_000_000)
    assert PENDING_LEAK not in codes(verdict)


def test_backpressure_when_pending_sits_at_the_cap() -> None:
    at_cap = SpoutSeries(pending=(500,) * 9 + (450,), acked=tuple(range(0, 1000, 100)))
    verdict = evaluate_partition(
        window(SLOW, [5300], 300, spout=at_cap, max_spout_pending=500), FIVE, 600_000
    )
    assert verdict.status == WARN
    assert evidence(verdict, BACKPRESSURE) == {
        "max_spout_pending": 500,
        "share_at_cap": 0.9,
        "samples": 10,
    }
    sometimes = SpoutSeries(pending=(500,) * 7 + (450,) * 3, acked=tuple(range(0, 1000, 100)))
    verdict = evaluate_partition(
        window(SLOW, [5300], 300, spout=sometimes, max_spout_pending=500), FIVE, 600_000
    )
    assert BACKPRESSURE not in codes(verdict)


def test_backpressure_reads_the_tasks_in_flight_tuples_when_given() -> None:
    """A task reading several partitions is capped on their sum: its in-flight series, not the
    partition's own pending (a quarter of the cap here), says whether it sits at the cap."""
    quarter = SpoutSeries(pending=(125,) * 10, acked=tuple(range(0, 1000, 100)))
    alone = window(SLOW, [5300], 300, spout=quarter, max_spout_pending=500)
    assert BACKPRESSURE not in codes(evaluate_partition(alone, FIVE, 600_000))
    task = replace(alone, spout_pending=(500,) * 9 + (499,))
    assert evidence(evaluate_partition(task, FIVE, 600_000), BACKPRESSURE) == {
        "max_spout_pending": 500,
        "share_at_cap": 0.9,
        "samples": 10,
    }
    below = replace(alone, spout_pending=(300,) * 10)
    assert BACKPRESSURE not in codes(evaluate_partition(below, FIVE, 600_000))


def test_backpressure_threshold_is_inclusive() -> None:
    pending = SpoutSeries(pending=(500,) * 8 + (1, 2), acked=tuple(range(10)))
    w = window(SLOW, [5300], 300, spout=pending, max_spout_pending=500)
    assert evidence(evaluate_partition(w, FIVE, 600_000), BACKPRESSURE)["share_at_cap"] == 0.8


def test_flat_lag_with_progress_is_a_slow_consumer_too() -> None:
    """Consuming exactly as fast as producers never drains the lag either."""
    flat = tuple(Commit(c.offset, c.timestamp_ms, 100) for c in SLOW)
    verdict = evaluate_partition(window(flat, [5100], 100), FIVE, 600_000)
    assert verdict.status == WARN
    assert evidence(verdict, SLOW_CONSUMER)["consume_per_s"] == 10.0
    assert evidence(verdict, SLOW_CONSUMER)["produce_per_s"] == 10.0


def test_slow_consumer_gives_rates_and_says_it_never_drains() -> None:
    verdict = evaluate_partition(window(SLOW, [5300], 300), FIVE, 600_000)
    slow = evidence(verdict, SLOW_CONSUMER)
    # latest went 1100 -> 5300 and committed 1000 -> 5000 over 400 s
    assert slow == {"consume_per_s": 10.0, "produce_per_s": 10.5, "lag": 300, "eta_s": None}
    assert "consumes 10/s against 10.5/s produced" in verdict.reason


def test_no_slow_consumer_without_progress_or_known_lags() -> None:
    no_lags = tuple(Commit(c.offset, c.timestamp_ms, None) for c in SLOW)
    assert SLOW_CONSUMER not in codes(
        evaluate_partition(window(no_lags, [5300], 300), FIVE, 600_000)
    )
    assert SLOW_CONSUMER not in codes(
        evaluate_partition(window(FROZEN, [1300], 300), FIVE, 600_000)
    )


def test_rebalance_storm_counts_rebalances_inside_the_window() -> None:
    inside = (150_000, 250_000, 260_000, 270_000)
    storm = window(SLOW, [5300], 300, rebalances_ms=(50_000, *inside))
    verdict = evaluate_partition(storm, FIVE, 600_000)
    assert evidence(verdict, REBALANCE_STORM) == {
        "rebalances": 4,
        "threshold": 3,
        "since_ms": 100_000,
    }
    calm = window(SLOW, [5300], 300, rebalances_ms=(50_000, *inside[:3]))
    assert REBALANCE_STORM not in codes(evaluate_partition(calm, FIVE, 600_000))


def test_rebalancing_is_reported_whatever_the_status() -> None:
    verdict = evaluate_partition(window(SLOW, [5300], 0, rebalancing=True), FIVE, 600_000)
    assert verdict.status == OK and codes(verdict) == [REBALANCING]


def test_skipped_data_counts_what_the_out_of_range_jump_passed_over() -> None:
    cs = commits((1000, 100_000, 4000), (1100, 200_000, 4000))
    cs = (*cs, Commit(9000, 300_000, 0, earliest=3000))
    verdict = evaluate_partition(window(cs, [9000], 0), FIVE, 310_000)
    assert verdict.status == OK
    assert evidence(verdict, SKIPPED_DATA) == {
        "from": 1100,
        "to": 9000,
        "earliest": 3000,
        "skipped": 6000,
        "deleted_by_retention": 1900,
        "at_ms": 300_000,
    }


def test_skipped_data_when_the_log_was_recreated_under_the_commit() -> None:
    """The lab's retention (2026-11-21): ``audit`` deleted and re-created, the spout's commit
    118 lay beyond the new log end 14, then it jumped to the latest offset 18. Lower than
    before, so REWIND; the jump over the new log's first 18 messages is SKIPPED_DATA."""
    cs = (
        Commit(102, 40_698, 1, 0, 103),
        Commit(110, 44_767, 1, 0, 111),
        Commit(118, 48_818, None, 0, 14),
        Commit(18, 53_438, 4, 0, 22),
        Commit(31, 59_540, 3, 0, 34),
    )
    verdict = evaluate_partition(window(cs, [34], 3, earliest=0, latest=34), FIVE, 60_000)
    assert verdict.status == REWIND
    assert evidence(verdict, SKIPPED_DATA) == {
        "from": 118,
        "to": 18,
        "earliest": 0,
        "skipped": 18,
        "deleted_by_retention": None,
        "at_ms": 53_438,
    }
    assert "lay beyond the end of a re-created log and jumped to 18" in verdict.reason


def test_skipped_data_when_the_jump_fell_between_two_polls() -> None:
    """Another lab retention run: no poll saw the commit beyond the new log's end; the log end
    itself went back (237, then 16), so 233 does not exist in the log that 14 is in."""
    cs = (
        Commit(225, 19_679, 4, 0, 229),
        Commit(233, 23_778, 4, 0, 237),
        Commit(14, 30_623, 2, 0, 16),
        Commit(22, 34_665, 3, 0, 25),
    )
    verdict = evaluate_partition(window(cs, [25], 3, earliest=0, latest=25), FIVE, 35_000)
    skipped = evidence(verdict, SKIPPED_DATA)
    assert (skipped["from"], skipped["to"], skipped["skipped"]) == (233, 14, 14)
    assert skipped["deleted_by_retention"] is None


def test_a_rewind_inside_the_log_is_no_skip() -> None:
    cs = (Commit(500, 100_000, 10, 0, 510), Commit(200, 200_000, 320, 0, 520))
    assert SKIPPED_DATA not in codes(evaluate_partition(window(cs, [520], 320), FIVE, 210_000))


def test_an_ordinary_jump_inside_the_log_is_no_skip() -> None:
    cs = (Commit(1000, 100_000, 4000), Commit(9000, 300_000, 0, earliest=500))
    assert SKIPPED_DATA not in codes(evaluate_partition(window(cs, [9000], 0), FIVE, 310_000))


def test_topology_restarted_and_spout_id_collision() -> None:
    w = window(
        SLOW,
        [5300],
        300,
        topology_ids=("wc-1-100", "wc-1-100", "wc-2-200"),
        topics=("orders", "payments", "orders"),
    )
    verdict = evaluate_partition(w, FIVE, 600_000)
    assert evidence(verdict, TOPOLOGY_RESTARTED) == {
        "from": "wc-1-100",
        "to": "wc-2-200",
        "ids": ["wc-1-100", "wc-2-200"],
    }
    assert evidence(verdict, SPOUT_ID_COLLISION) == {"topics": ["orders", "payments"]}
    plain = window(SLOW, [5300], 300, topology_ids=("wc-1-100",), topics=("orders",))
    assert codes(evaluate_partition(plain, FIVE, 600_000)) == [SLOW_CONSUMER]


def test_ok_partitions_carry_no_state_diagnosis() -> None:
    spout = SpoutSeries(pending=(500, 500), failed=(1, 9), acked=(1, 1))
    w = window(SLOW, [5300], 0, spout=spout, max_spout_pending=500)
    assert evaluate_partition(w, FIVE, 1_000_000).diagnosis == ()


# The window --------------------------------------------------------------------------------


def test_min_distance_replaces_the_previous_commit() -> None:
    raw = commits(
        (100, 0, 5), (110, 10_000, 5), (200, 60_000, 5), (210, 61_000, 4), (300, 120_000, 3)
    )
    built = build_window(raw, EvaluatorConfig(min_distance_s=30))
    assert [c.offset for c in built] == [110, 210, 300]
    assert build_window(built, EvaluatorConfig(min_distance_s=30)) == built
    assert build_window(raw, EvaluatorConfig()) == raw
    apart = commits((100, 0, 5), (110, 30_000, 5))
    assert build_window(apart, EvaluatorConfig(min_distance_s=30)) == apart


def test_window_keeps_the_last_n_commits() -> None:
    """Twelve commits, window of ten: the two oldest (with zero lag) no longer count."""
    cs = every_minute([1000] * 12, [0, 0] + [300] * 10)
    verdict = evaluate_partition(
        window(cs, [1300], 300), EvaluatorConfig(), cs[-1].timestamp_ms + 1000
    )
    assert verdict.status == STALL and verdict.complete == 1.0
    assert "All 10 commits" in verdict.reason


# Groups ------------------------------------------------------------------------------------


def verdict(status: str, complete: float = 1.0, lag: int | None = 10) -> PartitionVerdict:
    return PartitionVerdict("t/0", status, complete, (), "-", lag)


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ([OK, OK], OK),
        ([OK, WARN], WARN),
        ([WARN, STALL], ERR),
        ([OK, STOP], ERR),
        ([REWIND], ERR),
        ([OK, ERR, WARN], ERR),
        ([OK, UNKNOWN], UNKNOWN),
        ([UNKNOWN, WARN], WARN),
    ],
)
def test_group_is_its_worst_partition_with_stuck_ones_as_err(statuses, expected) -> None:
    assert evaluate_group("g", [verdict(s) for s in statuses]).status == expected


def test_group_complete_is_the_share_of_full_windows_and_lag_the_sum() -> None:
    group = evaluate_group("g", [verdict(OK, 1.0, 5), verdict(OK, 0.9, 7), verdict(ERR, 1.0, None)])
    assert group.complete == pytest.approx(2 / 3)
    assert group.total_lag == 12


def test_empty_group_is_ok_and_incomplete() -> None:
    assert evaluate_group("g", []) == evaluate_group("g", ())
    group = evaluate_group("g", [])
    assert (group.status, group.complete, group.total_lag) == (OK, 0.0, 0)


# Input -------------------------------------------------------------------------------------


def doc(**partition) -> dict:
    base = {
        "id": "p",
        "commits": [{"offset": 1, "timestamp_ms": 1, "lag": 0}],
        "latest_offsets": [1],
        "current_lag": 0,
    }
    return {"now_ms": 10, "partitions": [{**base, **partition}]}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "document: must be an object"),
        ({"partitions": []}, "now_ms: is required"),
        ({"now_ms": "10"}, "now_ms: must be an integer"),
        ({"now_ms": 10, "extra": 1}, "extra: unknown field"),
        ({"now_ms": 10, "config": {"window": 0}}, "config.window: must be >= 1"),
        (
            {"now_ms": 10, "config": {"minimum_complete": 2}},
            "config.minimum_complete: must be between 0 and 1",
        ),
        ({"now_ms": 10, "config": {"allowed_lag": True}}, "config.allowed_lag: must be an integer"),
        (
            doc(commits=[{"offset": "x", "timestamp_ms": 1}]),
            "partitions[0].commits[0].offset: must be an integer",
        ),
        (
            doc(commits=[{"offset": 1, "timestamp_ms": 5}, {"offset": 2, "timestamp_ms": 4}]),
            "partitions[0].commits[1].timestamp_ms: older than the commit before it",
        ),
        (doc(commits=[{"offset": 1}]), "partitions[0].commits[0].timestamp_ms: is required"),
        (
            doc(commits=[{"offset": 1, "timestamp_ms": 1, "lag": 1.5}]),
            "partitions[0].commits[0].lag: must be an integer or null",
        ),
        (doc(latest_offsets=None), "partitions[0].latest_offsets: must be a list"),
        (doc(alive="yes"), "partitions[0].alive: must be true, false or null"),
        (doc(spout={"pending": [1, -2]}), "partitions[0].spout.pending[1]: must be >= 0"),
        (doc(spout={"emitted": []}), "partitions[0].spout.emitted: unknown field"),
        (doc(stael=True), "partitions[0].stael: unknown field"),
        (doc(id=""), "partitions[0].id: must be a non-empty string"),
        (doc(max_spout_pending=0), "partitions[0].max_spout_pending: must be >= 1"),
        (doc(spout_pending=[3, -1]), "partitions[0].spout_pending[1]: must be >= 0"),
        (doc(spout_pending=5), "partitions[0].spout_pending: must be a list"),
        (doc(polls=0), "partitions[0].polls: must be >= 1"),
        (doc(owner_missing_polls=-1), "partitions[0].owner_missing_polls: must be >= 0"),
        (doc(owner_missing_polls="2"), "partitions[0].owner_missing_polls: must be an integer"),
        (doc(poll_times_ms=[5, 4]), "partitions[0].poll_times_ms[1]: older than the time before"),
        (doc(down_polls_ms=[-1]), "partitions[0].down_polls_ms[0]: must be >= 0"),
        (doc(time_lag_s=-1), "partitions[0].time_lag_s: must be >= 0"),
        (doc(retention_ms=-2), "partitions[0].retention_ms: must be >= -1"),
        (doc(cleanup_policy=""), "partitions[0].cleanup_policy: must be a non-empty string"),
        ({"now_ms": 1, "config": {"retention_risk_s": -1}}, "config.retention_risk_s: must be >= 0"),
        (
            doc(commits=[{"offset": 1, "timestamp_ms": 1, "latest": "9"}]),
            "partitions[0].commits[0].latest: must be an integer",
        ),
        (
            {"now_ms": 1, "groups": [{"id": "g", "partitions": [{"id": "p"}]}]},
            "groups[0].partitions[0].commits: is required",
        ),
    ],
)
def test_bad_input_names_the_field(document, message) -> None:
    with pytest.raises(WindowInputError) as error:
        parse_request(document)
    assert str(error.value).startswith(message)


def test_the_issue_example_parses_and_evaluates() -> None:
    example = {
        "config": {"allowed_lag": 0, "minimum_complete": 0.0, "window": 10},
        "now_ms": 600000,
        "partitions": [
            {
                "id": "any",
                "commits": [{"offset": 1000, "timestamp_ms": 100000, "lag": 0}],
                "latest_offsets": [5200],
                "current_lag": 200,
                "earliest": None,
                "latest": None,
                "alive": None,
                "spout": None,
            }
        ],
        "groups": [{"id": "g", "partitions": []}],
    }
    out = evaluate_document(example)
    (partition,) = out["partitions"]
    assert set(partition) == {"id", "status", "complete", "diagnosis", "reason", "retention_left_s"}
    assert partition["retention_left_s"] is None  # no topic settings given: no forecast
    assert partition["status"] == STOP and partition["complete"] == pytest.approx(0.1)
    assert out["groups"][0] | {"partitions": None} == {
        "id": "g",
        "status": OK,
        "complete": 0.0,
        "total_lag": 0,
        "partitions": None,
    }


def test_evaluate_window_takes_the_tasks_in_flight_series() -> None:
    """``evaluate_window`` runs the status job's rules: the same window, the same verdict."""
    request = parse_request(doc(spout_pending=[4, 5], max_spout_pending=5))
    assert request.partitions[0].spout_pending == (4, 5)
    assert request.partitions[0].max_spout_pending == 5


def test_a_document_forecasts_retention_as_the_status_job_does() -> None:
    """The same inputs the status job hands over (the time lag, the topic's settings, the
    horizon), the same forecast and RETENTION_RISK."""
    out = evaluate_document(
        {**doc(time_lag_s=240.5, retention_ms=300_000, cleanup_policy="delete", current_lag=5),
         "config": {"retention_risk_s": 600}}
    )  # fmt: skip
    (partition,) = out["partitions"]
    assert partition["retention_left_s"] == 59.5
    assert [d["code"] for d in partition["diagnosis"]][-1] == "RETENTION_RISK"
    assert partition["diagnosis"][-1]["evidence"]["threshold_s"] == 600


def test_a_clusters_thresholds_do_not_take_the_retention_horizon() -> None:
    """A cluster has its own ``retention_risk_s`` field; its evaluator thresholds may not
    say it a second time. A document may."""
    with pytest.raises(WindowInputError, match=r"evaluator\.retention_risk_s: unknown field"):
        parse_config({"retention_risk_s": 60}, "evaluator")
    assert parse_config({"retention_risk_s": 60}, document=True).retention_risk_s == 60


def test_diagnoses_render_as_code_and_evidence() -> None:
    out = evaluate_document(
        doc(commits=[{"offset": 1, "timestamp_ms": 1}], current_lag=5, alive=False)
    )
    (diagnosis,) = out["partitions"][0]["diagnosis"]
    assert diagnosis["code"] == DEAD_CONSUMER
    assert diagnosis["evidence"]["source"] == "owner"


@pytest.mark.parametrize(("missing", "dead"), [(None, True), (0, False), (1, False), (2, True)])
def test_a_document_may_count_the_polls_that_missed_the_owner(
    missing: int | None, dead: bool
) -> None:
    """Without the count, ``alive: false`` alone says dead; with it, two polls in a row must
    have missed the owner."""
    document = doc(
        commits=[{"offset": 1, "timestamp_ms": 1}], current_lag=5, alive=False,
        owner_missing_polls=missing,
    )  # fmt: skip
    codes = [d["code"] for d in evaluate_document(document)["partitions"][0]["diagnosis"]]
    assert (DEAD_CONSUMER in codes) is dead, codes


def test_the_evaluator_imports_neither_django_nor_pyspark_nor_the_collectors() -> None:
    # Spark executors import it: the collectors package (and its Kafka client) need not ship.
    code = (
        "import sys, spark_jobs.evaluator; "
        "bad = [m for m in ('django', 'pyspark', 'collectors') if m in sys.modules]; "
        "sys.exit(', '.join(bad) or None)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_a_commit_beyond_the_log_end_is_accepted_and_judged_err() -> None:
    """A negative commit lag is what the collector sees when a commit is past the log end (a
    topic recreated, an offset set by hand): not bad input, an error of the consumer's."""
    commits = [{"offset": 100, "timestamp_ms": t, "lag": -5} for t in (1, 2, 3)]
    out = evaluate_document(
        {"now_ms": 10, "partitions": [{"id": "t/0", "commits": commits,
                                        "latest_offsets": [95, 95, 95], "current_lag": -5}]}
    )  # fmt: skip
    verdict = out["partitions"][0]
    assert verdict["status"] == "ERR"
    assert [d["code"] for d in verdict["diagnosis"]] == ["OUT_OF_RANGE"]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"now_ms": 1, "config": {"minimum_complete": float("nan")}},
         "config.minimum_complete: must be a finite number"),
        ({"now_ms": 1, "config": {"min_distance_s": 10**400}},
         "config.min_distance_s: must be a finite number"),
        ({"now_ms": 10**400}, "now_ms: must fit in 64 bits"),
        (doc(commits=[{"offset": 2**63, "timestamp_ms": 1}]),
         "partitions[0].commits[0].offset: must fit in 64 bits"),
    ],
)  # fmt: skip
def test_numbers_beyond_what_kafka_keeps_are_refused_naming_the_field(document, message) -> None:
    """Found by the fuzz run: NaN escaped as ValueError, huge integers as OverflowError."""
    with pytest.raises(WindowInputError) as error:
        evaluate_document(document)
    assert str(error.value).startswith(message)
