"""The Kafka source adapter (SPEC §2.2): ``KafkaSource`` reads one cluster's consumer groups,
committed offsets and log offsets per cycle. ``source`` says how a cycle is shaped and why;
``snapshot_from_description`` is public for the tests that map the AdminClient's own answers.
"""

from collectors.kafka.source import KafkaSource
from collectors.kafka.to_records import snapshot_from_description

__all__ = ["KafkaSource", "snapshot_from_description"]
