"""The decide table in Burrow's manner (``caching_test.go``): one row per case, stating the
window, every predicate's value, the rule that decides and the status with its diagnoses.

A row fails on its facts when a predicate changes, on its rule when the table's order or a
condition changes: the two halves of the decision are pinned apart. Where two rules can both
hold, a row has both true, so moving a rule past another fails a row. The window is compact:
``"100:5 110:?"`` is offset:lag per commit ("?" unknown), one a minute from minute 1; ``after``
is how many minutes after the last commit the window is judged. Unless a row says otherwise the
window is five commits (``EvaluatorConfig(window=5)``) with Burrow's other defaults.

Facts are one character per field of ``Facts``, in its order (1 true, 0 false, ? unknown),
in groups of four for the eye:

    S stale               G stale_gap          D source_down_since_commit  C has_commits
    R out_of_range        E enough_data        A within_allowed_lag        T stopped_committing
    U caught_up_recently  W rewound            H had_allowed_lag           O offsets_unchanged
    N lag_never_decreased J rise_within_jitter V commit_overdue            L alive
    P at_spout_cap        K retention_at_risk  M missed_commits       Y redelivering
    Z record_archived

``RETENTION_LEFT`` pins the retention forecast's figure of the rows that have one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pytest

import spark_jobs.evaluator.decide as decide_module
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
    RETENTION_RISK,
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
    PartitionWindow,
    SpoutSeries,
    evaluate_partition,
)
from spark_jobs.evaluator.decide import RULES, Decision, Facts, decide

MIN = 60_000
FIVE = EvaluatorConfig(window=5)
NO_RISK = EvaluatorConfig(window=5, retention_risk_s=0)  # RETENTION_RISK off, the figure kept
STRICT = EvaluatorConfig(window=5, minimum_complete=1.0)
FIELDS = [f.name for f in dataclasses.fields(Facts)]
FLAG = {"1": True, "0": False, "?": None}


def commits(spec: str) -> tuple[Commit, ...]:
    rows = [item.split(":") for item in spec.split()]
    return tuple(
        Commit(int(o), (i + 1) * MIN, None if lag == "?" else int(lag))
        for i, (o, lag) in enumerate(rows)
    )


@dataclass(frozen=True)
class Case:
    name: str
    facts: str
    status: str
    rule: str
    codes: tuple[str, ...]
    commits: str | tuple[Commit, ...]
    lag: int = 0  # the collector's current lag (the rules recompute it when ``latest`` is given)
    after: float = 1
    config: EvaluatorConfig = FIVE
    extra: dict[str, Any] = field(default_factory=dict)

    def window(self) -> PartitionWindow:
        cs = commits(self.commits) if isinstance(self.commits, str) else self.commits
        extra = dict(self.extra)
        latest_offsets = extra.pop("latest_offsets", ())
        return PartitionWindow(self.name, cs, latest_offsets, self.lag, **extra)

    def judged(self) -> tuple[PartitionWindow, int, Decision]:
        """The window, when it is judged, and the decision."""
        window = self.window()
        last = window.commits[-1].timestamp_ms if window.commits else 0
        now = last + int(self.after * MIN)
        return window, now, decide(window, self.config, now)

    def expected_facts(self) -> Facts:
        flags = self.facts.replace(" ", "")
        return Facts(**{name: FLAG[c] for name, c in zip(FIELDS, flags, strict=True)})


def case(
    name: str,
    facts: str,
    status: str,
    rule: str,
    codes: list[str],
    spec: str | tuple[Commit, ...],
    **kw: Any,
) -> Case:
    """A row; ``lag``, ``after`` and ``config`` go to the case, the rest to the window."""
    known = {"lag", "after", "config"}
    return Case(name, facts, status, rule, tuple(codes), spec,
                **{k: v for k, v in kw.items() if k in known},
                extra={k: v for k, v in kw.items() if k not in known})  # fmt: skip


STEADY = "100:5 110:5 120:5 130:5 140:5"  # progress, lag flat at 5
FROZEN = "100:5 100:6 100:7 100:8 100:9"  # one offset, lag rising
FLAT_SPOUT = SpoutSeries(pending=(0, 0, 0), failed=(0, 0, 0), acked=(3, 3, 3))
# A real Storm spout without a push: the whole spout's counters, no partition pending.
WHOLE_SPOUT = SpoutSeries(failed=(0, 3, 9), acked=(10, 20, 30))
AT_CAP = dict(max_spout_pending=5, spout=SpoutSeries(failed=(0, 0, 0), acked=(1, 2, 3)),
              spout_pending=(5, 5, 5))  # fmt: skip
HALF = MIN // 2
CAUGHT_UP = "100:0 110:0 120:0 130:0 140:0"  # progress, nothing waiting at each commit
TEN_CAUGHT_UP = " ".join(f"{100 + 10 * i}:0" for i in range(10))  # ten commits, a minute apart
TEN = EvaluatorConfig(window=10)
WAITING = (140, 150, 160, 170)  # the commit's poll, then three polls with messages waiting


def polled(first: float, last: float) -> tuple[int, ...]:
    """Poll times every half minute from minute ``first`` to minute ``last``."""
    return tuple(range(int(first * MIN), int(last * MIN) + 1, HALF))


# A topic kept five minutes whose oldest unread message is four minutes old: one minute left,
# under the default horizon of an hour (the figures the status job hands over: the last
# sample's time lag, the topic's stored settings).
SHORT = dict(time_lag_s=240.0, retention_ms=300_000, cleanup_policy="delete")
CATCHING = "100:20 110:15 120:10 130:12 140:14"

SKIP = (Commit(50, MIN, 5), Commit(100, 2 * MIN, 5, earliest=80), Commit(110, 3 * MIN, 4),
        Commit(120, 4 * MIN, 3), Commit(130, 5 * MIN, 2))  # fmt: skip
# Real storm-kafka resumes at the log start and, nothing in flight, commits exactly it.
SKIP_TO_START = (Commit(50, MIN, 5), Commit(80, 2 * MIN, 25, earliest=80),
                 Commit(110, 3 * MIN, 4), Commit(120, 4 * MIN, 3), Commit(130, 5 * MIN, 2))  # fmt: skip

# A cluster rebuilt under the same name between minutes 3 and 4: its offsets start again near
# zero, and its history with them (``EvaluatorConfig.history_from_ms``, at minute 3.5).
REBUILT = "5000:5 5010:5 5020:5 10:5 20:5"
AFTER_REBUILD = EvaluatorConfig(window=5, history_from_ms=int(3.5 * MIN))
SKIP_THEN_REBUILT = EvaluatorConfig(window=5, history_from_ms=int(2.5 * MIN))
FULL_SINCE = EvaluatorConfig(window=5, history_from_ms=int(1.5 * MIN))
SINCE_MINUTE = EvaluatorConfig(window=5, history_from_ms=int(1.5 * MIN))
# The lab's broker rebuild, a poll every half minute (the lab's 5 s): the history starts at
# minute 0.5, the cycle that saw the new cluster id, before the consumer's first commit on the
# new cluster (offset 0, a poll later; then nothing for 30 s while its partition filled).
# The partition's first poll is the one after the start: still watched from the start.
LAB_REBUILT = EvaluatorConfig(window=10, minimum_complete=0.5, history_from_ms=HALF)
FIRST_ON_NEW = (Commit(0, HALF + HALF // 2, 42),)
# A partition first polled ten minutes after that start (twenty intervals): a new one.
FIRST_LATE = (Commit(0, 10 * MIN + HALF + HALF // 2, 42),)
FILLING = dict(alive=True, latest=122, latest_offsets=(42, 57, 82, 97, 122))
# The same cluster, Burrow's minimum_complete of 0: its first poll since the start.
BURROW_REBUILT = EvaluatorConfig(window=5, history_from_ms=HALF)

# A queue's poison record delivered three times and come back (the group's limit 5); and one
# archived after its deliveries, first seen archived at ``at_ms``.
POISON = dict(share_redelivered_offset=120, share_redelivered_count=3, share_delivery_limit=5)


def archived(at_ms: float, count: int = 5, limit: int | None = 5) -> dict[str, Any]:
    return dict(share_archived_offset=117, share_archived_count=count,
                share_archived_ms=int(at_ms), share_delivery_limit=limit)  # fmt: skip


# fmt: off
CASES = [
    # name                                         SGDC REAT UWHO NJVL PKMY Z status    rule                 diagnoses, window
    # The source could not be reached: nothing else is judged.
    case("stale source",                          "1001 0100 0000 100? 0000 0", UNKNOWN, "source_unreachable", [SOURCE_UNREACHABLE], STEADY, lag=5, stale=True, stale_since_ms=2 * MIN),
    case("stale source, events still reported",   "1001 0100 0000 100? 0000 0", UNKNOWN, "source_unreachable", [SOURCE_UNREACHABLE, REBALANCING], STEADY, lag=5, stale=True, rebalancing=True),
    case("stale source, no commit yet",           "1000 0110 0000 100? 0000 0", UNKNOWN, "source_unreachable", [SOURCE_UNREACHABLE], "", stale=True),
    # Figures that are not current: nothing collected for three poll intervals, or an outage
    # since the commit whose grace (the window's span since the outage ended) still runs.
    case("gap in collection",                     "0101 0101 0000 101? 0000 0", UNKNOWN, "collection_gap",     [SOURCE_UNREACHABLE], STEADY, lag=60, after=10, poll_times_ms=polled(1, 5)),
    case("polled lately, no gap",                 "0001 0101 0000 101? 0000 0", STOP,    "stopped",            [], STEADY, lag=60, after=10, poll_times_ms=polled(1, 14.5)),
    case("gap while the source is down",          "1101 0101 0000 101? 0000 0", UNKNOWN, "source_unreachable", [SOURCE_UNREACHABLE], STEADY, lag=60, after=10, poll_times_ms=polled(1, 5), stale=True, stale_since_ms=4 * MIN),
    case("gap, no commit yet",                    "0100 0110 0000 100? 0000 0", UNKNOWN, "collection_gap",     [SOURCE_UNREACHABLE], "", after=10, poll_times_ms=polled(1, 5)),
    case("outage since the commit, in its grace", "0011 0100 0000 101? 0000 0", UNKNOWN, "outage_grace",       [SOURCE_UNREACHABLE], STEADY, lag=60, after=1.5, poll_times_ms=polled(1, 6), down_polls_ms=(5 * MIN + HALF,)),
    case("outage, and a gap after it",            "0111 0100 0000 101? 0000 0", UNKNOWN, "collection_gap",     [SOURCE_UNREACHABLE], STEADY, lag=60, after=3, poll_times_ms=polled(1, 6), down_polls_ms=(5 * MIN + HALF,)),
    case("silent past the grace after an outage", "0001 0101 0000 101? 0000 0", STOP,    "stopped",            [], STEADY, lag=60, after=5, poll_times_ms=polled(1, 9.5), down_polls_ms=(5 * MIN + HALF,)),
    case("no commit yet",                         "0000 0110 0000 100? 0000 0", OK,      "no_commits",         [], ""),
    # The committed offset is outside the log (ERR before any rule that needs a full window).
    case("behind earliest",                       "0001 1100 0000 100? 0000 0", ERR,     "out_of_range",       [OUT_OF_RANGE], STEADY, earliest=150, latest=160),
    case("beyond latest",                         "0001 1110 0000 100? 0000 0", ERR,     "out_of_range",       [OUT_OF_RANGE], STEADY, latest=130),
    case("beyond latest, latest unknown",         "0001 1110 0000 100? 0000 0", ERR,     "out_of_range",       [OUT_OF_RANGE], STEADY, lag=-3),
    case("beyond latest, window not full",        "0001 1010 0000 100? 0000 0", ERR,     "out_of_range",       [OUT_OF_RANGE], "100:5 110:5 120:5", latest=110, config=STRICT),
    # Polled: beyond the log end of two polls since it was first seen, not of its first only
    # (the commit read after the log end: a skew of the two reads, not a reset log).
    case("beyond latest at two polls",            "0001 1110 1000 110? 0000 0", ERR,     "out_of_range",       [OUT_OF_RANGE], STEADY, latest=130, polls=5, latest_offsets=(130, 130)),
    case("beyond latest at its first poll only",  "0001 0110 1000 110? 0000 0", OK,      "within_allowed_lag", [], STEADY, latest=130, polls=5, latest_offsets=(130,)),
    # Burrow 1: not enough data; a poller's window counts its polls too.
    case("three of five commits",                 "0001 0000 0000 100? 0000 0", OK,      "not_enough_data",    [], "100:5 110:5 120:5", lag=5, config=STRICT),
    case("three of five commits, nothing waits",  "0001 0010 0010 100? 0000 0", OK,      "not_enough_data",    [], "100:0 110:0 120:0", config=STRICT),
    case("three commits, five polls",             "0001 0100 0000 110? 0000 0", OK,      "keeps_pace",         [], "100:5 110:5 120:5", lag=5, config=STRICT, polls=5),
    # Burrow 2: nothing waits, however old the commit and whoever holds the partition.
    case("quiet topic, old commit",               "0001 0111 0010 0010 0000 0", OK,      "within_allowed_lag", [], "100:5 110:3 120:0 130:0 140:0", after=60, alive=False),
    case("lag within allowed, rebalancing",       "0001 0110 0010 100? 0000 0", OK,      "within_allowed_lag", [REBALANCING], "100:0 110:0 120:0 130:0 140:0", rebalancing=True),
    # A consumer known dead is STOP once its next commit is overdue, even after a zero lag.
    case("dead owner after a zero-lag commit",    "0001 0100 0010 1010 0000 0", STOP,    "dead_consumer",      [DEAD_CONSUMER], "100:0 110:0 120:0 130:0 140:0", lag=30, after=2, alive=False),
    case("dead spout, commit overdue",            "0001 0100 0001 1010 0000 0", STOP,    "dead_consumer",      [DEAD_CONSUMER], FROZEN, lag=20, after=2, spout=FLAT_SPOUT),
    case("stopped, dead owner",                   "0001 0101 0000 1010 0000 0", STOP,    "dead_consumer",      [DEAD_CONSUMER], STEADY, lag=60, after=10, alive=False),
    # Nobody holds it at one poll only: a restart's moment (consumers leave and join again),
    # no evidence of death; at two polls in a row, dead.
    case("owner missing at one poll only",        "0001 0100 0010 101? 0000 0", OK,      "caught_up",          [], "100:0 110:0 120:0 130:0 140:0", lag=30, after=2, alive=False, owner_missing_polls=1),
    case("owner missing at two polls",            "0001 0100 0010 1010 0000 0", STOP,    "dead_consumer",      [DEAD_CONSUMER], "100:0 110:0 120:0 130:0 140:0", lag=30, after=2, alive=False, owner_missing_polls=2),
    case("stopped, owner missing at one poll",    "0001 0101 0000 101? 0000 0", STOP,    "stopped",            [], STEADY, lag=60, after=10, alive=False, owner_missing_polls=1),
    case("frozen, owner missing at one poll",     "0001 0100 0001 100? 0000 0", STALL,   "stalled",            [], FROZEN, lag=10, alive=False, owner_missing_polls=1),
    case("frozen, owner missing at three polls",  "0001 0100 0001 1000 0000 0", STOP,    "stalled_and_dead",   [DEAD_CONSUMER], FROZEN, lag=10, alive=False, owner_missing_polls=3),
    # Burrow 3: stopped committing; alive, it is STALL with what the spout shows.
    case("stopped, liveness unknown",             "0001 0101 0000 101? 0000 0", STOP,    "stopped",            [], STEADY, lag=60, after=10, latest_offsets=(200,)),
    case("stopped, spout alive, poison",          "0001 0101 0000 1011 0000 0", STALL,   "stopped_but_alive",  [POISON_MESSAGE], STEADY, lag=60, after=10, spout=SpoutSeries(pending=(1, 1, 1), failed=(0, 3, 9), acked=(10, 20, 20))),
    case("stopped, spout alive, pending leak",    "0001 0101 0000 1011 0000 0", STALL,   "stopped_but_alive",  [PENDING_LEAK], STEADY, lag=60, after=10, spout=SpoutSeries(pending=(1, 5, 9, 14), failed=(0, 2, 4, 6), acked=(1, 2, 2, 2))),
    case("stopped, whole-spout counts, poison",   "0001 0101 0000 1011 0000 0", STALL,   "stopped_but_alive",  [POISON_MESSAGE], STEADY, lag=60, after=10, spout=WHOLE_SPOUT),
    case("stopped, but caught up lately",         "0001 0101 1000 101? 0000 0", WARN,    "lag_rising",         [SLOW_CONSUMER], STEADY, lag=60, after=10, latest_offsets=(140,)),
    case("stopped after a rewind",                "0001 0101 0100 101? 0000 0", STOP,    "stopped",            [], "100:5 120:5 90:5 100:5 110:5", lag=5, after=10),
    # A consumer known alive that missed three of its own commit intervals while messages
    # waited at three polls since (the first latest offset is the poll that saw the commit).
    case("overdue, owner alive, messages wait",   "0001 0100 1010 1011 0010 0", STALL,   "overdue_but_alive",  [], CAUGHT_UP, lag=30, after=3.5, alive=True, latest_offsets=WAITING),
    case("overdue, spout alive, poison",          "0001 0100 1010 1011 0010 0", STALL,   "overdue_but_alive",  [POISON_MESSAGE], CAUGHT_UP, lag=30, after=3.5, latest_offsets=WAITING, spout=SpoutSeries(pending=(1, 1, 1), failed=(0, 3, 9), acked=(10, 20, 20))),
    case("overdue, liveness unknown",             "0001 0100 1010 101? 0010 0", OK,      "caught_up",          [], CAUGHT_UP, lag=30, after=3.5, latest_offsets=WAITING),
    case("overdue, caught up at a poll since",    "0001 0100 1010 1011 0000 0", OK,      "caught_up",          [], CAUGHT_UP, lag=30, after=3.5, alive=True, latest_offsets=(140, 150, 140, 170)),
    case("overdue, two polls since",              "0001 0100 1010 1011 0000 0", OK,      "caught_up",          [], CAUGHT_UP, lag=30, after=3.5, alive=True, latest_offsets=(140, 150, 170)),
    case("two intervals missed, messages wait",   "0001 0100 1010 1011 0000 0", OK,      "caught_up",          [], CAUGHT_UP, lag=30, after=2.5, alive=True, latest_offsets=WAITING),
    case("three intervals, under half the span",  "0001 0100 1010 1011 0000 0", OK,      "caught_up",          [], TEN_CAUGHT_UP, lag=30, after=4, alive=True, latest_offsets=(190, 200, 210, 220), config=TEN),
    case("overdue after a rewind, owner alive",   "0001 0100 1100 1011 0010 0", REWIND,  "rewind",             [], "100:5 120:5 90:5 100:5 110:5", lag=30, after=3.5, alive=True, latest_offsets=(110, 120, 130, 140)),
    # Burrow 4: an unrecovered rewind, and the retention jump that explains one.
    case("rewind",                                "0001 0100 0100 100? 0000 0", REWIND,  "rewind",             [], "100:5 120:5 90:5 100:5 110:5", lag=5),
    case("rewind recovered",                      "0001 0100 0000 100? 0000 0", WARN,    "lag_rising",         [SLOW_CONSUMER], "100:5 120:5 90:5 100:5 120:5", lag=5),
    case("rewind after a zero-lag commit",        "0001 0100 0110 100? 0000 0", REWIND,  "rewind",             [], "100:0 120:5 90:5 100:5 110:5", lag=5),
    case("skipped data, catching up",             "0001 0100 0000 000? 0000 0", OK,      "catching_up",        [SKIPPED_DATA], SKIP, lag=2),
    case("skipped data, resumed at the log start", "0001 0100 0000 000? 0000 0", OK,     "catching_up",        [SKIPPED_DATA], SKIP_TO_START, lag=2),
    # Burrow 5: a commit of the window was caught up.
    case("caught up at the first commit",         "0001 0100 0010 100? 0000 0", OK,      "caught_up",          [], "100:0 110:5 120:6 130:7 140:8", lag=10),
    case("frozen after a zero-lag commit",        "0001 0100 0011 100? 0000 0", OK,      "caught_up",          [], "100:0 100:5 100:6 100:7 100:8", lag=10),
    case("frozen after a zero-lag commit, dead",  "0001 0100 0011 1000 0000 0", OK,      "caught_up",          [], "100:0 100:5 100:6 100:7 100:8", lag=10, alive=False),
    # Burrow 6: the offset never moved; liveness says STOP or STALL.
    case("frozen, dead spout, not yet overdue",   "0001 0100 0001 1000 0000 0", STOP,    "stalled_and_dead",   [DEAD_CONSUMER], FROZEN, lag=20, spout=FLAT_SPOUT),
    case("frozen, owner alive, backpressure",     "0001 0100 0001 1001 1000 0", STALL,   "stalled_but_alive",  [BACKPRESSURE], FROZEN, lag=10, alive=True, max_spout_pending=5, spout=SpoutSeries(pending=(5, 5, 5, 5))),
    case("frozen, spout's in flight at the cap",  "0001 0100 0001 1001 1000 0", STALL,   "stalled_but_alive",  [BACKPRESSURE], FROZEN, lag=10, max_spout_pending=5, spout=SpoutSeries(failed=(0, 0, 0), acked=(1, 2, 3)), spout_pending=(5, 5, 5)),
    case("frozen, counts moved before, gone now", "0001 0100 0001 1010 0000 0", STOP,    "dead_consumer",      [DEAD_CONSUMER], FROZEN, lag=20, after=2, alive=False, spout=SpoutSeries(failed=(0, 0, 0), acked=(10, 20, 30))),
    case("frozen, liveness unknown",              "0001 0100 0001 100? 0000 0", STALL,   "stalled",            [], FROZEN, lag=10),
    case("frozen, owner gone in a rebalance",     "0001 0100 0001 100? 0000 0", STALL,   "stalled",            [REBALANCING], FROZEN, lag=10, alive=False, rebalancing=True),
    # Burrow 7: lag never decreased; a poller's rise within one batch keeps pace.
    case("lag rising within a batch, polled",     "0001 0100 0000 110? 0000 0", OK,      "keeps_pace",         [], "100:1 110:1 120:4 130:4 140:4", lag=4, polls=20),
    case("lag rising within a batch, unpolled",   "0001 0100 0000 100? 0000 0", WARN,    "lag_rising",         [SLOW_CONSUMER], "100:1 110:1 120:4 130:4 140:4", lag=4),
    case("lag rising beyond a batch, polled",     "0001 0100 0000 100? 0000 0", WARN,    "lag_rising",         [SLOW_CONSUMER], "100:1 110:5 120:10 130:20 140:40", lag=40, polls=20),
    case("lag rising, rebalance storm",           "0001 0100 0000 100? 0000 0", WARN,    "lag_rising",         [SLOW_CONSUMER, REBALANCE_STORM], "100:1 110:5 120:10 130:20 140:40", lag=40, rebalances_ms=(MIN, 2 * MIN, 3 * MIN, 4 * MIN)),
    # Burrow 8: the lag went down somewhere.
    # A spout at its cap (max.spout.pending) for most of the window with lag: downstream sets the pace. Rising lag stays lag_rising (SLOW_CONSUMER with it); a lag that goes down is not "catching up" (real storm-kafka serves partitions in turns at the cap).
    case("lag rising, spout at its cap",          "0001 0100 0000 1001 1000 0", WARN,    "lag_rising",         [SLOW_CONSUMER, BACKPRESSURE], "100:1 110:5 120:10 130:20 140:40", lag=40, **AT_CAP),
    case("lag going down, spout at its cap",      "0001 0100 0000 0001 1000 0", WARN,    "backpressured",      [BACKPRESSURE], "100:20 110:15 120:10 130:12 140:14", lag=14, **AT_CAP),
    case("catching up",                           "0001 0100 0000 000? 0000 0", OK,      "catching_up",        [], "100:20 110:15 120:10 130:12 140:14", lag=14),
    case("catching up, topology restarted",       "0001 0100 0000 000? 0000 0", OK,      "catching_up",        [TOPOLOGY_RESTARTED], "100:20 110:15 120:10 130:12 140:14", lag=14, topology_ids=("a-1", "a-2")),
    # The retention forecast: RETENTION_RISK on any status, after the events; it decides no row.
    case("retention soon, catching up",           "0001 0100 0000 000? 0100 0", OK,      "catching_up",        [RETENTION_RISK], CATCHING, lag=14, **SHORT),
    case("retention soon, lag rising",            "0001 0100 0000 100? 0100 0", WARN,    "lag_rising",         [SLOW_CONSUMER, RETENTION_RISK], "100:1 110:5 120:10 130:20 140:40", lag=40, **SHORT),
    case("retention soon, topology restarted",    "0001 0100 0000 000? 0100 0", OK,      "catching_up",        [TOPOLOGY_RESTARTED, RETENTION_RISK], CATCHING, lag=14, topology_ids=("a-1", "a-2"), **SHORT),
    case("already past retention, stalled",       "0001 0100 0001 100? 0100 0", STALL,   "stalled",            [RETENTION_RISK], FROZEN, lag=10, time_lag_s=400.0, retention_ms=300_000, cleanup_policy="delete"),
    case("retention a week off",                  "0001 0100 0000 000? 0000 0", OK,      "catching_up",        [], CATCHING, lag=14, time_lag_s=240.0, retention_ms=604_800_000, cleanup_policy="delete"),
    case("retention soon, horizon 0 (off)",       "0001 0100 0000 000? 0000 0", OK,      "catching_up",        [], CATCHING, lag=14, config=NO_RISK, **SHORT),
    case("retention soon, source down",           "1001 0100 0000 000? 0000 0", UNKNOWN, "source_unreachable", [SOURCE_UNREACHABLE], CATCHING, lag=14, stale=True, **SHORT),
    case("retention soon, nothing unread",        "0001 0110 0010 100? 0000 0", OK,      "within_allowed_lag", [], "100:0 110:0 120:0 130:0 140:0", **SHORT),
    case("retention soon, compacted topic",       "0001 0100 0000 000? 0000 0", OK,      "catching_up",        [], CATCHING, lag=14, time_lag_s=240.0, retention_ms=300_000, cleanup_policy="compact"),
    case("catching up, two topics on a path",     "0001 0100 0000 000? 0000 0", OK,      "catching_up",        [SPOUT_ID_COLLISION], "100:20 110:15 120:10 130:12 140:14", lag=14, topics=("t1", "t2")),
    # A cluster rebuilt under the same name: nothing before its history started over is read.
    case("rebuilt, read as one history",          "0001 0100 0100 100? 0000 0", REWIND,  "rewind",             [], REBUILT, lag=5),
    case("rebuilt, old commits left out",         "0001 0000 0000 100? 0000 0", OK,      "not_enough_data",    [], REBUILT, lag=5, config=AFTER_REBUILD),
    case("rebuilt, old skip left out",            "0001 0000 0000 000? 0000 0", OK,      "not_enough_data",    [], SKIP, lag=2, config=SKIP_THEN_REBUILT),
    case("rebuilt, old instance left out",        "0001 0000 0000 100? 0000 0", OK,      "not_enough_data",    [], REBUILT, lag=5, config=AFTER_REBUILD, topology_ids=("a-1", "a-2")),
    case("rebuilt, old polls and outage left out", "0001 0000 0000 100? 0000 0", OK,     "not_enough_data",    [], REBUILT, lag=5, config=AFTER_REBUILD, poll_times_ms=polled(1, 5), down_polls_ms=(3 * MIN + HALF // 2,), rebalances_ms=(MIN, 2 * MIN, 3 * MIN, 4 * MIN)),
    case("rebuilt, no commit since",              "0000 0010 0000 100? 0000 0", OK,      "no_commits",         [], "5000:5 5010:5", config=AFTER_REBUILD, after=3),
    case("rebuilt, a full window since",          "0001 0100 0000 100? 0000 0", WARN,    "lag_rising",         [SLOW_CONSUMER], "5000:5 10:5 20:5 30:5 40:5 50:5", lag=5, config=FULL_SINCE),
    # Watched from the start when its first poll since then is in the window's polls (none
    # before them since the start), within a window of poll intervals of the start: the lab's
    # consumers, first polled a poll or two after the cycle that saw the new cluster id.
    case("rebuilt, first polled a poll after",    "0001 0001 0001 1011 0000 0", OK,      "not_enough_data",    [], FIRST_ON_NEW, lag=122, after=2.5, polls=5, poll_times_ms=polled(1, 3), **FILLING, config=LAB_REBUILT),
    case("rebuilt, first polled two polls after", "0001 0001 0001 1011 0000 0", OK,      "not_enough_data",    [], FIRST_ON_NEW, lag=122, after=3, polls=5, poll_times_ms=polled(1.5, 3.5), **FILLING, config=LAB_REBUILT),
    case("rebuilt, first polled long after",      "0001 0101 0001 1011 0000 0", STALL,   "stopped_but_alive",  [], FIRST_LATE, lag=122, after=2.5, polls=5, poll_times_ms=polled(11, 13), **FILLING, config=LAB_REBUILT),
    case("rebuilt, its one poll since",           "0001 0001 0001 101? 0000 0", OK,      "not_enough_data",    [], FIRST_ON_NEW, lag=42, after=0.5, polls=1, poll_times_ms=(MIN,), latest=42, config=BURROW_REBUILT),
    case("rebuilt, one commit, a window of polls", "0001 0101 0001 101? 0000 0", STOP,   "stopped",            [], "5000:5 10:5", lag=60, after=6, config=SINCE_MINUTE, polls=12, poll_times_ms=polled(1.5, 8)),
    # Share groups (KIP-932, queues): the partition's start offset is the commit (records
    # below it acknowledged or archived), its liveness a member holding it (docs/EVALUATOR.md).
    case("share: queue drained",                  "0001 0110 0010 1001 0000 0", OK,      "within_allowed_lag", [], "100:0 110:0 120:0 130:0 140:0", alive=True, share=True),
    case("share: filling while members fetch",    "0001 0100 0000 1001 0000 0", WARN,    "lag_rising",         [SLOW_CONSUMER], "100:5 110:8 120:11 130:14 140:17", lag=17, alive=True, share=True),
    case("share: records waiting, no member",     "0001 0100 0001 1010 0000 0", STOP,    "dead_consumer",      [DEAD_CONSUMER], FROZEN, lag=10, after=2, alive=False, share=True),
    case("share: start offset held, members on",  "0001 0100 0001 1001 0000 0", STALL,   "stalled_but_alive",  [], FROZEN, lag=10, alive=True, share=True),
    case("share: start offset silent, members on", "0001 0101 0000 1011 0000 0", STALL,   "stopped_but_alive",  [], STEADY, lag=5, after=10, alive=True, share=True),
    case("share: filling, lag an upper bound",     "0001 0100 0000 1001 0000 0", WARN,    "lag_rising",         [SLOW_CONSUMER], "100:5 110:8 120:11 130:14 140:17", lag=17, alive=True, share=True, lag_upper_bound=True),
    # A queue's records (__share_group_state): one delivered again and again is a poison
    # message, WARN while the queue moves (STALL or STOP rows keep their say), and one
    # redelivered until archived in the window too, even once the queue is drained.
    case("share: record redelivered, queue moving", "0001 0100 0000 1001 0001 0", WARN,   "redelivering",       [POISON_MESSAGE], STEADY, lag=5, alive=True, share=True, **POISON),
    case("share: record delivered once, come back", "0001 0100 0000 1001 0000 0", WARN,   "lag_rising",         [SLOW_CONSUMER], STEADY, lag=5, alive=True, share=True, share_redelivered_offset=120, share_redelivered_count=1),
    case("share: poison holds the start offset",  "0001 0100 0001 1001 0001 0", STALL,   "stalled_but_alive",  [POISON_MESSAGE], FROZEN, lag=10, alive=True, share=True, **POISON),
    case("share: overdue, poison redelivered",    "0001 0100 1010 1011 0011 0", STALL,   "overdue_but_alive",  [POISON_MESSAGE], CAUGHT_UP, lag=30, after=3.5, alive=True, latest_offsets=WAITING, share=True, **POISON),
    case("share: archived in the window, drained", "0001 0110 0010 1001 0000 1", WARN,   "archived_caught_up", [POISON_MESSAGE], CAUGHT_UP, alive=True, share=True, **archived(2.5 * MIN)),
    case("share: archived before the window",     "0001 0110 0010 1001 0000 0", OK,      "within_allowed_lag", [], CAUGHT_UP, alive=True, share=True, **archived(0.5 * MIN)),
    case("share: rejected at its first delivery", "0001 0110 0010 1001 0000 0", OK,      "within_allowed_lag", [], CAUGHT_UP, alive=True, share=True, **archived(2.5 * MIN, count=1)),
    case("share: archived, caught up at the first", "0001 0100 0010 1001 0000 1", WARN,   "record_archived",    [POISON_MESSAGE], "100:0 110:5 120:6 130:7 140:8", lag=10, alive=True, share=True, **archived(2.5 * MIN)),
    case("share: archived, another redelivered",  "0001 0100 0000 0001 0001 1", WARN,    "redelivering",       [POISON_MESSAGE, POISON_MESSAGE], CATCHING, lag=14, alive=True, share=True, **{**POISON, **archived(2.5 * MIN)}),
    case("share: archived, three of five moves",  "0001 0010 0010 1001 0000 1", OK,      "not_enough_data",    [], "100:0 110:0 120:0", config=STRICT, alive=True, share=True, **archived(1.5 * MIN)),
    case("share: archived, then no member",       "0001 0100 0001 1010 0000 1", STOP,    "dead_consumer",      [DEAD_CONSUMER, POISON_MESSAGE], FROZEN, lag=10, after=2, alive=False, share=True, **archived(2.5 * MIN)),
    case("share: archived, limit unknown",        "0001 0100 0000 0001 0000 1", WARN,    "record_archived",    [POISON_MESSAGE], CATCHING, lag=14, alive=True, share=True, **archived(2.5 * MIN, count=4, limit=None)),
    case("not a queue: share figures unread",     "0001 0100 0001 1001 0000 0", STALL,   "stalled_but_alive",  [], FROZEN, lag=10, alive=True, **{**POISON, **archived(2.5 * MIN)}),
]
# fmt: on
BY_NAME = {c.name: c for c in CASES}


# The forecast's figure (seconds before retention may delete unread messages), stored
# whatever the horizon; every other row has none (no topic settings given, or no forecast).
RETENTION_LEFT = {
    "retention soon, catching up": 60.0,
    "retention soon, lag rising": 60.0,
    "retention soon, topology restarted": 60.0,
    "already past retention, stalled": 0.0,
    "retention a week off": 604_560.0,
    "retention soon, horizon 0 (off)": 60.0,
}


@pytest.mark.parametrize("row", CASES, ids=[c.name for c in CASES])
def test_row(row: Case) -> None:
    _, _, decision = row.judged()
    assert decision.facts == row.expected_facts()
    assert (decision.rule, decision.status) == (row.rule, row.status)
    assert decision.codes == row.codes
    assert decision.retention.seconds_left == RETENTION_LEFT.get(row.name)


def test_retention_risk_cites_the_forecast() -> None:
    _, _, decision = BY_NAME["already past retention, stalled"].judged()
    (risk,) = [d for d in decision.diagnoses if d.code == RETENTION_RISK]
    assert risk.evidence == {"seconds_left": 0.0, "retention_s": 300.0, "time_lag_s": 400.0,
                             "threshold_s": 3600, "expiring": True}  # fmt: skip


def test_every_rule_of_the_table_has_a_row() -> None:
    assert {c.rule for c in CASES} == {r.id for r in RULES}


def test_every_diagnosis_has_a_row() -> None:
    codes = {code for c in CASES for code in c.codes}
    assert codes == {
        SOURCE_UNREACHABLE, OUT_OF_RANGE, DEAD_CONSUMER, POISON_MESSAGE, PENDING_LEAK,
        BACKPRESSURE, SLOW_CONSUMER, REBALANCING, REBALANCE_STORM, SKIPPED_DATA,
        TOPOLOGY_RESTARTED, SPOUT_ID_COLLISION, RETENTION_RISK,
    }  # fmt: skip


def test_rule_ids_are_unique_and_the_last_row_always_holds() -> None:
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids))
    everything_false = Facts(**{name: False for name in FIELDS})
    assert RULES[-1].when(everything_false)


@pytest.mark.parametrize("row", CASES, ids=[c.name for c in CASES])
def test_the_verdict_is_the_decision(row: Case) -> None:
    """evaluate_partition adds only the sentence (and hides a lag that cannot be stated)."""
    window, now, decision = row.judged()
    verdict = evaluate_partition(window, row.config, now)
    assert (verdict.status, verdict.diagnosis) == (decision.status, decision.diagnoses)
    assert verdict.lag == (None if decision.lag < 0 else decision.lag)
    assert verdict.retention_left_s == decision.retention.seconds_left


# Neighbouring rules that can never both hold, so their order is free.
EXCLUSIVE = {
    ("outage_grace", "no_commits"): "an outage since the commit needs a commit",
    ("no_commits", "out_of_range"): "out of range needs a commit",
    ("dead_consumer", "stopped_but_alive"): "dead and alive",
    ("stalled_and_dead", "stalled_but_alive"): "dead and alive",
    ("stalled", "keeps_pace"): "an unchanged offset reads no batch between polls",
}
NEIGHBOURS = [(a.id, b.id) for a, b in zip(RULES, RULES[1:], strict=False)]


def test_the_free_pairs_are_neighbours() -> None:
    assert set(EXCLUSIVE) <= set(NEIGHBOURS)


@pytest.mark.parametrize(
    "at",
    [i for i, pair in enumerate(NEIGHBOURS) if pair not in EXCLUSIVE],
    ids=[f"{a}-{b}" for a, b in NEIGHBOURS if (a, b) not in EXCLUSIVE],
)
def test_moving_a_rule_past_its_neighbour_fails_a_row(
    at: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    pair = NEIGHBOURS[at]
    swapped = list(RULES)
    swapped[at], swapped[at + 1] = swapped[at + 1], swapped[at]
    monkeypatch.setattr(decide_module, "RULES", tuple(swapped))

    def still_right(row: Case) -> bool:
        _, _, decision = row.judged()
        return (decision.rule, decision.status, decision.codes) == (row.rule, row.status, row.codes)

    assert not all(still_right(row) for row in CASES), f"no row has both {pair} true"
