"""A small Kafka wire-protocol client for what confluent-kafka does not expose, or cannot be
trusted with: share groups (ListGroups by type, ShareGroupDescribe, DescribeShareGroupOffsets;
KIP-932), streams groups (ListGroups by type, StreamsGroupDescribe; KIP-1071), the epochs of
KIP-848 consumer groups (ConsumerGroupDescribe), committed offsets (OffsetFetch), which
librdkafka 2.16's ``list_consumer_group_offsets`` crashes the process over when a group
coordinator moves (librdkafka issue #5040), and classic groups' members (DescribeGroups), as
``describe_consumer_groups`` aborts the process when a coordinator's connection drops mid-call
(librdkafka #4605/#3663).

``codec`` is pure (bytes in, frozen dataclasses out, from Kafka's published message schemas);
``connection`` owns the sockets, ``client`` the coordinator requests (``group_apis`` what
differs between them), ``listing`` ListGroups asked of every broker, ``one_off`` the calls
that connect, ask and close. Use a ``GroupClient`` (kept between cycles; ``EpochReader`` is
its former name) or the one-off ``describe_consumer_group_epochs`` / ``fetch_committed_offsets``
/ ``describe_classic_groups``.
"""

from collectors.kafka_wire.client import EpochReader, GroupClient
from collectors.kafka_wire.codec import (
    ERROR_NAMES,
    NO_OFFSET,
    ClassicGroup,
    ClassicMember,
    ConsumerGroupEpochs,
    GroupOffsets,
    ListedGroup,
    MemberEpochs,
    PartitionOffset,
    ShareGroupDescription,
    ShareGroupOffsets,
    ShareMember,
    SharePartitionOffset,
    StreamsGroupDescription,
    StreamsMember,
    StreamsTasks,
    Subtopology,
    WireError,
    error_name,
    lag_upper_bound,
)
from collectors.kafka_wire.connection import (
    BrokerUnreachable,
    DeadlineExceeded,
    UnsupportedSecurity,
)
from collectors.kafka_wire.group_apis import DESCRIBE_GROUPS_BATCH, OFFSET_FETCH_BATCH
from collectors.kafka_wire.listing import GroupListing
from collectors.kafka_wire.one_off import (
    describe_classic_groups,
    describe_consumer_group_epochs,
    fetch_committed_offsets,
)

__all__ = [
    "DESCRIBE_GROUPS_BATCH",
    "ERROR_NAMES",
    "NO_OFFSET",
    "OFFSET_FETCH_BATCH",
    "BrokerUnreachable",
    "ClassicGroup",
    "ClassicMember",
    "ConsumerGroupEpochs",
    "DeadlineExceeded",
    "EpochReader",
    "GroupClient",
    "GroupListing",
    "GroupOffsets",
    "ListedGroup",
    "MemberEpochs",
    "PartitionOffset",
    "ShareGroupDescription",
    "ShareGroupOffsets",
    "ShareMember",
    "SharePartitionOffset",
    "StreamsGroupDescription",
    "StreamsMember",
    "StreamsTasks",
    "Subtopology",
    "UnsupportedSecurity",
    "WireError",
    "describe_classic_groups",
    "describe_consumer_group_epochs",
    "error_name",
    "fetch_committed_offsets",
    "lag_upper_bound",
]
