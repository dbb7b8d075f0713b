"""What clients push to the ingest endpoint (SPEC §2.3), validated into plain records.

Two formats arrive: a librdkafka statistics document (``stats_cb``'s JSON, as STATISTICS.md
describes it) and Lagwatch's own spout push. Both come from outside, so every field is
checked and a refusal names the field's path (``topics.orders.partitions.3.committed_offset:
must be an integer``); keys this module does not know are ignored, because librdkafka adds
fields from version to version.

The broker does not always say who owns which partition (a group caught mid-rebalance, a
describe that failed, a broker that answers without members), but every consumer knows its
own assignment.
:func:`apply_client_reports` puts what the clients said into the broker's group snapshots,
never over what the broker said.

No Django here: the ingest views, the store and the tests call these functions directly.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from collectors.records import GroupMember, GroupSnapshot, SpoutFigures

CONSUMER = "consumer"
PRODUCER = "producer"
KINDS = (CONSUMER, PRODUCER)

MAX_NAME_LEN = 255  # topic, group, client, topology and spout names
MAX_TEXT_LEN = 500  # free text (rebalance reasons, fatal errors) is cut, not refused
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
INTERNAL_PARTITION = -1  # librdkafka's UA (unassigned) pseudo-partition of each topic


class IngestError(ValueError):
    """A pushed document that cannot be accepted; the message starts with the field path."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


# --- records -------------------------------------------------------------------------------


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


# --- field checks --------------------------------------------------------------------------


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def _object(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise IngestError(path, f"must be a JSON object, got {_type(value)}")
    return value


def _type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _int(value: object, path: str, minimum: int = INT64_MIN) -> int:
    # bool is an int subclass in Python, never in JSON.
    if isinstance(value, bool) or not isinstance(value, int):
        raise IngestError(path, f"must be an integer, got {_type(value)}")
    if not INT64_MIN <= value <= INT64_MAX:
        raise IngestError(path, "must fit in 64 bits")
    if value < minimum:
        raise IngestError(path, f"must be >= {minimum}, got {value}")
    return value


def _opt_int(m: Mapping[str, Any], key: str, path: str, minimum: int = INT64_MIN) -> int | None:
    value = m.get(key)
    return None if value is None else _int(value, _join(path, key), minimum)


def _offset(m: Mapping[str, Any], key: str, path: str) -> int | None:
    """librdkafka writes -1001 (invalid) and -1 (unknown) where it knows no offset."""
    value = _opt_int(m, key, path)
    return value if value is not None and value >= 0 else None


def _name(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise IngestError(path, f"must be a string, got {_type(value)}")
    if not value:
        raise IngestError(path, "must not be empty")
    if len(value) > MAX_NAME_LEN:
        raise IngestError(path, f"must be at most {MAX_NAME_LEN} characters")
    return value


def _opt_name(m: Mapping[str, Any], key: str, path: str) -> str | None:
    value = m.get(key)
    return None if value is None else _name(value, _join(path, key))


def _opt_text(m: Mapping[str, Any], key: str, path: str) -> str | None:
    value = m.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise IngestError(_join(path, key), f"must be a string, got {_type(value)}")
    return value[:MAX_TEXT_LEN]


def _opt_bool(m: Mapping[str, Any], key: str, path: str) -> bool:
    value = m.get(key, False)
    if not isinstance(value, bool):
        raise IngestError(_join(path, key), f"must be true or false, got {_type(value)}")
    return value


def _opt_group(group: object) -> str | None:
    if group is None or group == "":
        return None
    return _name(group, "group")


# --- librdkafka statistics -----------------------------------------------------------------


def parse_librdkafka_stats(
    doc: object, group: str | None, received_ms: int, *, host: str | None = None
) -> ClientReport:
    """Validate one librdkafka statistics document and keep what Lagwatch uses.

    A consumer's assignment is the set of partitions librdkafka marks ``desired``: the
    consumer sets that flag on every partition it adds to its assignment and clears it on
    removal (rdkafka_assignment.c), whereas ``topics.*.partitions`` lists every partition of
    the topic it knows. Partition -1 is librdkafka's internal unassigned queue, never real.
    """
    d = _object(doc, "document")
    kind = d.get("type")
    if kind not in KINDS:
        got = "missing" if kind is None else repr(kind)
        raise IngestError(
            "type",
            f'must be "consumer" or "producer", got {got}: not a librdkafka statistics document',
        )
    name = _name(d.get("name"), "name")
    client_id = d.get("client_id")
    if not isinstance(client_id, str) or len(client_id) > MAX_NAME_LEN:
        raise IngestError("client_id", f"must be a string of at most {MAX_NAME_LEN} characters")
    wall_s = _opt_int(d, "time", "", minimum=0)
    time_ms = wall_s * 1000 if wall_s else received_ms
    if host is not None:
        host = _name(host, "host")

    partitions = _partitions(d.get("topics"), kind)
    report = ClientReport(
        kind=kind,
        client_id=client_id,
        name=name,
        group=_opt_group(group),
        time_ms=time_ms,
        host=host,
        partitions=partitions,
        fatal_error=_fatal(d.get("fatal")),
    )
    if kind == CONSUMER:
        report = dataclasses.replace(
            report,
            assignment=tuple(sorted((p.topic, p.partition) for p in partitions if p.assigned)),
            **_cgrp(d.get("cgrp")),
        )
    else:
        report = dataclasses.replace(
            report, msg_cnt=_opt_int(d, "msg_cnt", "", minimum=0), **_broker_totals(d)
        )
    return report


def _partitions(topics: object, kind: str) -> tuple[ClientPartition, ...]:
    if topics is None:
        return ()
    out: list[ClientPartition] = []
    for topic, tdoc in _object(topics, "topics").items():
        tpath = _join("topics", topic)
        _name(topic, tpath)
        t = _object(tdoc, tpath)
        parts = t.get("partitions")
        if parts is None:
            continue
        ppath = _join(tpath, "partitions")
        for key, pdoc in _object(parts, ppath).items():
            path = _join(ppath, key)
            p = _object(pdoc, path)
            number = _partition_number(key, p, path)
            if number == INTERNAL_PARTITION:
                continue
            part = _client_partition(topic, number, p, path)
            # A consumer reports every partition of the topics it knows; only its own matter.
            if kind == PRODUCER or part.assigned:
                out.append(part)
    out.sort(key=lambda p: (p.topic, p.partition))
    return tuple(out)


def _partition_number(key: str, p: Mapping[str, Any], path: str) -> int:
    if "partition" in p:
        number = _int(p["partition"], _join(path, "partition"), minimum=INTERNAL_PARTITION)
    else:
        try:
            number = int(key)
        except ValueError:
            raise IngestError(path, "partition key must be an integer") from None
        if number < INTERNAL_PARTITION:
            raise IngestError(path, f"must be >= {INTERNAL_PARTITION}, got {number}")
    return number


def _client_partition(topic: str, number: int, p: Mapping[str, Any], path: str) -> ClientPartition:
    fetch_state = p.get("fetch_state")
    if fetch_state is not None and not isinstance(fetch_state, str):
        raise IngestError(_join(path, "fetch_state"), f"must be a string, got {_type(fetch_state)}")
    msgq = _opt_int(p, "msgq_cnt", path, minimum=0)
    xmit = _opt_int(p, "xmit_msgq_cnt", path, minimum=0)
    queued = None if msgq is None and xmit is None else (msgq or 0) + (xmit or 0)
    return ClientPartition(
        topic=topic,
        partition=number,
        assigned=_opt_bool(p, "desired", path),
        committed=_offset(p, "committed_offset", path),
        consumer_lag=_offset(p, "consumer_lag", path),
        lo_offset=_offset(p, "lo_offset", path),
        hi_offset=_offset(p, "hi_offset", path),
        stored=_offset(p, "stored_offset", path),
        fetch_state=fetch_state[:MAX_NAME_LEN] if fetch_state else None,
        queued=queued,
        in_flight=_opt_int(p, "msgs_inflight", path, minimum=0),
        txmsgs=_opt_int(p, "txmsgs", path, minimum=0),
    )


def _cgrp(value: object) -> dict[str, Any]:
    if value is None:
        return {}
    c = _object(value, "cgrp")
    # STATISTICS.md names it "joinstate"; librdkafka writes "join_state".
    join_key = "join_state" if "join_state" in c else "joinstate"
    return {
        "cgrp_state": _opt_text(c, "state", "cgrp"),
        "join_state": _opt_text(c, join_key, "cgrp"),
        "rebalance_cnt": _opt_int(c, "rebalance_cnt", "cgrp", minimum=0),
        "rebalance_reason": _opt_text(c, "rebalance_reason", "cgrp") or None,
        "rebalance_age_ms": _opt_int(c, "rebalance_age", "cgrp", minimum=0),
        "assignment_size": _opt_int(c, "assignment_size", "cgrp", minimum=0),
    }


def _broker_totals(d: Mapping[str, Any]) -> dict[str, int | None]:
    brokers = d.get("brokers")
    fields = {
        "in_flight": "waitresp_msg_cnt",
        "txerrs": "txerrs",
        "txretries": "txretries",
        "req_timeouts": "req_timeouts",
    }
    if brokers is None:
        return dict.fromkeys(fields)
    totals = dict.fromkeys(fields, 0)
    for broker, bdoc in _object(brokers, "brokers").items():
        path = _join("brokers", broker)
        b = _object(bdoc, path)
        for out, key in fields.items():
            totals[out] += _opt_int(b, key, path, minimum=0) or 0
    return totals


def _fatal(value: object) -> str | None:
    if value is None:
        return None
    f = _object(value, "fatal")
    error = _opt_text(f, "error", "fatal") or "fatal error"
    reason = _opt_text(f, "reason", "fatal")
    return f"{error}: {reason}"[:MAX_TEXT_LEN] if reason else error


# --- spout push ----------------------------------------------------------------------------


def parse_spout_report(doc: object, received_ms: int) -> list[SpoutFigures]:
    """Validate a spout's push and return one ``SpoutFigures`` per partition.

    The format (docs/INGEST.md)::

        {"topology_id": str, "spout_id": str, "topology_name"?: str, "time_ms"?: int,
         "max_spout_pending": int | null, "max_offset_behind"?: int | null,
         "partitions": [{"topic": str, "partition": int, "pending": int, "failed": int,
                         "acked": int, "emitted"?: int, "smallest_failed_offset": int | null,
                         "max_offset_behind"?: int | null}]}

    Counts are non-negative integers; a partition's ``max_offset_behind`` overrides the
    spout's. ``time_ms`` defaults to the receive time.
    """
    d = _object(doc, "document")
    topology_id = _name(d.get("topology_id"), "topology_id")
    spout_id = _name(d.get("spout_id"), "spout_id")
    _opt_name(d, "topology_name", "")
    time_ms = _opt_int(d, "time_ms", "", minimum=0) or received_ms
    max_pending = _opt_int(d, "max_spout_pending", "", minimum=0)
    default_behind = _opt_int(d, "max_offset_behind", "", minimum=0)
    parts = d.get("partitions")
    if not isinstance(parts, list):
        raise IngestError("partitions", f"must be an array, got {_type(parts)}")
    seen: dict[tuple[str, int], int] = {}
    figures: list[SpoutFigures] = []
    for i, pdoc in enumerate(parts):
        path = _join("partitions", i)
        p = _object(pdoc, path)
        topic = _name(p.get("topic"), _join(path, "topic"))
        partition = _int(p.get("partition"), _join(path, "partition"), minimum=0)
        if (topic, partition) in seen:
            raise IngestError(
                path, f"{topic}[{partition}] repeats partitions.{seen[topic, partition]}"
            )
        seen[topic, partition] = i
        behind = _opt_int(p, "max_offset_behind", path, minimum=0)
        figures.append(
            SpoutFigures(
                topology_id=topology_id,
                spout_id=spout_id,
                topic=topic,
                partition=partition,
                pending=_int(p.get("pending"), _join(path, "pending"), minimum=0),
                failed=_int(p.get("failed"), _join(path, "failed"), minimum=0),
                acked=_int(p.get("acked"), _join(path, "acked"), minimum=0),
                emitted=_opt_int(p, "emitted", path, minimum=0),
                smallest_failed_offset=_opt_int(p, "smallest_failed_offset", path, minimum=0),
                max_offset_behind=behind if behind is not None else default_behind,
                max_spout_pending=max_pending,
                time_ms=time_ms,
            )
        )
    return figures


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


# --- assignments from the clients ----------------------------------------------------------


def apply_client_reports(
    groups: list[GroupSnapshot], reports: list[ClientReport]
) -> list[GroupSnapshot]:
    """Fill in the members' assignments the broker did not give, from consumers' reports.

    - A member the broker listed with an empty assignment and a client id gets the
      assignment of the one consumer report that matches it: same client id, same group
      (or a report without a group whose client id matches members of this group only),
      and the same host when both are known. When several members or several reports
      could pair up (a shared client id such as librdkafka's default ``rdkafka``), nothing
      is guessed: the member stays unknown.
    - A group the broker listed without members (``members_known`` False) but named by
      consumer reports gets **synthesized members**, one per reporting consumer, with
      ``member_id`` = the report's librdkafka instance name (``name@host`` if two reports
      share a name), and ``members_known`` True: the membership is now known, from the
      clients. A consumer that pushes no statistics is then missing from the members.
    - An assignment the broker reported is never changed. A partition claimed by several
      reports goes to the newest report, and one owned per the broker to the broker's owner:
      a stale report must not give a partition two owners.

    Only consumer reports count; for each client instance (group, name, host) the newest.
    """
    consumers = _newest_per_client(r for r in reports if r.kind == CONSUMER)
    home = _groupless_homes(groups, consumers)
    out = []
    for index, snap in enumerate(groups):
        mine = [
            r
            for r in consumers
            if r.group == snap.group or (r.group is None and home.get(_client_key(r)) == index)
        ]
        if snap.members:
            out.append(_fill_members(snap, mine))
        elif not snap.members_known:
            out.append(_synthesize(snap, [r for r in mine if r.group == snap.group]))
        else:
            out.append(snap)  # the broker says the group is empty
    return out


def _client_key(r: ClientReport) -> tuple[str | None, str, str | None, str]:
    return (r.group, r.name, _norm_host(r.host), r.client_id)


def _newest_per_client(reports: Iterable[ClientReport]) -> list[ClientReport]:
    newest: dict[tuple[str | None, str, str | None, str], ClientReport] = {}
    for r in reports:
        key = _client_key(r)
        if key not in newest or r.time_ms > newest[key].time_ms:
            newest[key] = r
    return list(newest.values())


def _norm_host(host: str | None) -> str | None:
    """Kafka reports hosts as ``/10.0.0.5``; an HTTP server sees ``10.0.0.5``."""
    if not host:
        return None
    text = host.strip().lstrip("/").lower()
    try:
        addr = ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return text or None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.compressed


def _hosts_compatible(a: str | None, b: str | None) -> bool:
    na, nb = _norm_host(a), _norm_host(b)
    return na is None or nb is None or na == nb


def _same_host(a: str | None, b: str | None) -> bool:
    na = _norm_host(a)
    return na is not None and na == _norm_host(b)


def _pairs(member: GroupMember, report: ClientReport) -> bool:
    return (
        bool(member.client_id)
        and member.client_id == report.client_id
        and _hosts_compatible(member.host, report.host)
    )


def _narrow_by_host(items: list[Any], host: str | None, host_of: Any) -> list[Any]:
    exact = [x for x in items if _same_host(host, host_of(x))]
    return exact if exact else items


def _groupless_homes(
    groups: Sequence[GroupSnapshot], reports: Sequence[ClientReport]
) -> dict[tuple[str | None, str, str | None, str], int]:
    """A report without a group may serve the one group (by index) whose members it could
    be; if members of several groups share its client id, it serves none."""
    homes = {}
    for r in reports:
        if r.group is not None:
            continue
        found = [i for i, g in enumerate(groups) if any(_pairs(m, r) for m in g.members)]
        if len(found) == 1:
            homes[_client_key(r)] = found[0]
    return homes


def _fill_members(snap: GroupSnapshot, reports: list[ClientReport]) -> GroupSnapshot:
    chosen: dict[int, ClientReport] = {}
    for i, member in enumerate(snap.members):
        if member.assignment or not member.client_id:
            continue
        candidates = [r for r in reports if _pairs(member, r)]
        if len(candidates) > 1:
            candidates = [r for r in candidates if r.group == snap.group] or candidates
        candidates = _narrow_by_host(candidates, member.host, lambda r: r.host)
        if len(candidates) != 1:
            continue
        report = candidates[0]
        members = [m for m in snap.members if _pairs(m, report)]
        members = _narrow_by_host(members, report.host, lambda m: m.host)
        if members == [member]:
            chosen[i] = report
    if not chosen:
        return snap
    broker_owned = {tp for m in snap.members for tp in m.assignment}
    assignments = _resolve(chosen, broker_owned)
    members = tuple(
        dataclasses.replace(m, assignment=assignments[i]) if i in assignments else m
        for i, m in enumerate(snap.members)
    )
    return dataclasses.replace(snap, members=members)


def _synthesize(snap: GroupSnapshot, reports: list[ClientReport]) -> GroupSnapshot:
    live = [r for r in reports if r.cgrp_state != "term"]  # a closing consumer is leaving
    if not live:
        return snap
    names: dict[str, int] = {}
    for r in live:
        names[r.name] = names.get(r.name, 0) + 1
    assignments = _resolve(dict(enumerate(live)), set())
    members = tuple(
        sorted(
            (
                GroupMember(
                    member_id=r.name if names[r.name] == 1 else f"{r.name}@{r.host or '?'}",
                    client_id=r.client_id or None,
                    host=r.host,
                    assignment=assignments[i],
                )
                for i, r in enumerate(live)
            ),
            key=lambda m: m.member_id,
        )
    )
    topics = {t for m in members for t, _ in m.assignment} | set(snap.topics)
    return dataclasses.replace(
        snap, members=members, members_known=True, topics=tuple(sorted(topics))
    )


def _resolve(
    chosen: Mapping[int, ClientReport], taken: set[tuple[str, int]]
) -> dict[int, tuple[tuple[str, int], ...]]:
    """Each partition to one owner: the broker's first, then the newest report's."""
    claimed = set(taken)
    out: dict[int, tuple[tuple[str, int], ...]] = {}
    for i, report in sorted(chosen.items(), key=lambda item: (-item[1].time_ms, item[1].name)):
        mine = tuple(sorted(tp for tp in report.assignment if tp not in claimed))
        claimed.update(mine)
        out[i] = mine
    return out
