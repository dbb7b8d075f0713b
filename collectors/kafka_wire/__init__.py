"""A small Kafka wire-protocol client for what confluent-kafka does not expose: the group
epoch, assignment epoch and member epochs of KIP-848 consumer groups.

``codec`` is pure (bytes in, frozen dataclasses out, from Kafka's published message schemas);
``client`` owns the sockets. Use ``EpochReader`` (kept between cycles) or the one-off
``describe_consumer_group_epochs``.
"""

from collectors.kafka_wire.client import (
    BrokerUnreachable,
    DeadlineExceeded,
    EpochReader,
    UnsupportedSecurity,
    describe_consumer_group_epochs,
)
from collectors.kafka_wire.codec import (
    ERROR_NAMES,
    ConsumerGroupEpochs,
    MemberEpochs,
    WireError,
    error_name,
)

__all__ = [
    "ERROR_NAMES",
    "BrokerUnreachable",
    "ConsumerGroupEpochs",
    "DeadlineExceeded",
    "EpochReader",
    "MemberEpochs",
    "UnsupportedSecurity",
    "WireError",
    "describe_consumer_group_epochs",
    "error_name",
]
