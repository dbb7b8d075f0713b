"""Models of the monitoring app, one module per concern."""

from dashboard.monitoring.models.brokers import BrokerPurgatory
from dashboard.monitoring.models.config import Cluster
from dashboard.monitoring.models.health import CollectionError, ServiceHeartbeat, SourceHealth
from dashboard.monitoring.models.identity import ClusterEvent, ClusterIdentity
from dashboard.monitoring.models.ingest import ClientReportRow, IngestKind
from dashboard.monitoring.models.jobs import SparkJobOutcome, SparkJobRun
from dashboard.monitoring.models.rollups import LagRollup, RollupLevel
from dashboard.monitoring.models.state import (
    BrokerOffsets,
    CollectedCycle,
    ConsumerGroup,
    GroupSample,
    PartitionState,
    RebalanceEvent,
    SourceKind,
    SpoutSample,
    Status,
    StatusChange,
    TopicConfig,
    seen_at,
)

__all__ = [
    "BrokerOffsets",
    "BrokerPurgatory",
    "ClientReportRow",
    "Cluster",
    "ClusterEvent",
    "ClusterIdentity",
    "CollectedCycle",
    "CollectionError",
    "ConsumerGroup",
    "IngestKind",
    "LagRollup",
    "GroupSample",
    "PartitionState",
    "RebalanceEvent",
    "RollupLevel",
    "ServiceHeartbeat",
    "SourceHealth",
    "SourceKind",
    "SparkJobOutcome",
    "SpoutSample",
    "SparkJobRun",
    "Status",
    "StatusChange",
    "TopicConfig",
    "seen_at",
]
