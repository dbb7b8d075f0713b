"""The status evaluator (SPEC §4): why a partition is OK, lagging or stuck, and its group's status.

One implementation for every caller: the Spark status job calls ``evaluate_partition`` once per
partition inside its per-group ``applyInArrow`` function (about 10,000 calls a run), and
``manage.py evaluate_window`` calls it for a user who wants to know why a partition has its
status. So this package is plain Python with no Spark and no Django, and a call allocates
little beyond its answer and the two small records (facts, decision) behind it.

The rules are Burrow's, as SPEC §4 lists them, written as small named predicates in Burrow's
style (``core/internal/evaluator/caching.go``) and combined in one place, the ordered table of
``decide``. Given only commits and broker offsets (liveness unknown), the verdict is exactly
Burrow's. Evidence Burrow never has changes the verdict only where Burrow is known to
go wrong:

- a fresh broker ``latest`` offset recomputes the current lag (Burrow freezes it between
  commits);
- liveness (a group member or owner node holds the partition, a spout's acked/failed counts
  move) decides STALL (alive, not moving) against STOP (dead), and a dead consumer is STOP as
  soon as messages wait, however recent its last zero-lag commit;
- figures that are not current (a source that cannot be reached, a gap in collection, an
  outage since the last commit) give UNKNOWN with ``SOURCE_UNREACHABLE``, never STOP;
- a committed offset outside ``[earliest, latest]`` is ERR, not a negative or clamped lag;
- a window that comes from a poller (``polls`` known) is judged by how long it was watched,
  and its lags, measured at polls rather than at commits, carry the poll's phase in the
  consumer's commit cycle: a rise no larger than one batch between polls is not a WARN;
- the topic's retention settings and the time lag give a retention forecast, and
  ``RETENTION_RISK`` on any status when it is under the cluster's horizon.

Every non-OK verdict carries diagnoses with their evidence where the data allows, and every
verdict carries one plain sentence, ``reason``, citing the figures that decided it.
docs/EVALUATOR.md describes the rules, the input format and the choices made where the
specification is silent.

The package keeps one concern per module, in the order a verdict is made:

- ``types``: the values in and out (windows, config, verdicts, status and diagnosis codes);
- ``rules``: the predicates, each a small named pure function; ``rates`` serves one of them,
  ``retention`` is the forecast;
- ``producer_expiry``: the one rule per topic, PRODUCER_EXPIRY (records a producer gave up on
  reach no partition's window), which the dashboard's readers call;
- ``diagnoses``: the findings that explain a status, with their evidence;
- ``decide``: the facts of a window (every predicate's value, computed once) and the ordered
  table of (condition, status, rule id) that decides; no text;
- ``reasons``: the sentence, rendered afterwards from the rule id and the figures;
- ``evaluate``: the verdict of a partition (decision plus sentence) and of a group;
- ``window_document``: the ``evaluate_window`` JSON, checked field by field.

Callers import from the package, which re-exports what they use.
"""

from __future__ import annotations

from spark_jobs.evaluator.evaluate import evaluate_group, evaluate_partition
from spark_jobs.evaluator.rules import (
    build_window,
    current_lag,
    find_unrecovered_rewind,
    had_lag_within_allowed,
    has_stopped_committing,
    is_commit_overdue,
    lag_never_decreased,
    lag_rise_within_jitter,
    offsets_unchanged,
    was_caught_up_recently,
)
from spark_jobs.evaluator.types import (
    BACKPRESSURE,
    DEAD_CONSUMER,
    ERR,
    OK,
    OUT_OF_RANGE,
    PENDING_LEAK,
    POISON_MESSAGE,
    PRODUCER_EXPIRY,
    REBALANCE_STORM,
    REBALANCING,
    RETENTION_RISK,
    REWIND,
    SKIPPED_DATA,
    SLOW_CONSUMER,
    SOURCE_UNREACHABLE,
    SPOUT_ID_COLLISION,
    STALL,
    STATUSES,
    STOP,
    TOPOLOGY_RESTARTED,
    UNKNOWN,
    WARN,
    Commit,
    Diagnosis,
    EvaluationRequest,
    EvaluatorConfig,
    GroupVerdict,
    GroupWindows,
    PartitionVerdict,
    PartitionWindow,
    SpoutSeries,
    WindowInputError,
)
from spark_jobs.evaluator.window_document import (
    evaluate_document,
    evaluate_request,
    parse_config,
    parse_partition,
    parse_request,
    verdict_to_json,
    verdicts_to_json,
)

__all__ = [
    "BACKPRESSURE",
    "DEAD_CONSUMER",
    "ERR",
    "OK",
    "OUT_OF_RANGE",
    "PENDING_LEAK",
    "POISON_MESSAGE",
    "PRODUCER_EXPIRY",
    "REBALANCE_STORM",
    "REBALANCING",
    "RETENTION_RISK",
    "REWIND",
    "SKIPPED_DATA",
    "SLOW_CONSUMER",
    "SOURCE_UNREACHABLE",
    "SPOUT_ID_COLLISION",
    "STALL",
    "STATUSES",
    "STOP",
    "TOPOLOGY_RESTARTED",
    "UNKNOWN",
    "WARN",
    "Commit",
    "Diagnosis",
    "EvaluationRequest",
    "EvaluatorConfig",
    "GroupVerdict",
    "GroupWindows",
    "PartitionVerdict",
    "PartitionWindow",
    "SpoutSeries",
    "WindowInputError",
    "build_window",
    "current_lag",
    "find_unrecovered_rewind",
    "had_lag_within_allowed",
    "has_stopped_committing",
    "is_commit_overdue",
    "lag_never_decreased",
    "lag_rise_within_jitter",
    "offsets_unchanged",
    "was_caught_up_recently",
    "evaluate_document",
    "evaluate_group",
    "evaluate_partition",
    "evaluate_request",
    "parse_config",
    "parse_partition",
    "parse_request",
    "verdict_to_json",
    "verdicts_to_json",
]
