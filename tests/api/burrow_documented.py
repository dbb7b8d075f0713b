"""Burrow's documented response shapes, written down as fixtures.

Source: Burrow's wiki, "HTTP Endpoint" and the "List Clusters", "List Consumers" and
"Consumer Group Status" request pages (linkedin/Burrow/wiki), and the Go structs that encode
them (``core/internal/httpserver/structs.go``: ``httpResponseClusterList``,
``httpResponseConsumerList``, ``httpResponseConsumerStatus``, ``httpResponseConsumerDetail``,
``httpResponseError``; ``core/protocol``: ``ConsumerGroupStatus``, ``PartitionStatus``,
``ConsumerOffset``, ``ConsumerPartition``).

The wiki's status example predates two fields current Burrow writes: ``client_id`` on each
partition and ``observedAt`` on each offset (Burrow 1.2+, ``protocol.PartitionStatus`` and
``protocol.ConsumerOffset``); they are added here, with Burrow's types. Values are the wiki's;
only keys and types are compared.
"""

from __future__ import annotations

REQUEST = {"url": "/v3/kafka", "host": "responding.host.example.com"}

ERROR = {"error": True, "message": "Detailed error message", "request": REQUEST}

CLUSTER_LIST = {
    "error": False,
    "message": "cluster list returned",
    "clusters": ["clustername1", "clustername2"],
    "request": REQUEST,
}

CONSUMER_LIST = {
    "error": False,
    "message": "consumer list returned",
    "consumers": ["group1", "group2"],
    "request": REQUEST,
}

_PARTITION = {
    "complete": 1.0,
    "current_lag": 0,
    "end": {"lag": 25, "offset": 2542, "timestamp": 1511780580382, "observedAt": 1511780580382},
    "owner": "",
    "client_id": "",
    "partition": 0,
    "start": {"lag": 20, "offset": 2526, "timestamp": 1511200836090, "observedAt": 1511200836090},
    "status": "WARN",
    "topic": "topicA",
}

CONSUMER_STATUS = {
    "error": False,
    "message": "consumer group status returned",
    "status": {
        "cluster": "clustername",
        "group": "groupname",
        "status": "WARN",
        "complete": 1.0,
        "maxlag": _PARTITION,
        "partitions": [_PARTITION],
        "partition_count": 1,
        "totallag": 0,
    },
    "request": {"url": "/v3/kafka/clustername/consumer/groupname/status", "host": "h"},
}

# Consumer detail (``httpResponseConsumerDetail``; ``protocol.ConsumerTopics``: a map of topic to
# a list indexed by partition id of ``ConsumerPartition`` {``offsets``, ``owner``, ``client_id``,
# ``current-lag``}, each offset a ``ConsumerOffset``). Values are those of Burrow's own handler
# test (``core/internal/httpserver/kafka_test.go``: ``TestHttpServer_handleConsumerDetail``);
# ``topics`` has the monitored topics' names as keys, so only its values are compared.
CONSUMER_DETAIL = {
    "error": False,
    "message": "consumer detail returned",
    "topics": {
        "testtopic": [
            {
                "offsets": [
                    {"offset": 9837458, "timestamp": 12837487, "observedAt": 12837487, "lag": 2355}
                ],
                "owner": "somehost",
                "client_id": "",
                "current-lag": 2345,
            }
        ]
    },
    "request": {"url": "/v3/kafka/testcluster/consumer/testgroup", "host": "h"},
}

# Values Burrow's JSON may hold where the example shows one kind: pointers (``*ConsumerOffset``,
# ``maxlag``) are null when absent; ``complete`` is a float32 that Go may write as ``1``.
NULLABLE = {"start", "end", "maxlag", "lag"}
FLOAT = {"complete"}
STATUS_STRINGS = {"NOTFOUND", "OK", "WARN", "ERR", "STOP", "STALL", "REWIND"}
