"""One-off calls of ``GroupClient`` (connect, ask, close): for scripts and the lab, where no
client is kept between calls. The collector keeps its ``GroupClient`` instead, because its
connections and coordinator lookups make every cycle after the first cheaper.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from collectors.kafka_wire.client import GroupClient
from collectors.kafka_wire.codec import ClassicGroup, ConsumerGroupEpochs, GroupOffsets

__all__ = ["describe_classic_groups", "describe_consumer_group_epochs", "fetch_committed_offsets"]


def describe_consumer_group_epochs(
    bootstrap_servers: str,
    groups: Sequence[str],
    *,
    config: Mapping[str, Any] | None = None,
    timeout_s: float,
) -> dict[str, ConsumerGroupEpochs]:
    """One-off ``GroupClient.describe`` (connects, describes, closes)."""
    with GroupClient(bootstrap_servers, config) as client:
        return client.describe(groups, timeout_s)


def fetch_committed_offsets(
    bootstrap_servers: str,
    groups: Sequence[str],
    *,
    config: Mapping[str, Any] | None = None,
    timeout_s: float,
) -> dict[str, GroupOffsets]:
    """One-off ``GroupClient.fetch_committed`` (connects, fetches, closes)."""
    with GroupClient(bootstrap_servers, config) as client:
        return client.fetch_committed(groups, timeout_s)


def describe_classic_groups(
    bootstrap_servers: str,
    groups: Sequence[str],
    *,
    config: Mapping[str, Any] | None = None,
    timeout_s: float,
) -> dict[str, ClassicGroup]:
    """One-off ``GroupClient.describe_classic`` (connects, describes, closes)."""
    with GroupClient(bootstrap_servers, config) as client:
        return client.describe_classic(groups, timeout_s)
