"""Regressions from a lab run (2026-11-21, cluster ``lab``): the windows the status job derives
from the preserved samples, fed to the evaluator as they are.

The ``poison-message`` scenario pinned ``orders-spout`` partition 0 at offset 103 (znode mtime
10:46:17Z) while its failed count rose; ``pending-leak`` froze every ``clicks-spout`` partition
at 141 while pending climbed. At 10:50:20Z the status job said OK ("Lag went down from 6 to 5
within the window") for the poison partition and for two leaking ones, and WARN with a
POISON_MESSAGE the leak does not have for the others. The cause was the broker offsets the job
handed to rule 3: it passed every poll since the window's *first* commit, so polls from before
the commit at 103 (latest 38 and 78) read as "the consumer was caught up lately" (Burrow #290)
and rule 3 never fired. The figures below are the job's windows from those samples now.
"""

from spark_jobs.evaluator import (
    OK,
    PENDING_LEAK,
    POISON_MESSAGE,
    STALL,
    Commit,
    EvaluatorConfig,
    PartitionVerdict,
    PartitionWindow,
    SpoutSeries,
    evaluate_partition,
    was_caught_up_recently,
)

CONFIG = EvaluatorConfig()  # the lab's: ten commits, no allowed lag
NOW = 1_795_258_220_000  # 2026-11-21T10:50:20Z, the last poll of the preserved log

# storm/orders-spout/orders/0: four quick commits up to 103, then frozen; the spout keeps
# acking the other messages and failing the poison one (pending 1 or 2).
POISON_COMMITS = (
    Commit(25, 1_795_257_956_726, 6, 0),
    Commit(33, 1_795_257_958_754, 5, 0),
    Commit(73, 1_795_257_968_856, 5, 0),
    Commit(103, 1_795_257_977_008, 16, 0),
)
# fmt: off
POISON_SPOUT = SpoutSeries(
    pending=(0, 0, 0, 0, 1, 1, 1, 1, 2, 1, 1, 1, 2, 1, 1, 2, 1, 2, 2, 2, 2, 1, 2, 1, 1, 2, 1, 2),
    failed=(
        0, 0, 0, 0, 93, 184, 302, 434, 554, 686, 809, 931, 1051, 1170, 1293, 1417, 1536, 1654,
        1768, 1881, 1994, 2107, 2214, 2326, 2436, 2556, 2666, 2775,
    ),
    acked=(
        19, 19, 58, 99, 138, 177, 218, 257, 296, 338, 378, 418, 457, 497, 538, 578, 618, 658,
        697, 736, 777, 817, 857, 898, 937, 977, 1018, 1057,
    ),
)
# The last ten latest offsets polled since the commit at 103 was first seen.
POISON_RECENT_LATEST = (719, 760, 800, 840, 880, 920, 960, 1000, 1040, 1081)
# What the job used to pass: every poll since the window's first commit.
POISON_LATEST_SINCE_FIRST_COMMIT = (
    38, 78, 119, 159, 198, 238, 279, 319, 359, 399, 439, 479, 519, 559, 599, 639, 679,
    *POISON_RECENT_LATEST,
)
# fmt: on


def poison_window(latest_offsets: tuple[int, ...]) -> PartitionWindow:
    return PartitionWindow(
        "lab/storm/orders-spout/orders/0",
        POISON_COMMITS,
        latest_offsets,
        978,
        earliest=0,
        latest=1081,
        alive=True,
        spout=POISON_SPOUT,
        topology_ids=("orders-enricher-3-1795257950",),
    )


# fmt: off
# storm/clicks-spout/clicks/3: frozen at 141 after a leaky restart (acked starts again from 0
# and stays there); every tuple times out, so failures follow pending up. Pending dipped from
# 1 to 0 while the spout still made progress.
LEAK_WINDOW = PartitionWindow(
    "lab/storm/clicks-spout/clicks/3",
    (
        Commit(31, 1_795_257_956_726, 7, 0),
        Commit(41, 1_795_257_958_764, 7, 0),
        Commit(91, 1_795_257_968_868, 7, 0),
        Commit(141, 1_795_257_979_004, 7, 0),
    ),
    (899, 949, 999, 1049, 1099, 1150, 1199, 1249, 1300, 1350),
    1209,
    earliest=0,
    latest=1350,
    alive=True,
    spout=SpoutSeries(
        pending=(
            1, 1, 0, 0, 24, 74, 124, 175, 224, 275, 325, 374, 424, 474, 525, 574, 625, 675, 724,
            774, 825, 874, 925, 974, 1025, 1074, 1124, 1174,
        ),
        failed=(
            0, 0, 0, 0, 0, 49, 99, 150, 199, 250, 300, 349, 399, 449, 500, 549, 600, 650, 698,
            749, 800, 849, 900, 949, 1000, 1049, 1100, 1149,
        ),
        acked=(24, 24, 73, 124) + (0,) * 24,
    ),
    topology_ids=("clicks-sessionizer-2-1795257950",),
)
# fmt: on


def codes(verdict: PartitionVerdict) -> list[str]:
    return [d.code for d in verdict.diagnosis]


def test_lab_poison_message_is_stall_with_poison_message_at_the_frozen_offset() -> None:
    verdict = evaluate_partition(poison_window(POISON_RECENT_LATEST), CONFIG, NOW)
    assert (verdict.status, verdict.complete, verdict.lag) == (STALL, 0.4, 978)
    assert codes(verdict) == [POISON_MESSAGE]
    assert verdict.diagnosis[0].evidence == {"offset": 103, "committed": 103, "failed_rise": 2775}
    assert verdict.reason == (
        "No commit for 243.0 s, longer than the window's 20.3 s span, while 962 new messages "
        "arrived, but the spout is alive (acked +1038, failed +2775): stalled, not stopped; "
        "offset 103 keeps failing (2775 more failures): a poison message."
    )


def test_broker_offsets_polled_before_the_last_commit_were_what_kept_it_ok() -> None:
    """The evaluator applies Burrow's exception to what it is given; the polls before the
    commit at 103 are at or below it only because the spout later committed past them."""
    assert was_caught_up_recently(POISON_COMMITS, POISON_LATEST_SINCE_FIRST_COMMIT)
    assert not was_caught_up_recently(POISON_COMMITS, POISON_RECENT_LATEST)
    misled = evaluate_partition(poison_window(POISON_LATEST_SINCE_FIRST_COMMIT), CONFIG, NOW)
    assert misled.status == OK
    assert misled.reason == (
        "Lag went down from 6 to 5 within the window: the consumer catches up."
    )


def test_lab_pending_leak_is_stall_with_pending_leak_and_no_poison_message() -> None:
    """Failures that follow pending up are the leaked tuples timing out, not a poison
    message; the dip of pending before the freeze does not hide the climb."""
    verdict = evaluate_partition(LEAK_WINDOW, CONFIG, NOW)
    assert (verdict.status, verdict.complete, verdict.lag) == (STALL, 0.4, 1209)
    assert codes(verdict) == [PENDING_LEAK]
    assert verdict.diagnosis[0].evidence == {
        "committed": 141,
        "pending_from": 0,
        "pending_to": 1174,
    }
    assert verdict.reason.endswith(
        "stalled, not stopped; pending grew from 0 to 1174 while the commit stayed put: "
        "a pending leak."
    )


# The heuristics that tell the two apart, on small windows ------------------------------------

FROZEN = tuple(Commit(1000, t, 100 + t // 2000) for t in (100_000, 200_000, 300_000))


def frozen(spout: SpoutSeries, **extra: object) -> PartitionVerdict:
    window = PartitionWindow("t/0", FROZEN, (1300,), 300, spout=spout, **extra)
    return evaluate_partition(window, EvaluatorConfig(window=5), 900_000)


def test_a_poison_message_with_a_little_pending_growth_is_no_leak() -> None:
    """Pending 0 -> 1 -> 2 (a message or two in flight) against 400 failures: poison."""
    verdict = frozen(SpoutSeries(pending=(0, 1, 2), failed=(0, 200, 400), acked=(5, 45, 85)))
    assert verdict.status == STALL
    assert codes(verdict) == [POISON_MESSAGE]


def test_one_step_up_in_pending_is_no_leak() -> None:
    verdict = frozen(SpoutSeries(pending=(0, 1, 1, 1), failed=(0, 0, 0, 0), acked=(1, 2, 3, 4)))
    assert PENDING_LEAK not in codes(verdict)


def test_a_leak_without_timeouts_is_a_leak() -> None:
    verdict = frozen(
        SpoutSeries(pending=(3, 50, 100, 150), failed=(7, 7, 7, 7), acked=(1, 2, 3, 4))
    )
    assert codes(verdict) == [PENDING_LEAK]


def test_a_failing_offset_named_by_the_spout_is_reported_beside_a_leak() -> None:
    spout = SpoutSeries(pending=(0, 50, 100, 150), failed=(0, 40, 80, 120), acked=(1, 1, 1, 1))
    assert codes(frozen(spout)) == [PENDING_LEAK]
    both = frozen(spout, smallest_failed_offset=1000)
    assert codes(both) == [POISON_MESSAGE, PENDING_LEAK]
    assert both.diagnosis[0].evidence["offset"] == 1000
