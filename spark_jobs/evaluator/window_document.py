"""The ``evaluate_window`` document: JSON in, verdicts as JSON out (docs/EVALUATOR.md).

Apart from the rules because it is the one place that trusts nothing: every field is checked
and a bad one is named by its path, while the rules assume well-formed windows (the Spark job
builds them itself and never goes through here).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from spark_jobs.evaluator.evaluate import evaluate_group, evaluate_partition
from spark_jobs.evaluator.types import (
    Commit,
    EvaluationRequest,
    EvaluatorConfig,
    GroupVerdict,
    GroupWindows,
    PartitionVerdict,
    PartitionWindow,
    SpoutSeries,
    WindowInputError,
)


def evaluate_request(
    request: EvaluationRequest,
) -> tuple[list[PartitionVerdict], list[GroupVerdict]]:
    """Every partition and group of a parsed ``evaluate_window`` document."""
    config, now = request.config, request.now_ms
    partitions = [evaluate_partition(p, config, now) for p in request.partitions]
    groups = [
        evaluate_group(g.id, [evaluate_partition(p, config, now) for p in g.partitions])
        for g in request.groups
    ]
    return partitions, groups


# ---------------------------------------------------------------------------------------------
# JSON in and out


def verdict_to_json(verdict: PartitionVerdict) -> dict[str, Any]:
    return {
        "id": verdict.id,
        "status": verdict.status,
        "complete": verdict.complete,
        "diagnosis": [{"code": d.code, "evidence": d.evidence} for d in verdict.diagnosis],
        "reason": verdict.reason,
        "retention_left_s": verdict.retention_left_s,
    }


def verdicts_to_json(
    partitions: Sequence[PartitionVerdict], groups: Sequence[GroupVerdict]
) -> dict[str, Any]:
    """The ``evaluate_window`` output; each group also lists its partitions' verdicts, since
    that is where a user finds why the group has its status."""
    return {
        "partitions": [verdict_to_json(v) for v in partitions],
        "groups": [
            {
                "id": g.id,
                "status": g.status,
                "complete": g.complete,
                "total_lag": g.total_lag,
                "partitions": [verdict_to_json(v) for v in g.partitions],
            }
            for g in groups
        ],
    }


def evaluate_document(doc: object) -> dict[str, Any]:
    """Parse, evaluate and render one ``evaluate_window`` document; raises WindowInputError."""
    return verdicts_to_json(*evaluate_request(parse_request(doc)))


def _object(value: object, path: str, allowed: frozenset[str], required: Iterable[str]) -> dict:
    if not isinstance(value, dict):
        raise WindowInputError(path or "document", "must be an object")
    for key in value:
        if key not in allowed:
            raise WindowInputError(f"{path}.{key}" if path else str(key), "unknown field")
    for key in required:
        if key not in value:
            raise WindowInputError(f"{path}.{key}" if path else key, "is required")
    return value


# Offsets, times and counts are 64-bit in Kafka and in the sample log; JSON has no limit, and a
# larger integer would overflow the evaluator's float arithmetic instead of being refused.
_INT64_MAX = 2**63 - 1


def _int(value: object, path: str, minimum: int | None = 0, nullable: bool = False) -> Any:
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise WindowInputError(path, "must be an integer" + (" or null" if nullable else ""))
    if minimum is not None and value < minimum:
        raise WindowInputError(path, f"must be >= {minimum}")
    if not -_INT64_MAX - 1 <= value <= _INT64_MAX:
        raise WindowInputError(path, "must fit in 64 bits")
    return value


def _number(value: object, path: str, low: float, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WindowInputError(path, "must be a number")
    try:
        number = float(value)
    except OverflowError:  # an integer beyond a double
        raise WindowInputError(path, "must be a finite number") from None
    if not math.isfinite(number):  # NaN compares false with every bound
        raise WindowInputError(path, "must be a finite number")
    if number < low or (high is not None and number > high):
        bounds = f"between {low:g} and {high:g}" if high is not None else f">= {low:g}"
        raise WindowInputError(path, f"must be {bounds}")
    return number


def _maybe_number(value: object, path: str) -> float | None:
    return None if value is None else _number(value, path, 0.0)


def _maybe_string(value: object, path: str) -> str | None:
    return None if value is None else _string(value, path)


def _bool(value: object, path: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise WindowInputError(path, "must be true, false or null")
    return value


def _string(value: object, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise WindowInputError(path, "must be a non-empty string")
    return value


def _list(value: object, path: str, nullable: bool = False) -> list:
    if value is None and nullable:
        return []
    if not isinstance(value, list):
        raise WindowInputError(path, "must be a list" + (" or null" if nullable else ""))
    return value


def _ints(value: object, path: str, nullable: bool = False) -> tuple[int, ...]:
    items = _list(value, path, nullable)
    return tuple(_int(v, f"{path}[{i}]") for i, v in enumerate(items))


def _times(value: object, path: str) -> tuple[int, ...]:
    """Times in ms, oldest first: the rules read spacings and the newest from them."""
    times = _ints(value, path, nullable=True)
    for i in range(1, len(times)):
        if times[i] < times[i - 1]:
            raise WindowInputError(f"{path}[{i}]", "older than the time before it (oldest first)")
    return times


def _strings(value: object, path: str) -> tuple[str, ...]:
    items = _list(value, path, nullable=True)
    return tuple(_string(v, f"{path}[{i}]") for i, v in enumerate(items))


_CONFIG_FIELDS = frozenset(
    {
        "allowed_lag",
        "minimum_complete",
        "window",
        "min_distance_s",
        "rebalance_storm_count",
        "backpressure_share",
    }
)
# A document's config may also set RETENTION_RISK's horizon; a cluster's evaluator thresholds
# may not (``parse_config``): the cluster has its own ``retention_risk_s`` field.
_DOCUMENT_CONFIG_FIELDS = _CONFIG_FIELDS | {"retention_risk_s"}
_COMMIT_FIELDS = frozenset({"offset", "timestamp_ms", "lag", "earliest", "latest"})
_SPOUT_FIELDS = frozenset({"pending", "failed", "acked"})
_PARTITION_REQUIRED = ("id", "commits", "latest_offsets", "current_lag")
# A share group's records (``PartitionWindow``'s fields of these names): non-negative integers.
SHARE_FIELDS = (
    "share_redelivered_offset", "share_redelivered_count", "share_archived_offset",
    "share_archived_count", "share_archived_ms", "share_delivery_limit",
)  # fmt: skip
_PARTITION_FIELDS = frozenset(
    {
        *_PARTITION_REQUIRED,
        "earliest",
        "latest",
        "alive",
        "spout",
        "stale",
        "stale_since_ms",
        "max_spout_pending",
        "smallest_failed_offset",
        "spout_pending",
        "rebalances_ms",
        "rebalancing",
        "owner_missing_polls",
        "topology_ids",
        "topics",
        "polls",
        "poll_times_ms",
        "down_polls_ms",
        "time_lag_s",
        "retention_ms",
        "cleanup_policy",
        "share",
        "lag_upper_bound",
        *SHARE_FIELDS,
    }
)
_GROUP_FIELDS = frozenset({"id", "partitions"})
_REQUEST_FIELDS = frozenset({"config", "now_ms", "partitions", "groups"})


def parse_config(value: object, path: str = "config", *, document: bool = False) -> EvaluatorConfig:
    """An EvaluatorConfig from its JSON object; absent fields take the defaults.

    ``document``: an ``evaluate_window`` document's config, which may set ``retention_risk_s``
    too; a cluster's thresholds (the caller without it) may not, having a field of their own.
    """
    if value is None:
        return EvaluatorConfig()
    doc = _object(value, path, _DOCUMENT_CONFIG_FIELDS if document else _CONFIG_FIELDS, ())
    kwargs: dict[str, Any] = {}
    if "retention_risk_s" in doc:
        kwargs["retention_risk_s"] = _int(doc["retention_risk_s"], f"{path}.retention_risk_s")
    if "allowed_lag" in doc:
        kwargs["allowed_lag"] = _int(doc["allowed_lag"], f"{path}.allowed_lag")
    if "minimum_complete" in doc:
        kwargs["minimum_complete"] = _number(
            doc["minimum_complete"], f"{path}.minimum_complete", 0.0, 1.0
        )
    if "window" in doc:
        kwargs["window"] = _int(doc["window"], f"{path}.window", minimum=1)
    if "min_distance_s" in doc:
        kwargs["min_distance_s"] = _number(doc["min_distance_s"], f"{path}.min_distance_s", 0.0)
    if "rebalance_storm_count" in doc:
        kwargs["rebalance_storm_count"] = _int(
            doc["rebalance_storm_count"], f"{path}.rebalance_storm_count"
        )
    if "backpressure_share" in doc:
        share = _number(doc["backpressure_share"], f"{path}.backpressure_share", 0.0, 1.0)
        if share == 0.0:
            raise WindowInputError(f"{path}.backpressure_share", "must be above 0")
        kwargs["backpressure_share"] = share
    return EvaluatorConfig(**kwargs)


def _parse_commits(value: object, path: str) -> tuple[Commit, ...]:
    commits = []
    previous_ms: int | None = None
    for i, item in enumerate(_list(value, path)):
        here = f"{path}[{i}]"
        doc = _object(item, here, _COMMIT_FIELDS, ("offset", "timestamp_ms"))
        timestamp = _int(doc["timestamp_ms"], f"{here}.timestamp_ms")
        if previous_ms is not None and timestamp < previous_ms:
            raise WindowInputError(
                f"{here}.timestamp_ms", "older than the commit before it (commits go oldest first)"
            )
        previous_ms = timestamp
        commits.append(
            Commit(
                offset=_int(doc["offset"], f"{here}.offset"),
                timestamp_ms=timestamp,
                # Negative where the commit is beyond the log end (a reset topic, a commit
                # by hand): accepted, and judged ERR by the rules (OUT_OF_RANGE).
                lag=_int(doc.get("lag"), f"{here}.lag", minimum=None, nullable=True),
                earliest=_int(doc.get("earliest"), f"{here}.earliest", nullable=True),
                latest=_int(doc.get("latest"), f"{here}.latest", nullable=True),
            )
        )
    return tuple(commits)


def _parse_spout(value: object, path: str) -> SpoutSeries | None:
    if value is None:
        return None
    doc = _object(value, path, _SPOUT_FIELDS, ())
    return SpoutSeries(
        pending=_ints(doc.get("pending"), f"{path}.pending", nullable=True),
        failed=_ints(doc.get("failed"), f"{path}.failed", nullable=True),
        acked=_ints(doc.get("acked"), f"{path}.acked", nullable=True),
    )


def parse_partition(value: object, path: str = "partition") -> PartitionWindow:
    """A PartitionWindow from its JSON object; ``path`` prefixes every error message."""
    doc = _object(value, path, _PARTITION_FIELDS, _PARTITION_REQUIRED)
    stale = _bool(doc.get("stale"), f"{path}.stale")
    return PartitionWindow(
        id=_string(doc["id"], f"{path}.id"),
        commits=_parse_commits(doc["commits"], f"{path}.commits"),
        latest_offsets=_ints(doc["latest_offsets"], f"{path}.latest_offsets"),
        current_lag=_int(doc["current_lag"], f"{path}.current_lag", minimum=None),
        earliest=_int(doc.get("earliest"), f"{path}.earliest", nullable=True),
        latest=_int(doc.get("latest"), f"{path}.latest", nullable=True),
        alive=_bool(doc.get("alive"), f"{path}.alive"),
        spout=_parse_spout(doc.get("spout"), f"{path}.spout"),
        stale=bool(stale),
        stale_since_ms=_int(doc.get("stale_since_ms"), f"{path}.stale_since_ms", nullable=True),
        max_spout_pending=_int(
            doc.get("max_spout_pending"), f"{path}.max_spout_pending", minimum=1, nullable=True
        ),
        smallest_failed_offset=_int(
            doc.get("smallest_failed_offset"), f"{path}.smallest_failed_offset", nullable=True
        ),
        spout_pending=_ints(doc.get("spout_pending"), f"{path}.spout_pending", nullable=True),
        rebalances_ms=_ints(doc.get("rebalances_ms"), f"{path}.rebalances_ms", nullable=True),
        rebalancing=_bool(doc.get("rebalancing"), f"{path}.rebalancing"),
        owner_missing_polls=_int(
            doc.get("owner_missing_polls"), f"{path}.owner_missing_polls", nullable=True
        ),
        topology_ids=_strings(doc.get("topology_ids"), f"{path}.topology_ids"),
        topics=_strings(doc.get("topics"), f"{path}.topics"),
        polls=_int(doc.get("polls"), f"{path}.polls", minimum=1, nullable=True),
        poll_times_ms=_times(doc.get("poll_times_ms"), f"{path}.poll_times_ms"),
        down_polls_ms=_times(doc.get("down_polls_ms"), f"{path}.down_polls_ms"),
        time_lag_s=_maybe_number(doc.get("time_lag_s"), f"{path}.time_lag_s"),
        # -1: infinite retention, as Kafka says it.
        retention_ms=_int(doc.get("retention_ms"), f"{path}.retention_ms", -1, nullable=True),
        cleanup_policy=_maybe_string(doc.get("cleanup_policy"), f"{path}.cleanup_policy"),
        share=bool(_bool(doc.get("share"), f"{path}.share")),
        lag_upper_bound=bool(_bool(doc.get("lag_upper_bound"), f"{path}.lag_upper_bound")),
        **{name: _int(doc.get(name), f"{path}.{name}", nullable=True) for name in SHARE_FIELDS},
    )


def parse_request(doc: object) -> EvaluationRequest:
    """Validate an ``evaluate_window`` document (already decoded from JSON).

    Unknown fields are refused rather than ignored: a misspelt optional field would otherwise
    silently read as "unknown" and change a verdict without a word.
    """
    top = _object(doc, "", _REQUEST_FIELDS, ("now_ms",))
    config = parse_config(top.get("config"), document=True)
    now_ms = _int(top["now_ms"], "now_ms")
    partitions = tuple(
        parse_partition(p, f"partitions[{i}]")
        for i, p in enumerate(_list(top.get("partitions"), "partitions", nullable=True))
    )
    groups = []
    for i, item in enumerate(_list(top.get("groups"), "groups", nullable=True)):
        here = f"groups[{i}]"
        group = _object(item, here, _GROUP_FIELDS, ("id", "partitions"))
        members = _list(group["partitions"], f"{here}.partitions")
        groups.append(
            GroupWindows(
                id=_string(group["id"], f"{here}.id"),
                partitions=tuple(
                    parse_partition(p, f"{here}.partitions[{j}]") for j, p in enumerate(members)
                ),
            )
        )
    return EvaluationRequest(config, now_ms, partitions, tuple(groups))
