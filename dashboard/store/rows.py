"""The sample store's database side: writes one cycle's outcome, idempotently (SPEC §5).

Every row written here is keyed by the cycle's time, so a retried task rewrites the same
rows. A source that could not be reached leaves its groups' last known figures in place,
marked stale: nothing already stored is lost or overwritten with zeros. Which figures those
are is decided once per cycle, for this store and the sample log alike
(``collectors.cycle.stale``); the cycle reaches this module through ``dashboard.store.cycle``.

Longer than 400 lines on purpose: one cycle is written in one transaction by the functions
below (groups, partitions with the aging of their time lags and those that left, spouts,
raw history, health), which share the rows remembered between cycles (``_Written``) and the
raw SQL they write with; split, every module would need the others' private state.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, models, transaction

from collectors.cycle.stale import Staleness, hidden_by
from collectors.figures import PartitionFigure
from collectors.outcome import CycleOutcome
from collectors.records import SHARE_STATE_COLUMNS, Source, share_state_values
from collectors.spout_totals import spout_totals
from collectors.storm_commit_metadata import topology_name
from collectors.timelag import lag_seconds
from dashboard.monitoring import group_totals
from dashboard.monitoring.models import (
    BrokerOffsets,
    BrokerPurgatory,
    Cluster,
    CollectedCycle,
    CollectionError,
    ConsumerGroup,
    GroupSample,
    PartitionState,
    RebalanceEvent,
    SourceHealth,
    SpoutSample,
    TopicConfig,
)
from dashboard.store import raw_history
from dashboard.store.documents import member_document, topology_document
from dashboard.store.identity import note_identities
from dashboard.times import ms_to_dt

GROUP_FIELDS = [
    "state",
    "group_type",
    "generation",
    "assignment_epoch",
    "assignor",
    "coordinator",
    "members",
    "members_known",
    "topics",
    "owner",
    "topology_id",
    "topology",
    "stale",
    "last_seen_at",
]
# The columns a changed partition row has rewritten (its evaluation is the status job's).
PARTITION_FIELDS = [
    "committed",
    "earliest",
    "latest",
    "lag",
    "lag_upper_bound",
    "time_lag_s",
    "time_lag_kind",
    "time_lag_from_ms",
    "owner",
    "alive",
    "last_commit_at",
    "commit_version",
    "pending",
    "failed",
    "acked",
    *SHARE_STATE_COLUMNS,
    "stale",
    "sampled_at",
    "present",
]
# A partition whose broker offsets could not be read this cycle keeps its last known ones.
# So does a share-partition whose state topic was not read (the same outage).
BROKER_FIELDS = {
    "earliest", "latest", "lag", "lag_upper_bound", "time_lag_s", "time_lag_kind",
    "time_lag_from_ms", *SHARE_STATE_COLUMNS,
}  # fmt: skip


class SupersededCycle(Exception):
    """A newer cycle of the cluster is stored already: this one would write older state over
    it (a collector that lost its lease while stalled, a task redelivered late)."""


def store_cycle(cluster: Cluster, outcome: CycleOutcome, stale: Staleness | None = None) -> None:
    """``stale``: the cycle's verdicts, as the sample log got them (computed if not given).

    Raises :class:`SupersededCycle`, writing nothing, when a newer cycle is stored already.
    """
    at = ms_to_dt(outcome.cycle_ms)
    if stale is None:
        stale = Staleness.of(outcome)
    # Popped first: whatever fails below, no later cycle trusts rows this one may not have
    # written.
    written = _WRITTEN.pop(cluster.pk, None)
    with transaction.atomic():
        previous = _record_cycle(cluster, outcome, at)
        seen_before = dict(
            ConsumerGroup.objects.filter(cluster=cluster).values_list("id", "last_seen_at")
        )
        groups, in_cycle = _upsert_groups(cluster, outcome, at)
        if written is not None and not written.follows(previous, outcome.collected_by):
            written = None  # another process, or a retry, wrote in between
        rows, changed = _upsert_partitions(
            groups, in_cycle, outcome.figures, at, stale, written, seen_before, outcome.figures_ms
        )
        _insert_group_samples(groups, outcome.figures, at, stale)
        _insert_broker_offsets(cluster, outcome, at)
        _insert_spout_samples(cluster, outcome, at)
        _insert_rebalances(groups, outcome)
        _upsert_topic_configs(cluster, outcome)
        if stale.hidden:
            _mark_stale(cluster, stale.hidden)
            rows = None
        if changed is None:
            group_totals.refresh_cluster(cluster)
        else:
            group_totals.refresh(changed)
        _record_health(cluster, outcome, at)
        _record_brokers(cluster, outcome)
        note_identities(cluster, outcome, at)
        if rows is not None:
            kept = _Written(at, outcome.collected_by, rows)
            transaction.on_commit(lambda: _WRITTEN.__setitem__(cluster.pk, kept))


@dataclass(frozen=True, slots=True)
class _Written:
    """A cluster's partition rows as this process's last cycle wrote them (their figures,
    ``Figures``, keyed by group id, topic and partition), and that cycle: the next cycle
    rewrites only the rows whose figures differ. Trusted only while that cycle is the newest stored
    before the next one, and set only once its transaction committed. No other writer
    touches these columns (the status job writes the evaluation's own), and a cycle with
    stale figures, whose rows are partly kept, leaves nothing here."""

    at: datetime
    collected_by: str
    rows: dict[tuple[int, str, int], tuple[tuple, float | None]]

    def follows(self, previous: tuple[datetime, str] | None, collected_by: str) -> bool:
        """Whether ``collected_by``, storing the cycle after ``previous``, wrote these."""
        return collected_by == self.collected_by and previous == (self.at, self.collected_by)


_WRITTEN: dict[int, _Written] = {}


def _record_cycle(
    cluster: Cluster, outcome: CycleOutcome, at: datetime
) -> tuple[datetime, str] | None:
    """Which process stored this cycle (a retry's process replaces the failed one's);
    returns the cycle stored before it, (time, process), if any."""
    newer = CollectedCycle.objects.filter(cluster=cluster, at__gt=at).order_by("-at").first()
    if newer is not None:
        raise SupersededCycle(
            f"cluster {cluster.name}: cycle {outcome.cycle_ms} not stored, the cycle of "
            f"{newer.at.isoformat()} ({newer.collected_by}) is"
        )
    previous = (
        CollectedCycle.objects.filter(cluster=cluster, at__lt=at)
        .order_by("-at")
        .values_list("at", "collected_by")
        .first()
    )
    CollectedCycle.objects.update_or_create(
        cluster=cluster, at=at, defaults={"collected_by": outcome.collected_by}
    )
    return previous


def _upsert_groups(
    cluster: Cluster, outcome: CycleOutcome, at: datetime
) -> tuple[dict[tuple[str, str], int], set[int]]:
    """Upsert the cycle's groups; returns (source, name) -> id of every group of the
    cluster, and the ids of the cycle's groups.

    Raw ``INSERT … ON CONFLICT`` (:func:`_insert_rows`) rather than ``bulk_create``: the ORM
    took 20-40 ms for a few hundred groups, preparing every field of every instance.
    """
    members_field = ConsumerGroup._meta.get_field("members")
    topics_field = ConsumerGroup._meta.get_field("topics")
    topology_field = ConsumerGroup._meta.get_field("topology")
    db_at = _db_datetime(at)
    no_members = members_field.get_db_prep_save([], connection)
    rows: dict[tuple[str, str], list] = {}
    for snap in outcome.groups:
        members = [member_document(m) for m in snap.members]
        rows[(str(snap.source), snap.group)] = [
            cluster.id, str(snap.source), snap.group, snap.state or "",
            (snap.protocol_type or "") if snap.source is Source.KAFKA else "",
            snap.generation, snap.assignment_epoch, snap.assignor or "", snap.coordinator or "",
            members_field.get_db_prep_save(members, connection) if members else no_members,
            snap.members_known, topics_field.get_db_prep_save(list(snap.topics), connection),
            # A Storm 2 spout's group: its topology, by name and instance, as a spout's row.
            topology_name(snap.topology_id) if snap.topology_id else "", snap.topology_id or "",
            False, db_at, db_at,
            None if (topo := topology_document(snap)) is None
            else topology_field.get_db_prep_save(topo, connection),
        ]  # fmt: skip
    for fig in outcome.figures:
        key = (str(fig.source), fig.group)
        row = rows.get(key)
        if row is None:
            row = rows[key] = [
                cluster.id, key[0], fig.group, "", "", None, None, "", "", no_members, False,
                None, "", "", False, db_at, db_at, None,
            ]  # fmt: skip
        if fig.topology_id and fig.source is not Source.KAFKA:
            row[12] = fig.owner or ""  # owner
            row[13] = fig.topology_id
        elif fig.topology_id and not row[13]:
            # A Storm 2 spout's group no snapshot described (its last known figures, the
            # source unreachable): its topology kept; the owner is not a Kafka member's id.
            row[12] = topology_name(fig.topology_id)
            row[13] = fig.topology_id
    columns = [
        "cluster", "source", "name", "state", "group_type", "generation", "assignment_epoch",
        "assignor", "coordinator", "members", "members_known", "topics", "owner",
        "topology_id", "stale", "first_seen_at", "last_seen_at", "topology",
    ]  # fmt: skip
    _insert_rows(
        ConsumerGroup, columns, [tuple(r) for r in rows.values()],
        ["cluster", "source", "name"], GROUP_FIELDS,
    )  # fmt: skip
    ids = {
        (source, name): pk
        for pk, source, name in ConsumerGroup.objects.filter(cluster=cluster)
        .order_by()
        .values_list("id", "source", "name")
    }
    return ids, {ids[key] for key in rows}


PARTITION_COLUMNS = [
    "group", "topic", "partition", "committed", "earliest", "latest", "lag", "lag_upper_bound",
    "time_lag_kind", "time_lag_from_ms", "owner", "alive", "last_commit_at", "commit_version",
    "pending", "failed", "acked", *SHARE_STATE_COLUMNS, "time_lag_s", "stale", "sampled_at",
    "present",
]  # fmt: skip
# A partition's figures as a cycle remembers them to compare the next one's with: its
# columns from ``committed`` to the share state's (all but the time lag), and the time lag. A row
# that differs in the time lag alone, grown from the same ``time_lag_from_ms``, only aged
# (``_age_time_lags``).
_STILL = slice(PARTITION_COLUMNS.index("committed"), PARTITION_COLUMNS.index("time_lag_s"))
_FROM = PARTITION_COLUMNS.index("time_lag_from_ms") - _STILL.start  # within the still part
Figures = tuple[tuple, float | None]


def _upsert_partitions(
    groups: dict,
    in_cycle: set[int],
    figures: list[PartitionFigure],
    at: datetime,
    stale: Staleness,
    written: _Written | None,
    seen_before: dict[int, datetime],
    figures_ms: int | None = None,
) -> tuple[dict | None, set[int] | None]:
    """Write the partition rows whose figures changed since ``written`` (all of them when
    it is None), age the time lags of those whose time lag alone grew (``figures_ms``: when
    the figures' time lags were computed; None: such rows are written as changed), and mark
    the partitions that left a group of the cycle.

    Returns the figures to remember for the next cycle (None when some were kept stale, not
    written as given) and the groups whose rows changed (None: maybe any).
    """
    sampled_at = _db_datetime(at)
    # Each partition's figures (``Figures``), compared with those written before; a whole
    # row, with the defaults of the columns a cycle does not set (for a new row), is built
    # only for a partition that changed: at 10,000 partitions of stopped consumers, none.
    names, defaults = _defaults(PartitionState, PARTITION_COLUMNS)
    columns = [*PARTITION_COLUMNS, *names]
    commit_times: dict[int | None, object] = {}
    group_ids: dict[tuple[object, str], int] = {}
    rows: dict[tuple[int, str, int], Figures] = {}
    blind_keys = set()
    down, blind = stale.broker_down, stale.blind
    for fig in figures:
        ms = fig.commit_time_ms
        if ms not in commit_times:
            commit_times[ms] = _db_datetime(ms_to_dt(ms))
        gid = group_ids.get((fig.source, fig.group))
        if gid is None:
            gid = group_ids[(fig.source, fig.group)] = groups[(str(fig.source), fig.group)]
        key = (gid, fig.topic, fig.partition)
        # A repeated figure replaces the one before it, as the upsert of both did.
        rows[key] = (
            (fig.committed, fig.earliest, fig.latest, fig.lag, fig.lag_upper_bound,
             fig.time_lag_kind, fig.time_lag_from_ms, fig.owner or "", fig.alive,
             commit_times[ms], fig.commit_version, fig.pending, fig.failed, fig.acked,
             *share_state_values(fig.share_state)),
            fig.time_lag_s,
        )  # fmt: skip
        if down and blind(fig):
            blind_keys.add(key)
    aged: set[int] = set()
    if written is None or blind_keys:
        changed = rows
        whole = in_cycle  # every row of these groups is written: the rest have left
        vanished: list[tuple[int, str, int]] = []
    else:
        before = written.rows
        changed = {}
        for key, figs in rows.items():
            old = before.get(key)
            if old != figs:
                if old is not None and _only_aged(old, figs, figures_ms):
                    aged.add(key[0])
                else:
                    changed[key] = figs
        known = {key[0] for key in before}
        whole = in_cycle - known
        vanished = [key for key in before if key not in rows and key[0] in in_cycle]
    tail = (sampled_at, True, *defaults)
    fresh = [(*key, *still, lag_s, False, *tail) for key, (still, lag_s) in changed.items()
             if key not in blind_keys]  # fmt: skip
    blind_rows = [(*key, *still, lag_s, True, *tail) for key, (still, lag_s) in changed.items()
                  if key in blind_keys]  # fmt: skip
    for batch, fields in (
        (fresh, PARTITION_FIELDS),
        (blind_rows, [f for f in PARTITION_FIELDS if f not in BROKER_FIELDS]),
    ):
        _insert_rows(PartitionState, columns, batch, ["group", "topic", "partition"], fields)
    _mark_left(vanished, whole, sampled_at, seen_before)
    if aged:
        _age_time_lags(aged, figures_ms, sampled_at)
    if written is None or blind_keys:
        return (None if blind_keys else rows), None
    return rows, {key[0] for key in changed} | {key[0] for key in vanished} | whole | aged


def _only_aged(old: Figures, figs: Figures, figures_ms: int | None) -> bool:
    """Whether ``figs`` differ from ``old``, those written before, only by a time lag
    grown from the same ``time_lag_from_ms``: the time lag ``_age_time_lags`` will compute
    at ``figures_ms`` (checked, not assumed)."""
    still, time_lag_s = figs
    from_ms = still[_FROM]
    return (
        figures_ms is not None
        and from_ms is not None
        and still == old[0]
        and time_lag_s == lag_seconds(figures_ms, from_ms)
    )


def aged_time_lag_sql(now_ms: str, from_ms: str) -> str:
    """``collectors.timelag.lag_seconds`` as an SQL expression: the time lag at ``now_ms`` of
    a row counting from ``from_ms`` (both SQL: a parameter, a column), in the same floating
    point, for SQLite and PostgreSQL (``GREATEST`` there; SQLite's is a two-argument
    ``MAX``). The formula lives twice, in Python for the collectors and here for one UPDATE of
    many rows; ``tests/dashboard/test_time_lag_sql.py`` runs this on the test database against
    the Python function row by row, so the two cannot drift apart."""
    larger = "GREATEST" if connection.vendor == "postgresql" else "MAX"
    return f"{larger}(0.0, ({now_ms} - {from_ms}) / 1000.0)"


def _age_time_lags(groups: set[int], figures_ms: int, sampled_at: object) -> None:
    """The time lags of the groups' present, fresh rows that count from a moment
    (``time_lag_from_ms``) and were not written by this cycle (at ``sampled_at``),
    recomputed at ``figures_ms`` in one UPDATE: a stopped consumer's row, whose time lag
    alone grows every cycle, is not rewritten whole (at 100,000 such partitions, 2.2-2.6 s
    of a cycle's upsert; benchmarks/RESULTS.md). The formula is
    ``collectors.timelag.lag_seconds``'s, in the same floating point; rows whose time lag it
    would not give were written as changed (``_only_aged``)."""
    table, col = _quoted(PartitionState._meta.db_table), _state_column
    from_ms, ids = col("time_lag_from_ms"), sorted(groups)
    with connection.cursor() as cursor:
        for start in range(0, len(ids), _IDS_PER_STATEMENT):
            chunk = ids[start : start + _IDS_PER_STATEMENT]
            cursor.execute(
                f"UPDATE {table} SET {col('time_lag_s')} = {aged_time_lag_sql('%s', from_ms)} "
                f"WHERE {col('group')} IN ({', '.join(['%s'] * len(chunk))}) "
                f"AND {from_ms} IS NOT NULL AND {col('present')} AND NOT {col('stale')} "
                f"AND {col('sampled_at')} < %s",
                [figures_ms, *chunk, sampled_at],
            )


# Group ids per UPDATE: well under SQLite's limit on a statement's parameters (32,766).
_IDS_PER_STATEMENT = 5_000


def _quoted(name: str) -> str:
    return connection.ops.quote_name(name)


def _state_column(name: str) -> str:
    """A ``PartitionState`` field's column as the raw SQL of ``_age_time_lags`` and
    ``_mark_left`` names it."""
    return _quoted(PartitionState._meta.get_field(name).column)


def _mark_left(
    vanished: list[tuple[int, str, int]],
    whole: set[int],
    sampled_at: object,
    seen_before: dict[int, datetime],
) -> None:
    """Partitions no longer in their group's cycle: ``present`` false, and ``sampled_at``
    the group's cycle before this one, the last that saw them (a row not rewritten since an
    earlier cycle holds that cycle's time instead). ``vanished``: such rows by key;
    ``whole``: groups all of whose present rows were written this cycle, so that any older
    present row has left."""
    table, col = _quoted(PartitionState._meta.db_table), _state_column
    present, seen = col("present"), col("sampled_at")
    with connection.cursor() as cursor:
        if vanished:
            cursor.executemany(
                f"UPDATE {table} SET {present} = %s, {seen} = %s WHERE {col('group')} = %s "
                f"AND {col('topic')} = %s AND {col('partition')} = %s",
                [
                    (False, _db_datetime(seen_before.get(g)) or sampled_at, g, t, p)
                    for g, t, p in vanished
                ],
            )
        left = [(False, _db_datetime(seen_before[g]), g, sampled_at) for g in whole
                if seen_before.get(g) is not None]  # fmt: skip
        if left:
            cursor.executemany(
                f"UPDATE {table} SET {present} = %s, {seen} = %s WHERE {col('group')} = %s "
                f"AND {present} AND {seen} < %s",
                left,
            )


def _insert_group_samples(
    groups: dict, figures: list[PartitionFigure], at: datetime, stale: Staleness
) -> None:
    """One history row per group of the cycle, its partitions' figures packed
    (``raw_history``). A partition whose broker offsets could not be read keeps its last
    known ones in its state row (``stale``); its sample has none. A retried cycle inserts
    nothing twice."""
    down, blind = stale.broker_down, stale.blind
    by_group: dict[int, dict] = {}
    of_group: dict[tuple[object, str], dict] = {}  # (source, group) -> its partitions
    for fig in figures:
        gone = down and blind(fig)
        # Keyed as the partition's state row is: a repeated figure replaces, as its upsert did.
        partitions = of_group.get((fig.source, fig.group))
        if partitions is None:
            gid = groups[(str(fig.source), fig.group)]
            partitions = of_group[(fig.source, fig.group)] = by_group.setdefault(gid, {})
        partitions[(fig.topic, fig.partition)] = (
            fig.topic, fig.partition, fig.committed,
            None if gone else fig.latest, None if gone else fig.lag,
            None if gone else fig.time_lag_s, fig.pending, fig.failed, fig.acked, False,
        )  # fmt: skip
    db_at = _db_datetime(at)
    names = ["partitions", "lag", "max_time_lag_s", "pending", "failed", "acked", "stale",
             "figures"]  # fmt: skip
    samples = raw_history.sample_rows([list(p.values()) for p in by_group.values()])
    rows = [
        (group_id, db_at, *(row[n] for n in names))
        for group_id, row in zip(by_group, samples, strict=True)
    ]
    _insert_rows(GroupSample, ["group", "at", *names], rows, ["group", "at"])


def _insert_broker_offsets(cluster: Cluster, outcome: CycleOutcome, at: datetime) -> None:
    """One row for the cycle (a retry writes nothing twice), each point in it at the time its
    offsets were read, not the cycle's slot: these rows are the
    time tables of the other collector processes (``broker_offsets_since``), and the process
    that read them holds them at the read time. Stamped with the slot, a process taking the
    cluster over judged the same commit seconds younger whenever a cycle read late (under
    load, after a lease wait): a stopped group's time lag fell back as cycles alternated."""
    if not outcome.offsets:
        return
    read_until, figures = raw_history.broker_row(
        [(o.topic, o.partition, o.time_ms, o.earliest, o.latest) for o in outcome.offsets]
    )
    row = (cluster.id, _db_datetime(at), _db_datetime(ms_to_dt(read_until)), figures)
    _insert_rows(BrokerOffsets, ["cluster", "at", "read_until", "figures"], [row],
                 ["cluster", "at"])  # fmt: skip


def _insert_spout_samples(cluster: Cluster, outcome: CycleOutcome, at: datetime) -> None:
    """Each spout's whole figures of the cycle (Storm UI's joined with its push), kept as a
    short history like the partitions' samples; a retried cycle writes nothing new."""
    db_at = _db_datetime(at)
    rows = [
        (cluster.id, s.topology_id, s.spout_id, db_at, s.emitted, s.acked, s.failed,
         s.complete_latency_ms, s.pending, s.max_spout_pending)
        for s in spout_totals(outcome.spouts)
    ]  # fmt: skip
    columns = ["cluster", "topology_id", "spout_id", "at", "emitted", "acked", "failed",
               "complete_latency_ms", "pending", "max_spout_pending"]  # fmt: skip
    _insert_rows(SpoutSample, columns, rows, ["cluster", "topology_id", "spout_id", "at"])


def _insert_rows(
    model: type[models.Model],
    fields: list[str],
    rows: list[tuple],
    conflict: list[str],
    update: list[str] | None = None,
) -> None:
    """``INSERT … ON CONFLICT`` of many rows in one ``executemany``: do nothing on a conflict
    (a retried cycle's history), or update the ``update`` fields (the latest state).

    Groups, partition states and broker offsets take this path instead of ``bulk_create``:
    for 10,000 partitions the ORM spent over a second building model instances and preparing
    each field of each row in Python, against a few tens of milliseconds for the database's
    own work. ``rows`` hold values the driver takes as they are (numbers, strings, booleans,
    None) plus datetimes prepared by :func:`_db_datetime` and JSON prepared by the field's
    ``get_db_prep_save``. Fields not named get their model default on
    insert (as with the ORM), or their ``db_default``, or NULL. The syntax is SQLite's and
    PostgreSQL's alike (the two databases Lagwatch runs on, as ``bulk_create`` with a
    conflict target required too).
    """
    if not rows:
        return
    meta = model._meta
    quote = connection.ops.quote_name
    names, constant = _defaults(model, fields)
    if names:
        rows = [row + constant for row in rows]
        fields = [*fields, *names]

    def column(name: str) -> str:
        return quote(meta.get_field(name).column)

    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(map(column, fields))}) "
        f"VALUES ({', '.join(['%s'] * len(fields))}) "
        f"ON CONFLICT ({', '.join(map(column, conflict))}) "
    )
    if update:
        sets = ", ".join(f"{column(f)} = EXCLUDED.{column(f)}" for f in update)
        sql += f"DO UPDATE SET {sets}"
    else:
        sql += "DO NOTHING"
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


def _defaults(model: type[models.Model], fields: list[str]) -> tuple[list[str], tuple]:
    """The fields besides ``fields`` that have a model default, and those defaults as the
    database takes them: what a new row inserted with ``fields`` gets for them."""
    defaults = [
        f
        for f in model._meta.concrete_fields
        if not f.primary_key and f.name not in fields and f.has_default()
    ]
    return (
        [f.name for f in defaults],
        tuple(f.get_db_prep_save(f.get_default(), connection) for f in defaults),
    )


def _db_datetime(value: datetime | None) -> object:
    return connection.ops.adapt_datetimefield_value(value)


def _upsert_topic_configs(cluster: Cluster, outcome: CycleOutcome) -> None:
    """The topics whose retention settings were read this cycle (a few, every few minutes);
    a topic not read keeps its row, so a failed read never erases a good one."""
    if not outcome.topic_configs:
        return
    TopicConfig.objects.bulk_create(
        [
            TopicConfig(
                cluster=cluster, topic=c.topic, retention_ms=c.retention_ms,
                retention_bytes=c.retention_bytes, cleanup_policy=c.cleanup_policy,
                read_at=ms_to_dt(c.read_ms),
            )
            for c in outcome.topic_configs
        ],
        update_conflicts=True,
        unique_fields=["cluster", "topic"],
        update_fields=["retention_ms", "retention_bytes", "cleanup_policy", "read_at"],
    )  # fmt: skip


def _insert_rebalances(groups: dict, outcome: CycleOutcome) -> None:
    rows = [
        RebalanceEvent(
            group_id=groups[(r.source, r.group)],
            at=ms_to_dt(r.time_ms),
            generation=r.generation,
            cause=r.cause,
            detail=r.detail,
        )
        for r in outcome.rebalances
        if (r.source, r.group) in groups
    ]
    RebalanceEvent.objects.bulk_create(rows, ignore_conflicts=True)


def _mark_stale(cluster: Cluster, sources: frozenset[str]) -> None:
    ConsumerGroup.objects.filter(cluster=cluster, source__in=sources).update(stale=True)
    PartitionState.objects.filter(group__cluster=cluster, group__source__in=sources).update(
        stale=True
    )


def _record_health(cluster: Cluster, outcome: CycleOutcome, at: datetime) -> None:
    for s in outcome.sources:
        health, _ = SourceHealth.objects.get_or_create(cluster=cluster, source=s.source)
        health.last_attempt_at = at
        health.last_duration_s = max(0.0, (s.finished_ms - s.started_ms) / 1000)
        health.reachable = s.reachable
        if s.reachable:
            health.last_success_at = at
            health.consecutive_failures = 0
        else:
            health.last_error_at = at
            health.last_error = s.error
            health.consecutive_failures += 1
        health.save()
    # The errors listed are those of the latest cycle of each source that ran in it. A
    # ZooKeeper read also stands for the Storm spouts whose commits it holds: their errors
    # carry source "storm" and must be replaced by that read's too, not pile up.
    ran = {s.source for s in outcome.sources}
    ran |= hidden_by(ran)
    CollectionError.objects.filter(cluster=cluster, source__in=ran).delete()
    CollectionError.objects.bulk_create(
        CollectionError(cluster=cluster, source=str(e.source), where=e.where, error=e.error, at=at)
        for e in outcome.errors
    )


PURGATORY_FIGURES = (
    "fetch_purgatory", "produce_purgatory", "fetch_watched", "produce_watched",
    "fetch_expires_per_s", "produce_expires_per_s",
)  # fmt: skip


def _record_brokers(cluster: Cluster, outcome: CycleOutcome) -> None:
    """The latest purgatory figures per broker. A failed scrape keeps the broker's last
    figures and their ``as_of`` (only ``error`` and ``checked_at`` change); a broker whose
    URL left the configuration is dropped, but only when the scrape itself ran, so that an
    adapter failure loses nothing."""
    ran = any(s.source == Source.BROKER_METRICS for s in outcome.sources)
    if not ran:
        BrokerPurgatory.objects.filter(cluster=cluster).delete()  # no URLs configured
        return
    if not outcome.brokers:
        return
    names = [b.broker for b in outcome.brokers]
    BrokerPurgatory.objects.filter(cluster=cluster).exclude(broker__in=names).delete()
    rows = {r.broker: r for r in BrokerPurgatory.objects.filter(cluster=cluster)}
    for b in outcome.brokers:
        row = rows.get(b.broker) or BrokerPurgatory(cluster=cluster, broker=b.broker)
        row.url = b.url
        row.checked_at = ms_to_dt(b.as_of_ms)
        row.error = b.error
        if not b.error:
            row.as_of = row.checked_at
            for name in PURGATORY_FIGURES:
                setattr(row, name, getattr(b, name))
        row.save()


def prune_history(older_than: timedelta, now: datetime) -> int:
    """Drop raw history past its retention (the Parquet log keeps the long history)."""
    cutoff = now - older_than
    deleted, _ = GroupSample.objects.filter(at__lt=cutoff).delete()
    deleted_b, _ = BrokerOffsets.objects.filter(at__lt=cutoff).delete()
    deleted_s, _ = SpoutSample.objects.filter(at__lt=cutoff).delete()
    deleted_c, _ = CollectedCycle.objects.filter(at__lt=cutoff).delete()
    return deleted + deleted_b + deleted_s + deleted_c
