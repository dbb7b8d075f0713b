"""What Lagwatch keeps of a librdkafka client's statistics, and the form the store keeps it in.

The records are shared by the three stages that handle pushed reports (the ingest parsers
fill them, the store keeps them, the cycle reads them back as assignment evidence), so they
sit apart from each; the stored form is here because only the records' own fields decide it.
No Django: the store calls these functions on its JSON column.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from collectors.records import SpoutFigures

CONSUMER = "consumer"
PRODUCER = "producer"
KINDS = (CONSUMER, PRODUCER)


@dataclass(frozen=True, slots=True)
class ClientPartition:
    """One partition as one client sees it. Offsets librdkafka marks invalid (-1001) or
    unknown (-1) become ``None``, like everything a source did not say."""

    topic: str
    partition: int
    assigned: bool = False  # librdkafka's "desired": part of the consumer's assignment
    committed: int | None = None
    consumer_lag: int | None = None
    lo_offset: int | None = None
    hi_offset: int | None = None
    stored: int | None = None
    fetch_state: str | None = None
    queued: int | None = None  # producer: msgq_cnt + xmit_msgq_cnt
    in_flight: int | None = None  # msgs_inflight
    txmsgs: int | None = None


@dataclass(frozen=True, slots=True)
class ClientReport:
    """One librdkafka client's statistics at one time.

    ``group`` is what the pusher declared (librdkafka's document does not carry
    ``group.id``); ``host`` is the address it pushed from, or what it declared. ``time_ms`` is
    the document's wall-clock ``time`` (seconds) in milliseconds, or the receive time: its
    ``ts`` is a monotonic clock and says nothing about the wall clock.
    """

    kind: str
    client_id: str
    name: str
    group: str | None
    time_ms: int
    host: str | None = None
    assignment: tuple[tuple[str, int], ...] = ()
    assignment_size: int | None = None
    cgrp_state: str | None = None
    join_state: str | None = None
    rebalance_cnt: int | None = None
    rebalance_reason: str | None = None
    rebalance_age_ms: int | None = None
    partitions: tuple[ClientPartition, ...] = ()
    # Producers (DOMAIN.md §4). librdkafka counts no expired messages in its statistics
    # (they surface as _MSG_TIMED_OUT delivery reports); request time-outs are the nearest.
    msg_cnt: int | None = None  # messages not yet acknowledged, in flight included
    in_flight: int | None = None  # Σ brokers' waitresp_msg_cnt
    txerrs: int | None = None
    txretries: int | None = None
    req_timeouts: int | None = None
    fatal_error: str | None = None


# --- stored form ---------------------------------------------------------------------------


def client_report_to_dict(report: ClientReport) -> dict[str, Any]:
    """The JSON-ready form the store keeps (the normalized report, not the raw document)."""
    out = dataclasses.asdict(report)
    out["assignment"] = [list(tp) for tp in report.assignment]
    return out


def client_report_from_dict(data: Mapping[str, Any]) -> ClientReport:
    """Inverse of :func:`client_report_to_dict`; fields added later default, unknown ones
    (from a newer writer) are dropped."""
    known = {f.name for f in dataclasses.fields(ClientReport)}
    part_fields = {f.name for f in dataclasses.fields(ClientPartition)}
    values = {k: v for k, v in data.items() if k in known}
    values["assignment"] = tuple((str(t), int(p)) for t, p in data.get("assignment") or ())
    values["partitions"] = tuple(
        ClientPartition(**{k: v for k, v in p.items() if k in part_fields})
        for p in data.get("partitions") or ()
    )
    return ClientReport(**values)


def spout_figures_to_dict(figures: SpoutFigures) -> dict[str, Any]:
    return dataclasses.asdict(figures)


def spout_figures_from_dict(data: Mapping[str, Any]) -> SpoutFigures:
    known = {f.name for f in dataclasses.fields(SpoutFigures)}
    return SpoutFigures(**{k: v for k, v in data.items() if k in known})
