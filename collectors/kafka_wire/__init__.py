"""A small Kafka wire-protocol client for what confluent-kafka does not expose, or cannot be
trusted with: the epochs of KIP-848 consumer groups (ConsumerGroupDescribe), and committed
offsets (OffsetFetch), which librdkafka 2.16's ``list_consumer_group_offsets`` crashes the
process over when a group coordinator moves (librdkafka issue #5040).

``codec`` is pure (bytes in, frozen dataclasses out, from Kafka's published message schemas);
``client`` owns the sockets. Use a ``GroupClient`` (kept between cycles; ``EpochReader`` is
its former name) or the one-off ``describe_consumer_group_epochs`` / ``fetch_committed_offsets``.
"""

from collectors.kafka_wire.client import (
    OFFSET_FETCH_BATCH,
    BrokerUnreachable,
    DeadlineExceeded,
    EpochReader,
    GroupClient,
    UnsupportedSecurity,
    describe_consumer_group_epochs,
    fetch_committed_offsets,
)
from collectors.kafka_wire.codec import (
    ERROR_NAMES,
    NO_OFFSET,
    ConsumerGroupEpochs,
    GroupOffsets,
    MemberEpochs,
    PartitionOffset,
    WireError,
    error_name,
)

__all__ = [
    "ERROR_NAMES",
    "NO_OFFSET",
    "OFFSET_FETCH_BATCH",
    "BrokerUnreachable",
    "ConsumerGroupEpochs",
    "DeadlineExceeded",
    "EpochReader",
    "GroupClient",
    "GroupOffsets",
    "MemberEpochs",
    "PartitionOffset",
    "UnsupportedSecurity",
    "WireError",
    "describe_consumer_group_epochs",
    "error_name",
    "fetch_committed_offsets",
]
