"""How a group's partitions and lag spread over its members (DOMAIN §3).

A group is as fast as its busiest member: ten partitions over three members is fine at 4/3/3,
but not when one member holds 8 of them, or holds the one partition that carries most of the
lag. Two figures say so at a glance: the partition imbalance (the most partitions a member
holds ÷ the mean per member: 1.0 is even, 2.0 means someone holds twice their share) and the
share of the group's lag on the member holding the most lag.

Lag is summed over a member's partitions (messages add up; a member holding nothing has 0);
time lag is the maximum (how far behind its worst partition is: time lags do not add).
Unknown figures stay ``None``, never a made-up 0.
Partitions nobody holds are reported apart: they are not a member's load, but they are the
group's lag.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from dashboard.whatif.model import TopicPartition


@dataclass(frozen=True)
class Figures:
    """A partition's latest lag (messages) and time lag (seconds), ``None`` when unknown."""

    lag: int | None = None
    time_lag_s: float | None = None


def _lag_sum(lags: Iterable[int | None]) -> int | None:
    known = [x for x in lags if x is not None]
    return sum(known) if known else None


def _max(values: Iterable[float | None]) -> float | None:
    known = [x for x in values if x is not None]
    return max(known) if known else None


def _share(part: int | None, whole: int | None) -> float | None:
    if part is None or not whole:
        return None
    return round(part / whole, 4)


def balance(
    holdings: Mapping[str, Sequence[TopicPartition]],
    unowned: Sequence[TopicPartition],
    figures: Mapping[TopicPartition, Figures],
) -> dict:
    """Per member (in ``holdings`` order) its partitions, lag, time lag and share of the group's
    lag; the unowned partitions; and the imbalance figures. ``None`` where they are undefined:
    no member, or no lag known."""
    none = Figures()
    everything = [tp for tps in holdings.values() for tp in tps] + list(unowned)
    total_lag = _lag_sum(figures.get(tp, none).lag for tp in everything)
    members = []
    for mid, tps in holdings.items():
        lag = _lag_sum(figures.get(tp, none).lag for tp in tps) if tps else 0
        members.append(
            {
                "member_id": mid,
                "partitions": len(tps),
                "lag": lag,
                "time_lag_s": _max(figures.get(tp, none).time_lag_s for tp in tps),
                "lag_share": _share(lag, total_lag),
            }
        )
    counts = [m["partitions"] for m in members]
    mean = sum(counts) / len(counts) if counts else None
    busiest = max(members, key=lambda m: m["lag"] or 0, default=None)
    if busiest is not None and not busiest["lag"]:
        busiest = None  # no member holds any lag: nobody is busiest
    return {
        "members": members,
        "unowned": {
            "partitions": len(unowned),
            "lag": _lag_sum(figures.get(tp, none).lag for tp in unowned),
        },
        "total_lag": total_lag,
        "partitions_max": max(counts) if counts else None,
        "partitions_mean": round(mean, 4) if mean is not None else None,
        "partitions_imbalance": round(max(counts) / mean, 4) if mean else None,
        "busiest_member": busiest["member_id"] if busiest else None,
        "busiest_lag_share": busiest["lag_share"] if busiest else None,
    }
