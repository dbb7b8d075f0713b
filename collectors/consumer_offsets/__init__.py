"""Kafka's ``__consumer_offsets`` topic, read as a monitor needs it (SPEC §2.2).

Three layers, each usable without the one above: ``decode`` turns one record's bytes into
fields (``cursor`` makes every read safe, ``values`` knows the value layouts); ``state`` folds
records into the picture of commits, classic groups and events (``picture`` holds its types
and why generations change); ``reader`` is the one group-less consumer per cluster that feeds
it, each poll through ``fold`` (only the last commit of a key read in the poll is decoded).
The decoder's names below are this package's public face, as before it was a package:
other modules (the wire client's DescribeGroups, a management command) read assignments and
records with it.
"""

from collectors.consumer_offsets.cursor import (
    MALFORMED,
    TRUNCATED,
    UNKNOWN_VERSION,
    UNSUPPORTED_RECORD_TYPE,
    DecodeError,
)
from collectors.consumer_offsets.decode import DecodeStats, decode_record
from collectors.consumer_offsets.values import (
    decode_consumer_assignment,
    decode_consumer_subscription,
)

__all__ = [
    "MALFORMED",
    "TRUNCATED",
    "UNKNOWN_VERSION",
    "UNSUPPORTED_RECORD_TYPE",
    "DecodeError",
    "DecodeStats",
    "decode_consumer_assignment",
    "decode_consumer_subscription",
    "decode_record",
]
