"""One partition's verdict, and its group's (SPEC §4).

The partition's verdict is the decision (``decide``: status, rule, diagnoses) and its sentence
(``reasons``), put together once here so every caller, the Spark job as well as
``evaluate_window``, gets the same answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from spark_jobs.evaluator.decide import decide, since_history
from spark_jobs.evaluator.reasons import reason
from spark_jobs.evaluator.types import (
    ERR,
    OK,
    REWIND,
    STALL,
    STOP,
    UNKNOWN,
    WARN,
    EvaluatorConfig,
    GroupVerdict,
    PartitionVerdict,
    PartitionWindow,
)

# Group status is the worst partition status; like Burrow, STOP, STALL and REWIND count as ERR
# at group level. UNKNOWN ranks above OK (the group cannot claim health it cannot see) and
# below WARN (an unreachable source is not a lagging consumer).
_GROUP_RANK = {OK: 0, UNKNOWN: 1, WARN: 2, ERR: 3}
_GROUP_STATUS = {OK: OK, UNKNOWN: UNKNOWN, WARN: WARN, ERR: ERR, STOP: ERR, STALL: ERR, REWIND: ERR}


def evaluate_partition(
    window: PartitionWindow, config: EvaluatorConfig, now_ms: int
) -> PartitionVerdict:
    """Status, completeness, diagnoses and reason of one partition (SPEC §4).

    ``lag`` is left out (None) only where it cannot be stated: a commit beyond the latest
    offset (ERR, or read after that offset at its first poll: ``rules.out_of_range``).
    """
    window = since_history(window, config.history_from_ms)  # the reason reads it too
    decision = decide(window, config, now_ms)
    lag: int | None = decision.lag
    if decision.lag < 0:
        lag = None
    sentence = reason(decision, window, config, now_ms)
    return PartitionVerdict(
        window.id, decision.status, decision.complete, decision.diagnoses, sentence, lag,
        decision.retention.seconds_left,
    )  # fmt: skip


def evaluate_group(group_id: str, verdicts: Sequence[PartitionVerdict]) -> GroupVerdict:
    """Burrow's group rules: the worst partition (STOP, STALL, REWIND shown as ERR), completeness
    as the share of partitions whose window is full, and the sum of the partitions' lags.

    A partition with no statable lag (committed beyond latest) adds nothing to ``total_lag``;
    it is already ERR. A group without partitions is OK with completeness 0, as in Burrow.
    """
    status = OK
    full = 0
    total = 0
    for verdict in verdicts:
        mapped = _GROUP_STATUS[verdict.status]
        if _GROUP_RANK[mapped] > _GROUP_RANK[status]:
            status = mapped
        if verdict.complete >= 1.0:
            full += 1
        if verdict.lag is not None and verdict.lag > 0:
            total += verdict.lag
    complete = full / len(verdicts) if verdicts else 0.0
    return GroupVerdict(group_id, status, complete, total, tuple(verdicts))
