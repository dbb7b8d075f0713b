"""A cluster rebuilt under the same name: its sources' identity marks compared with the stored
ones in each cycle's transaction (``collectors.identity`` says what the marks are).

When a mark changes, the cluster's offsets history starts over at this cycle, the first that
saw the new marks: its ``history_from``, which the status job hands the evaluator. No sample
polled before it is read, and no commit taken before it, so no REWIND, SKIPPED_DATA or
TOPOLOGY_RESTARTED comes from the old cluster's offsets. Between the last cycle that saw the
old marks and this one nothing tells which cluster a commit belongs to (consumers go on
committing while a broker shuts down; a spout acks what was in flight), so none of them is
read; the new cluster's first commits, if taken before this cycle, are not counted either (the
next ones are). A ``cluster_rebuilt`` event goes on the cluster's timeline at this cycle. The
first marks a source reports are stored without an event: nothing is known to have changed.
"""

from __future__ import annotations

import logging
from datetime import datetime

from collectors.identity import changes, describe_changes
from collectors.outcome import CycleOutcome
from dashboard.monitoring.models import Cluster, ClusterEvent, ClusterIdentity

log = logging.getLogger(__name__)

__all__ = ["note_identities"]


def note_identities(cluster: Cluster, outcome: CycleOutcome, at: datetime) -> ClusterEvent | None:
    """Store the cycle's marks; on a change, start the history over and record the event."""
    if not outcome.identities:
        return None
    stored = {row.source: row for row in ClusterIdentity.objects.filter(cluster=cluster)}
    texts: list[str] = []
    detail: dict[str, dict[str, list[str]]] = {}
    for source, marks in sorted(outcome.identities.items()):
        row = stored.get(source)
        if row is None:
            ClusterIdentity.objects.create(cluster=cluster, source=source, marks=marks, seen_at=at)
            continue
        changed = changes(row.marks, marks)
        if changed:
            texts.append(describe_changes(source, changed))
            detail[source] = {name: [old, new] for name, (old, new) in changed.items()}
        if changed or marks.keys() - row.marks.keys():
            row.marks = {**row.marks, **marks}
        row.seen_at = at
        row.save(update_fields=["marks", "seen_at"])
    if not texts:
        return None
    text = "; ".join(texts) + ". Its offsets history starts over here."
    event, _ = ClusterEvent.objects.update_or_create(
        cluster=cluster, at=at, kind=ClusterEvent.REBUILT, defaults={"text": text, "detail": detail}
    )
    Cluster.objects.filter(pk=cluster.pk).update(history_from=at)
    cluster.history_from = at
    log.warning("cluster %s rebuilt: %s", cluster.name, text)
    return event
