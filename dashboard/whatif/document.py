"""The what-if as one document, the shape scripts rely on: printed by
``manage.py assignment_whatif --json`` and served at ``/api/v1/groups/<id>/whatif/``, the same
bytes from both so a script can move from one to the other.

The group page and the group detail of the API keep the richer report (:mod:`.whatif`); this
is a projection of it, keyed for lookup rather than for display: members by id with their
partitions by topic, assignors by name with each member's assignment and the moves. A KIP-848
group has both a client-side and a broker-side range assignor: the broker's is
``server-range`` here (``uniform`` exists only on the broker).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dashboard.monitoring.membership import by_topic, group_type, member_details
from dashboard.whatif.whatif import by_member, group_report, holdings

# What the document reads of each partition row.
ROW_FIELDS = ("topic", "partition", "lag", "time_lag_s", "owner")
# (report's assignor, protocol) -> the document's key.
KEYS = {
    ("range", "classic"): "range",
    ("roundrobin", "classic"): "roundrobin",
    ("sticky", "classic"): "sticky",
    ("uniform", "consumer"): "uniform",
    ("range", "consumer"): "server-range",
}


def whatif_document(group: Any, cluster: str, rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``{"group", "cluster", "source", "type", "members": [{"member_id", "client_id",
    "partitions": {topic: [..]}, "lag", "time_lag_s"}], "imbalance", "busiest_member",
    "busiest_lag_share", "subscriptions", "assignors": {name: {"assignment": {member_id:
    {topic: [..]}}, "moves", "unowned_assigned", "note"}}}`` for a stored group (a
    ``ConsumerGroup``) and its partition rows (``topic``, ``partition``, ``lag``,
    ``time_lag_s``, ``owner``)."""
    rows = list(rows)
    report = group_report(group, rows)
    details = by_member(member_details(group.members))
    held, _unowned = holdings(details, rows)
    balance = report["balance"]
    figures = {m["member_id"]: m for m in balance["members"]}
    members = [
        {
            "member_id": mid,
            "client_id": details.get(mid, {}).get("client_id"),
            "partitions": by_topic(tps),
            "lag": figures[mid]["lag"],
            "time_lag_s": figures[mid]["time_lag_s"],
        }
        for mid, tps in sorted(held.items())
    ]
    assignors = {}
    for entry in report["what_if"] or []:
        assignors[KEYS.get((entry["assignor"], entry["protocol"]), entry["assignor"])] = {
            "assignment": None
            if entry["members"] is None
            else {m["member_id"]: m["assignment"] for m in entry["members"]},
            "moves": entry["moved"],
            "unowned_assigned": entry["unowned_assigned"],
            "note": entry["note"],
        }
    return {
        "group": group.name,
        "cluster": cluster,
        "source": group.source,
        "type": group_type(group.source, group.group_type),
        "members": members,
        "imbalance": balance["partitions_imbalance"],
        "busiest_member": balance["busiest_member"],
        "busiest_lag_share": balance["busiest_lag_share"],
        "unowned": balance["unowned"],
        "subscriptions": report["what_if_subscriptions"],
        "assignors": assignors,
    }
