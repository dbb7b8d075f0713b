"""Where a partition's status is decided: the facts of its window, then one ordered table.

Burrow's ``caching.go`` decides in one short function that calls named predicates and returns
a status with no text, and its test is a table whose rows state every predicate's value and
the status. This module keeps that shape while adding evidence Burrow never has:

1. ``facts_of`` computes, once per decision, the value of every predicate the table reads
   (``Facts``: booleans, and liveness, which may be unknown). The rows read only ``Facts``.
2. ``RULES`` is read top to bottom and the first row whose condition holds decides: its status
   and its id. The order *is* the logic (a source down or figures too old before anything
   else, a dead consumer before Burrow's STOP, Burrow's rules 3 to 8 in his order), so a
   condition need not repeat what an earlier row already excluded.
3. The row names the diagnoses that explain it (``finds``); their evidence is gathered for that
   row only, and the window's event diagnoses follow on every verdict, then RETENTION_RISK
   when ``retention_at_risk`` holds: a forecast on any status, which decides no row (a
   consumer catching up too slowly is OK, and about to lose messages all the same).

Some predicates do run twice: the fact keeps only whether a predicate holds, so the finders
of step 3 call again the few whose answer is also the evidence (``out_of_range``'s bound,
``collection_gap``'s time, ``spout_at_cap``'s share, through ``state_diagnoses``), and
``reasons`` calls again those whose figures a sentence cites (the rewind, the commit that was
caught up, the jitter, liveness). They are pure and cheap, and this happens for the deciding
row only; carrying every predicate's evidence on ``Facts`` would cost every verdict more and
make the table's rows harder to state.

A ``Decision`` has no sentence: ``reasons`` renders one from the rule id and the figures, so a
change of wording never touches the rules, and a test of the rules never depends on wording.

To add a rule: a predicate in ``rules``, its value in ``Facts`` and ``facts_of``, a row in
``RULES`` at the place where it must win over the rows below it, a sentence in
``reasons._BASES``, and a row in ``tests/spark_jobs/test_decide_table.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from spark_jobs.evaluator.diagnoses import (
    event_diagnoses,
    share_diagnoses,
    slow_consumer,
    state_diagnoses,
)
from spark_jobs.evaluator.retention import (
    NO_FORECAST,
    RetentionForecast,
    at_risk,
    retention_risk,
    time_to_retention,
)
from spark_jobs.evaluator.rules import (
    build_window,
    collection_gap,
    current_lag,
    down_since_commit,
    find_unrecovered_rewind,
    had_lag_within_allowed,
    has_stopped_committing,
    is_commit_overdue,
    lag_never_decreased,
    lag_rise_within_jitter,
    liveness,
    missed_commits,
    offsets_unchanged,
    out_of_range,
    record_archived,
    record_redelivering,
    required_share,
    spout_at_cap,
    was_caught_up_recently,
    watched_share,
    window_complete,
)
from spark_jobs.evaluator.types import (
    DEAD_CONSUMER,
    ERR,
    OK,
    OUT_OF_RANGE,
    REWIND,
    SLOW_CONSUMER,
    SOURCE_UNREACHABLE,
    STALL,
    STOP,
    UNKNOWN,
    WARN,
    Commit,
    Diagnosis,
    EvaluatorConfig,
    PartitionWindow,
)

__all__ = [
    "RULES", "SHARE_STATE", "SPOUT_STATE", "Decision", "Facts", "Rule", "decide", "facts_of",
    "since_history",
]  # fmt: skip

# In a rule's ``finds``: the spout's state diagnoses (POISON_MESSAGE, PENDING_LEAK,
# BACKPRESSURE), whichever the figures show; none of them changes the status.
SPOUT_STATE = "SPOUT_STATE"
# In a rule's ``finds``: a share group's poison records (``diagnoses.share_diagnoses``).
SHARE_STATE = "SHARE_STATE"


@dataclass(frozen=True, slots=True)
class Facts:
    """Every predicate's value for one window (empty window: the commit predicates are False).

    Rule numbers are SPEC §4's (Burrow's); the others are evidence Burrow lacks.
    """

    stale: bool  # the source could not be reached at the newest poll: the last known figures
    stale_gap: bool  # nothing collected for several poll intervals: the figures are old
    source_down_since_commit: bool  # an outage since the commit, within its grace
    has_commits: bool
    out_of_range: bool  # the last commit lies outside [earliest, latest]
    # rule 1: commits, or polls that watched the window, reach the minimum (all of a window for
    # one watched from its cluster's history start: ``rules.required_share``)
    enough_data: bool
    within_allowed_lag: bool  # rule 2, with the lag fresh from the broker's latest offset
    stopped_committing: bool  # rule 3: silence longer than the window's span
    caught_up_recently: bool  # rule 3's exception: a recent broker offset <= the last commit
    rewound: bool  # rule 4: a rewind no later commit climbed back from
    had_allowed_lag: bool  # rule 5: a commit of the window had lag <= allowed
    offsets_unchanged: bool  # rule 6
    lag_never_decreased: bool  # rule 7
    rise_within_jitter: bool  # rule 7, poll-measured lags: the rise is within one batch
    commit_overdue: bool  # the next commit is later than the window's mean interval
    alive: bool | None  # someone works on the partition; None: nobody can tell
    at_spout_cap: bool  # the spout's tuples in flight sat at its cap most of the window
    # Time-based retention may delete unread messages within ``retention_risk_s`` (current
    # figures only): RETENTION_RISK on any status, after the events; it decides no row.
    retention_at_risk: bool
    # Missed three of its own commit intervals with messages waiting (``rules.missed_commits``).
    missed_commits: bool
    # A share group's record redelivered now (``rules.record_redelivering``), and one
    # redelivered until archived in the window (``rules.record_archived``); else False.
    redelivering: bool = False
    record_archived: bool = False

    @property
    def stopped(self) -> bool:
        """Burrow's rule 3 whole: stopped committing, and not caught up lately."""
        return self.stopped_committing and not self.caught_up_recently

    @property
    def frozen(self) -> bool:
        """The commit is not moving, by offset or by time: when spout figures mean trouble."""
        return self.offsets_unchanged or self.stopped_committing or self.missed_commits

    @property
    def dead(self) -> bool:
        return self.alive is False


@dataclass(frozen=True, slots=True)
class Rule:
    """A row of the table: when ``when`` holds (and no row above did), the status is
    ``status``; ``finds`` lists the diagnoses that explain it, ahead of the window's events."""

    id: str
    status: str
    finds: tuple[str, ...]
    when: Callable[[Facts], bool]


# The table. "Burrow n" rows are his rule n; "n, with ..." rows refine it with evidence he
# lacks, and unnumbered rows are such evidence alone. A condition may rely on the rows above it
# having failed (``stopped`` is reached only by a consumer not known alive).
# fmt: off
RULES: tuple[Rule, ...] = (
    #    id                    status    diagnoses, ahead of the events
    #        condition on the facts ``f``
    Rule("source_unreachable", UNKNOWN, (SOURCE_UNREACHABLE,),
         lambda f: f.stale),
    Rule("collection_gap",     UNKNOWN, (SOURCE_UNREACHABLE,),
         lambda f: f.stale_gap),
    Rule("outage_grace",       UNKNOWN, (SOURCE_UNREACHABLE,),
         lambda f: f.source_down_since_commit),
    Rule("no_commits",         OK,      (),
         lambda f: not f.has_commits),
    Rule("out_of_range",       ERR,     (OUT_OF_RANGE,),
         lambda f: f.out_of_range),
    Rule("not_enough_data",    OK,      (),                           # Burrow 1
         lambda f: not f.enough_data),
    Rule("archived_caught_up", WARN,    (SHARE_STATE,),               # a queue's, before 2
         lambda f: f.record_archived and f.within_allowed_lag),
    Rule("within_allowed_lag", OK,      (),                           # Burrow 2
         lambda f: f.within_allowed_lag),
    Rule("dead_consumer",      STOP,    (DEAD_CONSUMER, SPOUT_STATE, SHARE_STATE),
         lambda f: f.dead and f.commit_overdue),
    Rule("stopped_but_alive",  STALL,   (SPOUT_STATE, SHARE_STATE),   # 3, with liveness
         lambda f: f.stopped and f.alive is True),
    Rule("stopped",            STOP,    (SPOUT_STATE, SHARE_STATE),   # Burrow 3
         lambda f: f.stopped),
    Rule("rewind",             REWIND,  (SPOUT_STATE,),               # Burrow 4
         lambda f: f.rewound),
    Rule("overdue_but_alive",  STALL,   (SPOUT_STATE, SHARE_STATE),   # 3, with liveness
         lambda f: f.missed_commits and f.alive is True),
    Rule("redelivering",       WARN,    (SHARE_STATE,),               # a queue's, before 5
         lambda f: f.redelivering and not f.offsets_unchanged),
    Rule("record_archived",    WARN,    (SHARE_STATE,),               # a queue's, before 5
         lambda f: f.record_archived and not f.offsets_unchanged),
    Rule("caught_up",          OK,      (),                           # Burrow 5
         lambda f: f.had_allowed_lag),
    Rule("stalled_and_dead",   STOP,    (DEAD_CONSUMER, SPOUT_STATE, SHARE_STATE), # 6, liveness
         lambda f: f.offsets_unchanged and f.dead),
    Rule("stalled_but_alive",  STALL,   (SPOUT_STATE, SHARE_STATE),   # Burrow 6
         lambda f: f.offsets_unchanged and f.alive is True),
    Rule("stalled",            STALL,   (SPOUT_STATE, SHARE_STATE),   # Burrow 6
         lambda f: f.offsets_unchanged),
    Rule("keeps_pace",         OK,      (),                           # 7, with polls
         lambda f: f.lag_never_decreased and f.rise_within_jitter),
    Rule("lag_rising",         WARN,    (SLOW_CONSUMER, SPOUT_STATE, SHARE_STATE), # Burrow 7
         lambda f: f.lag_never_decreased),
    Rule("backpressured",      WARN,    (SPOUT_STATE,),
         lambda f: f.at_spout_cap),
    Rule("catching_up",        OK,      (),                           # Burrow 8
         lambda f: True),
)
# fmt: on


@dataclass(frozen=True, slots=True)
class Decision:
    """A partition's verdict without its sentence.

    ``commits`` is the window as judged (``build_window`` applied), ``lag`` the current lag the
    rules read (negative: committed beyond latest), ``complete`` Burrow's completeness,
    ``retention`` the retention forecast (``NO_FORECAST`` when the figures are not current).
    """

    status: str
    rule: str
    diagnoses: tuple[Diagnosis, ...]
    facts: Facts
    commits: tuple[Commit, ...]
    lag: int
    complete: float
    retention: RetentionForecast = NO_FORECAST

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(d.code for d in self.diagnoses)


def facts_of(
    window: PartitionWindow,
    commits: Sequence[Commit],
    lag: int,
    config: EvaluatorConfig,
    now_ms: int,
) -> tuple[Facts, Mapping[str, Any], RetentionForecast]:
    """The window's facts, the evidence of its liveness (for ``DEAD_CONSUMER``) and its
    retention forecast (for ``RETENTION_RISK`` and the verdict's figure).

    The forecast is made from current figures only: a window that is stale, or whose
    collection or source was down (the three UNKNOWN rows), has the last known time lag.
    """
    some = bool(commits)
    stopped_committing = some and has_stopped_committing(commits, now_ms)
    unchanged = some and offsets_unchanged(commits)
    missed = some and missed_commits(commits, window.latest_offsets, now_ms)
    alive, alive_evidence = liveness(window, unchanged or stopped_committing or missed)
    jitter = window.polls is not None and lag_rise_within_jitter(commits) is not None
    gap = collection_gap(window, now_ms) is not None
    down = down_since_commit(window, commits, now_ms) is not None
    forecast = NO_FORECAST
    if not (window.stale or gap or down):
        forecast = time_to_retention(
            window.retention_ms, window.cleanup_policy, window.time_lag_s, lag
        )
    facts = Facts(
        stale=window.stale,
        stale_gap=gap,
        source_down_since_commit=down,
        has_commits=some,
        out_of_range=some and out_of_range(window, commits[-1].offset, lag) is not None,
        enough_data=watched_share(window, commits, config) >= required_share(window, config),
        within_allowed_lag=lag <= config.allowed_lag,
        stopped_committing=stopped_committing,
        caught_up_recently=some and was_caught_up_recently(commits, window.latest_offsets),
        rewound=find_unrecovered_rewind(commits) is not None,
        had_allowed_lag=had_lag_within_allowed(commits, config.allowed_lag) is not None,
        offsets_unchanged=unchanged,
        lag_never_decreased=lag_never_decreased(commits),
        rise_within_jitter=jitter,
        commit_overdue=some and is_commit_overdue(commits, now_ms),
        alive=alive,
        at_spout_cap=spout_at_cap(window, config) is not None,
        retention_at_risk=at_risk(forecast.seconds_left, config.retention_risk_s),
        missed_commits=missed,
        redelivering=record_redelivering(window) is not None,
        record_archived=record_archived(window, commits) is not None,
    )
    return facts, alive_evidence, forecast


def since_history(window: PartitionWindow, start_ms: int) -> PartitionWindow:
    """The window without what came before its cluster's history started over (a cluster
    rebuilt under the same name, ``config.history_from_ms``): its commits, polls, outage polls
    and rebalances before ``start_ms`` belong to the old cluster, whose offsets compared with
    the new ones would read as a rewind or a jump over deleted data. When commits are left
    out, only the newest topology instance is kept (instances carry no time: a change across
    the start is no restart seen here). The status job reads no sample before the start
    anyway (``spark_jobs.status``); this makes it the evaluator's rule for any window."""
    if start_ms <= 0:
        return window
    commits = tuple(c for c in window.commits if c.timestamp_ms >= start_ms)
    polls = tuple(t for t in window.poll_times_ms if t >= start_ms)
    cut = len(commits) < len(window.commits)
    return replace(
        window,
        commits=commits,
        poll_times_ms=polls,
        polls=window.polls if not window.poll_times_ms or window.polls is None
        else min(window.polls, len(polls)),
        down_polls_ms=tuple(t for t in window.down_polls_ms if t >= start_ms),
        rebalances_ms=tuple(t for t in window.rebalances_ms if t >= start_ms),
        topology_ids=window.topology_ids[-1:] if cut else window.topology_ids,
    )  # fmt: skip


def decide(window: PartitionWindow, config: EvaluatorConfig, now_ms: int) -> Decision:
    """The first row of ``RULES`` that holds for the window's facts, with its diagnoses.

    With ``earliest``, ``latest``, ``alive``, ``spout`` and the optional extras unknown, this is
    Burrow's evaluation exactly: the rows that use more evidence never hold. Nothing before
    the cluster's history started over is read (``since_history``).
    """
    window = since_history(window, config.history_from_ms)
    commits = window.commits
    if len(commits) > config.window or config.min_distance_s > 0:
        commits = build_window(commits, config)
    lag = current_lag(window, commits)
    facts, alive_evidence, forecast = facts_of(window, commits, lag, config, now_ms)
    rule = next(row for row in RULES if row.when(facts))
    found = _findings(rule, window, commits, lag, config, now_ms, facts, alive_evidence)
    found.extend(event_diagnoses(window, commits, config))
    if facts.retention_at_risk:
        risk = retention_risk(forecast, config.retention_risk_s)
        assert risk is not None, "retention_at_risk without a risk"
        found.append(risk)
    complete = window_complete(commits, config)
    return Decision(rule.status, rule.id, tuple(found), facts, commits, lag, complete, forecast)


def _findings(
    rule: Rule,
    window: PartitionWindow,
    commits: Sequence[Commit],
    lag: int,
    config: EvaluatorConfig,
    now_ms: int,
    facts: Facts,
    alive_evidence: Mapping[str, Any],
) -> list[Diagnosis]:
    """The diagnoses ``rule.finds`` names, in its order, each with its evidence."""
    found: list[Diagnosis] = []
    for code in rule.finds:
        if code == SPOUT_STATE:
            found.extend(state_diagnoses(window, commits, config, facts.frozen))
        elif code == SHARE_STATE:
            found.extend(share_diagnoses(window, commits))
        elif code == SLOW_CONSUMER:
            slow = slow_consumer(commits, lag)
            if slow is not None:
                found.append(slow)
        elif code == SOURCE_UNREACHABLE:
            evidence = {
                "stale_since_ms": _stale_since(window, commits, now_ms, facts),
                "last_known_lag": lag,
                "committed": commits[-1].offset if commits else None,
            }
            found.append(Diagnosis(SOURCE_UNREACHABLE, evidence))
        elif code == OUT_OF_RANGE:
            found.append(Diagnosis(OUT_OF_RANGE, out_of_range(window, commits[-1].offset, lag)))
        elif code == DEAD_CONSUMER:
            last = commits[-1]
            idle_s = (now_ms - last.timestamp_ms) / 1000
            evidence = {**alive_evidence, "lag": lag, "committed": last.offset, "idle_s": idle_s}
            found.append(Diagnosis(DEAD_CONSUMER, evidence))
        else:
            raise ValueError(f"rule {rule.id}: no finder for {code}")
    return found


def _stale_since(
    window: PartitionWindow, commits: Sequence[Commit], now_ms: int, facts: Facts
) -> int | None:
    """Since when the figures are not current: the source's own word, else the newest poll
    (a gap in collection), else the outage's first poll."""
    if facts.stale:
        return window.stale_since_ms
    if facts.stale_gap:
        return collection_gap(window, now_ms)
    return down_since_commit(window, commits, now_ms)
