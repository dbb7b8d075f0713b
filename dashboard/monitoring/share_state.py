"""A share-partition's delivery figures (from ``__share_group_state``, KIP-932) as every
reader shows them: ``lagwatch_status --json``, ``/api/v1`` and the group page.

One shape for all of them, from a stored ``PartitionState`` (a model or a ``values()`` row):
the highest delivery count of the records the state holds, the record delivered most often
that came back (``redelivered``), the records archived (``archived``) and the newest of them
(``last_archived``), and the group's delivery count limit. None for a partition that is not a
share group's, or whose state topic was not read. The figures only: whether a record is a
poison one is the evaluator's diagnosis, on the partition's ``diagnosis``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from collectors.records import SHARE_STATE_COLUMNS

__all__ = ["SHARE_STATE_COLUMNS", "share_state_document"]


def share_state_document(row: Any) -> dict[str, Any] | None:
    """The figures of ``row`` (a ``PartitionState`` or a ``values()`` dict holding
    ``SHARE_STATE_COLUMNS``); None when it has none."""
    get = row.get if isinstance(row, Mapping) else lambda name: getattr(row, name, None)
    archived = get("share_archived")
    if archived is None:
        return None
    offset, count = get("share_redelivered_offset"), get("share_redelivered_count")
    last, at = get("share_archived_offset"), get("share_archived_ms")
    return {
        "max_deliveries": get("share_max_deliveries"),
        "redelivered": None if offset is None else {"offset": offset, "deliveries": count},
        "archived": archived,
        "last_archived": None
        if last is None
        else {
            "offset": last,
            "deliveries": get("share_archived_count"),
            "at": None if at is None else _iso(at),
        },
        "delivery_limit": get("share_delivery_limit"),
    }


def _iso(ms: int) -> str:
    """As every time of ``lagwatch_status`` and ``/api/v1``: ISO 8601, UTC, with a ``Z``."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")
