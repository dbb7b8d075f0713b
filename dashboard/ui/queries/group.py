"""One group: its partitions (one query, then filtered, sorted and paged in Python), members
and their assignment, rebalances, status changes. A fixed number of queries per page.

Members are read through ``dashboard.monitoring.membership`` (as the APIs read them), so rows
stored before KIP-848 support, without instance ids, epochs or targets, show those as unknown.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime
from typing import Any

from django.db.models import Max, OuterRef, Subquery
from django.urls import reverse

from dashboard.monitoring import trends
from dashboard.monitoring.membership import (
    group_type,
    member_details,
    reconciling,
    reconciling_count,
    topology_detail,
)
from dashboard.monitoring.models import ConsumerGroup, PartitionState, RebalanceEvent, StatusChange
from dashboard.monitoring.share_state import SHARE_STATE_COLUMNS, share_state_document
from dashboard.ui.params import PARTITIONS_PER_PAGE, SEVERITY, STATUSES_WORST_FIRST, GroupView
from dashboard.ui.queries.common import diagnosis_codes, no_forecast_reason
from dashboard.whatif import group_report, holdings
from dashboard.whatif.whatif import by_member, label, pairs

_TASK_KINDS = ("active", "standby", "warmup")

# Every partition of the group, light: totals, filters, sort, paging, the assignment view.
LIGHT_COLUMNS = ("id", "topic", "partition", "lag", "time_lag_s", "status", "stale", "owner",
                 "retention_left_s")  # fmt: skip
# The rows of the table's page only, in full (dates and JSON cost to decode: not 1,000 of them).
FULL_COLUMNS = (
    "id", "committed", "latest", "time_lag_kind", "alive", "diagnosis", "last_commit_at",
    "complete", "present", "lag_upper_bound", "evaluated_at", *SHARE_STATE_COLUMNS,
)  # fmt: skip
REBALANCES_SHOWN = 200
CHANGES_SHOWN = 30
NOBODY = "(nobody)"


def group(pk: int) -> ConsumerGroup:
    """The group, with ``last_commit_at``: its partitions' newest commit, in the same query
    (the light partition rows leave dates out, see ``LIGHT_COLUMNS``)."""
    newest = (
        PartitionState.objects.filter(group=OuterRef("pk"))
        .order_by()
        .values("group")
        .annotate(at=Max("last_commit_at"))
        .values("at")
    )
    return (
        ConsumerGroup.objects.select_related("cluster")
        .annotate(last_commit_at=Subquery(newest))
        .get(pk=pk)
    )


def trend(g: ConsumerGroup, now: datetime) -> trends.Trend | None:
    """The group's newest minute rollup: rates, lag slope, ETA to drain (one query)."""
    key = (g.cluster.name, g.source, g.name)
    return trends.group_trends([key], now).get(key)


def membership(g: ConsumerGroup) -> dict[str, Any]:
    """What the head says of the group's protocol: Kafka's group type (None where not Kafka or
    unknown) and how many members are still converging on their KIP-848 target."""
    return {
        "type": group_type(g.source, g.group_type),
        "reconciling": reconciling_count(member_details(g.members)),
    }


def _tasks_text(tasks: dict[str, list[int]]) -> list[tuple[str, str]]:
    """``{"0": [0, 1, 2], "1": [4]}`` -> ``[("0", "0-2"), ("1", "4")]``."""
    return [(sub, _ranges(parts)) for sub, parts in tasks.items()]


def streams(g: ConsumerGroup) -> dict[str, Any] | None:
    """A streams group's topology and each member's process and tasks (KIP-1071); None for
    any other group. A task is (subtopology, partition): shown as partitions by subtopology."""
    if group_type(g.source, g.group_type) != "streams":
        return None
    members = []
    for d in member_details(g.members):
        tasks, target = d.get("tasks") or {}, d.get("target_tasks")
        members.append(
            {
                "member": d["member_id"] or "",
                "process_id": d.get("process_id") or "",
                **{kind: _tasks_text(tasks.get(kind) or {}) for kind in _TASK_KINDS},
                "moving": target is not None and target != tasks,
                "target_active": _tasks_text((target or {}).get("active") or {}),
            }
        )
    return {"topology": topology_detail(g.topology), "members": members}


def partitions(g: ConsumerGroup) -> list[dict[str, Any]]:
    return [
        dict(zip(LIGHT_COLUMNS, row, strict=True))
        for row in PartitionState.objects.filter(group_id=g.id).values_list(*LIGHT_COLUMNS)
    ]


def _complete_rows(rows: list[dict[str, Any]], cluster: str) -> list[dict[str, Any]]:
    """The page's rows with their remaining columns, partition links and, where a row has no
    retention forecast, why (two queries: the rows, their topics' retention settings)."""
    full = {
        r["id"]: r
        for r in PartitionState.objects.filter(id__in=[r["id"] for r in rows]).values(*FULL_COLUMNS)
    }
    without = {r["topic"] for r in rows if r["retention_left_s"] is None}
    configs = trends.topic_retention((cluster, t) for t in without)
    prefix = reverse("ui:partition", args=[0])[: -len("0/")]
    out = []
    for r in rows:
        extra = full.get(r["id"], {})
        row = {**r, **extra, "codes": diagnosis_codes(extra.get("diagnosis")),
               "url": f"{prefix}{r['id']}/"}  # fmt: skip
        row["share_state"] = share_state_document(extra)
        if r["retention_left_s"] is None:
            row["no_forecast"] = no_forecast_reason(
                configs.get((cluster, r["topic"])), r["lag"], r["time_lag_s"], r["stale"],
                extra.get("evaluated_at") is not None,
            )  # fmt: skip
        out.append(row)
    return out


def _sort_key(sort: str):
    if sort == "lag":
        return lambda r: (-(r["lag"] if r["lag"] is not None else -1), r["topic"], r["partition"])
    if sort == "time_lag":
        return lambda r: (-(r["time_lag_s"] or -1), r["topic"], r["partition"])
    if sort == "partition":
        return lambda r: (r["topic"], r["partition"])
    return lambda r: (-SEVERITY.get(r["status"], 1), -(r["lag"] or 0), r["topic"], r["partition"])


def table(rows: list[dict[str, Any]], view: GroupView, cluster: str) -> dict[str, Any]:
    """The partition table's page: filters, sort and paging of the view (deep-linked)."""
    shown = [
        r
        for r in rows
        if (not view.statuses or r["status"] in view.statuses)
        and (not view.topic or r["topic"] == view.topic)
    ]
    shown.sort(key=_sort_key(view.sort))
    pages = max(1, -(-len(shown) // PARTITIONS_PER_PAGE))
    page = min(view.page, pages)
    start = (page - 1) * PARTITIONS_PER_PAGE
    page_rows = _complete_rows(shown[start : start + PARTITIONS_PER_PAGE], cluster)
    return {
        "rows": page_rows,
        # Why some rows' "Retention left" is "—", each reason once, in the rows' order.
        "no_forecast_reasons": list(dict.fromkeys(r["no_forecast"] for r in page_rows
                                                  if "no_forecast" in r)),  # fmt: skip
        "matching": len(shown),
        "page": page,
        "pages": pages,
        "topics": sorted({r["topic"] for r in rows}),
    }


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    lags = [r["lag"] for r in rows if r["lag"] is not None]
    time_lags = [r["time_lag_s"] for r in rows if r["time_lag_s"] is not None]
    lefts = [r["retention_left_s"] for r in rows if r.get("retention_left_s") is not None]
    by_status = Counter(r["status"] for r in rows)
    return {
        "lag": sum(lags) if lags else None,
        "time_lag": max(time_lags) if time_lags else None,
        "retention_left": min(lefts) if lefts else None,
        "partitions": len(rows),
        "stale": sum(1 for r in rows if r["stale"]),
        "by_status": {s: by_status[s] for s in STATUSES_WORST_FIRST if by_status[s]},
    }


def _ranges(numbers: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2, 5``: a member's partitions of a topic, short."""
    out, run = [], []
    for n in sorted(numbers):
        if run and n == run[-1] + 1:
            run.append(n)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [n]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(out)


def _topics(tps: list[tuple[str, int]]) -> list[tuple[str, str]]:
    """``[("t", 0), ("t", 1), ("u", 4)]`` -> ``[("t", "0-1"), ("u", "4")]``."""
    by_topic: dict[str, list[int]] = defaultdict(list)
    for topic, partition in tps:
        by_topic[topic].append(partition)
    return [(t, _ranges(ps)) for t, ps in sorted(by_topic.items())]


def _member_info(detail: dict[str, Any] | None) -> dict[str, Any]:
    """A member's columns: ids and host ("" when unknown, for the template), epoch, and the
    target assignment only where the member does not hold it yet (KIP-848, reconciling)."""
    detail = detail or {}
    moving = bool(detail) and reconciling(detail)
    return {
        "client_id": detail.get("client_id") or "",
        "host": detail.get("host") or "",
        "instance_id": detail.get("instance_id") or "",
        "member_epoch": detail.get("member_epoch"),
        "reconciling": moving,
        "target": _topics(pairs(detail["target_assignment"])) if moving else [],
    }


def assignment(g: ConsumerGroup, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Members and the partitions each holds, with their statuses.

    From the members' reported assignments (Kafka) where there are some, else from each
    partition's owner (ZooKeeper owner node, the spout's topology): ``assignment.holdings``,
    as the balance figures read them. Partitions no member holds are listed under
    "(nobody)": the picture of a dead consumer. A KIP-848 member whose target differs from
    what it holds carries that target, shown as reconciling.
    """
    status = {(r["topic"], r["partition"]): r["status"] for r in rows}
    details = by_member(member_details(g.members))
    held, unowned = holdings(details, rows)
    if unowned:
        held[NOBODY] = unowned
    out = []
    for member, tps in held.items():
        counts = Counter(status.get(tp, "UNKNOWN") for tp in tps)
        out.append(
            {
                "member": member,
                "nobody": member == NOBODY,
                **_member_info(details.get(member)),
                "topics": _topics(tps),
                "count": len(tps),
                "by_status": {s: counts[s] for s in STATUSES_WORST_FIRST if counts[s]},
            }
        )
    out.sort(key=lambda m: (m["nobody"], m["member"]))
    return out


def balance(g: ConsumerGroup, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The "Assignment balance" section: per member its partitions, lag, time lag and share of
    the group's lag, the imbalance figures, and beside each member what every assignor would
    give it (``assignment.whatif``); computed from the rows already read, no query."""
    report = group_report(g, rows)
    what_if = report["what_if"] or []
    counts = [{m["member_id"]: m["partitions"] for m in w["members"] or []} for w in what_if]
    return {
        **report["balance"],
        "members": [
            {**m, "what_if": [c.get(m["member_id"]) for c in counts]}
            for m in report["balance"]["members"]
        ],
        "what_if": [{**w, "label": label(w)} for w in what_if],
        "subscriptions": report["what_if_subscriptions"],
    }


def rebalances(g: ConsumerGroup, since: datetime) -> list[dict[str, Any]]:
    rows = RebalanceEvent.objects.filter(group_id=g.id, at__gte=since).order_by("-at")
    out = []
    for e in rows.values("at", "generation", "cause", "detail")[:REBALANCES_SHOWN]:
        detail = e["detail"] if isinstance(e["detail"], dict) else {}
        causes = detail.get("causes")
        e["causes"] = [str(c) for c in causes] if isinstance(causes, list) else [e["cause"]]
        e["detail"] = {k: v for k, v in detail.items() if k != "causes"}
        out.append(e)
    out.reverse()
    return out


def status_changes(g: ConsumerGroup) -> list[dict[str, Any]]:
    # A status run writes its changes at one time: ties in the order they were written, as the API.
    rows = StatusChange.objects.filter(group_id=g.id).order_by("-at", "-id")[:CHANGES_SHOWN]
    out = []
    for c in rows.values(
        "at", "topic", "partition", "old_status", "new_status", "diagnosis", "reason"
    ):
        c["codes"] = diagnosis_codes(c["diagnosis"])
        out.append(c)
    return out
