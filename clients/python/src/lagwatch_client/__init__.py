"""Pushes what Lagwatch cannot read from the brokers: librdkafka clients' statistics (with a
producer's delivery-report counts) and a Storm spout's per-partition figures, to Lagwatch's
ingest API (docs/INGEST.md in the Lagwatch repository)."""

from lagwatch_client._version import __version__
from lagwatch_client.librdkafka import DeliveryCounts, StatsForwarder
from lagwatch_client.sender import IngestSender
from lagwatch_client.spout import SpoutPartition, SpoutPusher, SpoutReport

__all__ = [
    "DeliveryCounts",
    "IngestSender",
    "SpoutPartition",
    "SpoutPusher",
    "SpoutReport",
    "StatsForwarder",
    "__version__",
]
