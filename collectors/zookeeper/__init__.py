"""The ZooKeeper source adapter (SPEC §2.1): ``ZooKeeperSource`` reads Storm KafkaSpout
commits and ZooKeeper-based consumers from one ensemble per cycle. ``source`` holds the
session and the cycle, ``batched_reads`` the kazoo engine the two walks (``spouts``,
``consumers``) run on.
"""

from collectors.zookeeper.batched_reads import new_kazoo_handler
from collectors.zookeeper.consumers import parse_consumer_offset, parse_consumer_registration
from collectors.zookeeper.source import ZooKeeperSource

__all__ = [
    "ZooKeeperSource",
    "new_kazoo_handler",
    "parse_consumer_offset",
    "parse_consumer_registration",
]
