"""The bytes of the Kafka messages the group client exchanges, and nothing else (pure).

Encoders build request frames; decoders turn response bodies into frozen dataclasses. No
sockets here, so every rule of the format is tested with hand-built byte vectors
(``tests/collectors/test_kafka_wire*.py``), including answers no local broker gives.

Written from Apache Kafka's message schemas, ``clients/src/main/resources/common/message/``
in apache/kafka, as released in Kafka 4.1.1 (the same files ship inside
``kafka-clients-4.1.1.jar`` under ``common/message/``; the lab's jar is what they were
checked against), and for ListGroups, the share groups' and the streams groups' messages
(``list_groups``, ``share_groups``, ``streams_groups``) as released in Kafka 4.4.0
(``kafka-clients-4.4.0.jar``); the others' layouts are unchanged in 4.4.0. One module per
message family, each naming its schema files and why it speaks the versions it speaks;
``framing`` and ``reader`` hold what they share. The names below are the codec's public
face, for the client and the tests.
"""

from collectors.kafka_wire.codec.consumer_group_describe import (
    ConsumerGroupDescribeResult,
    ConsumerGroupEpochs,
    MemberEpochs,
    decode_consumer_group_describe_response,
    encode_consumer_group_describe_request,
)
from collectors.kafka_wire.codec.describe_groups import (
    ClassicGroup,
    ClassicMember,
    DescribeGroupsResult,
    decode_describe_groups_response,
    encode_describe_groups_request,
)
from collectors.kafka_wire.codec.discovery import (
    ApiVersionsResult,
    Coordinator,
    FindCoordinatorResult,
    decode_api_versions_response,
    decode_find_coordinator_response,
    encode_api_versions_request,
    encode_find_coordinator_request,
)
from collectors.kafka_wire.codec.framing import (
    API_VERSIONS,
    CONSUMER_GROUP_DESCRIBE,
    COORDINATOR_NOT_AVAILABLE,
    DESCRIBE_GROUPS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    ERROR_NAMES,
    FIND_COORDINATOR,
    LIST_GROUPS,
    OFFSET_FETCH,
    OUR_VERSIONS,
    REQUEST_TIMED_OUT,
    SHARE_GROUP_DESCRIBE,
    STREAMS_GROUP_DESCRIBE,
    UNKNOWN_SERVER_ERROR,
    UNSUPPORTED_VERSION,
    choose_version,
    decode_response_header,
    encode_request,
    error_name,
    is_flexible,
    request_header_version,
    response_header_version,
    uvarint,
)
from collectors.kafka_wire.codec.list_groups import (
    ListedGroup,
    ListGroupsResult,
    decode_list_groups_response,
    encode_list_groups_request,
)
from collectors.kafka_wire.codec.offset_fetch import (
    NO_OFFSET,
    GroupOffsets,
    OffsetFetchResult,
    PartitionOffset,
    decode_offset_fetch_response,
    encode_offset_fetch_request,
)
from collectors.kafka_wire.codec.reader import WireError, read_uvarint, uuid_str
from collectors.kafka_wire.codec.share_groups import (
    ShareGroupDescribeResult,
    ShareGroupDescription,
    ShareGroupOffsets,
    ShareGroupOffsetsResult,
    ShareMember,
    SharePartitionOffset,
    decode_describe_share_group_offsets_response,
    decode_share_group_describe_response,
    encode_describe_share_group_offsets_request,
    encode_share_group_describe_request,
    lag_upper_bound,
)
from collectors.kafka_wire.codec.streams_groups import (
    StreamsGroupDescribeResult,
    StreamsGroupDescription,
    StreamsMember,
    StreamsTasks,
    Subtopology,
    decode_streams_group_describe_response,
    encode_streams_group_describe_request,
)

__all__ = [
    "API_VERSIONS",
    "CONSUMER_GROUP_DESCRIBE",
    "COORDINATOR_NOT_AVAILABLE",
    "DESCRIBE_GROUPS",
    "DESCRIBE_SHARE_GROUP_OFFSETS",
    "ERROR_NAMES",
    "FIND_COORDINATOR",
    "LIST_GROUPS",
    "NO_OFFSET",
    "OFFSET_FETCH",
    "OUR_VERSIONS",
    "REQUEST_TIMED_OUT",
    "SHARE_GROUP_DESCRIBE",
    "STREAMS_GROUP_DESCRIBE",
    "UNKNOWN_SERVER_ERROR",
    "UNSUPPORTED_VERSION",
    "ApiVersionsResult",
    "ClassicGroup",
    "ClassicMember",
    "ConsumerGroupDescribeResult",
    "ConsumerGroupEpochs",
    "Coordinator",
    "DescribeGroupsResult",
    "FindCoordinatorResult",
    "GroupOffsets",
    "ListGroupsResult",
    "ListedGroup",
    "MemberEpochs",
    "OffsetFetchResult",
    "PartitionOffset",
    "ShareGroupDescribeResult",
    "ShareGroupDescription",
    "ShareGroupOffsets",
    "ShareGroupOffsetsResult",
    "ShareMember",
    "SharePartitionOffset",
    "StreamsGroupDescribeResult",
    "StreamsGroupDescription",
    "StreamsMember",
    "StreamsTasks",
    "Subtopology",
    "WireError",
    "choose_version",
    "decode_api_versions_response",
    "decode_consumer_group_describe_response",
    "decode_describe_groups_response",
    "decode_describe_share_group_offsets_response",
    "decode_find_coordinator_response",
    "decode_list_groups_response",
    "decode_offset_fetch_response",
    "decode_response_header",
    "decode_share_group_describe_response",
    "decode_streams_group_describe_response",
    "encode_api_versions_request",
    "encode_consumer_group_describe_request",
    "encode_describe_groups_request",
    "encode_describe_share_group_offsets_request",
    "encode_find_coordinator_request",
    "encode_list_groups_request",
    "encode_offset_fetch_request",
    "encode_request",
    "encode_share_group_describe_request",
    "encode_streams_group_describe_request",
    "error_name",
    "is_flexible",
    "lag_upper_bound",
    "read_uvarint",
    "request_header_version",
    "response_header_version",
    "uuid_str",
    "uvarint",
]
