"""Answers built by other modules as JSON documents, declared here so the document and the
answer checks cover them: the assignment report and what-if (``dashboard.monitoring.
assignment``), a spout's figures (``dashboard.monitoring.spouts``), a broker's purgatory
(``BrokerPurgatory.document``), producers (``dashboard.monitoring.producers``).

Their times are already text (``TimeText``); a key these schemas do not list is not written.
"""

from pydantic import Field

from dashboard.api.schemas.common import Closed, Counts, Number, TimeText, TopicPartitions, one_of
from dashboard.monitoring.models import SourceKind

Protocol = one_of(("classic", "consumer"))
Subscriptions = one_of(("reported", "inferred", "partly reported"))


class BalanceMember(Closed):
    member_id: str
    partitions: int
    lag: int | None
    time_lag_s: Number | None
    lag_share: Number | None


class Unowned(Closed):
    partitions: int
    lag: int | None


class Balance(Closed):
    members: list[BalanceMember]
    unowned: Unowned
    total_lag: int | None
    partitions_max: int | None
    partitions_mean: Number | None
    partitions_imbalance: Number | None
    busiest_member: str | None
    busiest_lag_share: Number | None


class WhatIfMember(Closed):
    member_id: str
    partitions: int
    assignment: TopicPartitions


class WhatIfEntry(Closed):
    assignor: str
    protocol: Protocol
    members: list[WhatIfMember] | None
    moved: int | None
    unowned_assigned: int | None
    note: str | None


class WhatIfGroupMember(Closed):
    member_id: str
    client_id: str | None
    partitions: TopicPartitions
    lag: int | None
    time_lag_s: Number | None


class AssignorResult(Closed):
    assignment: dict[str, TopicPartitions] | None
    moves: int | None
    unowned_assigned: int | None
    note: str | None


class WhatIf(Closed):
    """The document ``manage.py assignment_whatif --json`` prints."""

    group: str
    cluster: str
    source: one_of(SourceKind.values)
    type: Protocol | None
    members: list[WhatIfGroupMember]
    imbalance: Number | None
    busiest_member: str | None
    busiest_lag_share: Number | None
    unowned: Unowned
    subscriptions: Subscriptions | None
    assignors: dict[str, AssignorResult] = Field(
        description="By assignor: range, roundrobin, sticky; uniform and server-range for "
        "KIP-848 groups."
    )


class SpoutFigures(Closed):
    topology_id: str
    spout_id: str
    at: TimeText
    emitted: int | None
    acked: int | None
    failed: int | None
    complete_latency_ms: Number | None
    pending: int | None
    max_spout_pending: int | None


class BrokerFigures(Closed):
    broker: str = Field(description="The endpoint's host:port.")
    url: str
    fetch_purgatory: int | None = Field(
        description="Delayed fetches waiting now (NumDelayedOperations)."
    )
    produce_purgatory: int | None
    fetch_watched: int | None = Field(
        description="Kafka's PurgatorySize: watcher entries, completed operations included "
        "until the next purge."
    )
    produce_watched: int | None
    fetch_expirations_per_s: Number | None
    produce_expirations_per_s: Number | None
    as_of: TimeText | None
    checked_at: TimeText | None
    error: str | None


class ProducerPartition(Closed):
    partition: int = Field(ge=-1)
    queued: int | None
    in_flight: int | None
    delivered: int | None
    failed: int | None
    expired: int | None


class ProducerTopic(Closed):
    """One producer client's figures for one topic: queued and in flight from its librdkafka
    statistics; delivered, failed (other than expiry) and expired (_MSG_TIMED_OUT) from its
    delivery-report counts, null when it pushes none (docs/INGEST.md). Counts are summed over
    the client's restarts. `partitions`: the same per partition where known (-1: failed
    before the partitioner placed the record)."""

    cluster: str
    client_id: str
    name: str
    host: str | None
    topic: str
    queued: int | None
    in_flight: int | None
    delivered: int | None
    failed: int | None
    expired: int | None
    failed_by_reason: Counts
    restarts: int
    last_expired_at: TimeText | None
    as_of: TimeText
    partitions: list[ProducerPartition]


class ProducerExpiry(Closed):
    cluster: str
    topic: str
    diagnosis: one_of(("PRODUCER_EXPIRY",))
    expired: int
    reason: str


class Producers(Closed):
    producers: list[ProducerTopic]
    producer_expiry: list[ProducerExpiry]
