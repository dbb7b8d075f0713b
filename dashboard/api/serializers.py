"""The API's way of writing times and partitions, for code outside the API's views (the
history series, the store's tests): the schemas (``dashboard/api/schemas/``) write answers."""

from __future__ import annotations

from typing import Any

from dashboard.api.schemas.common import iso
from dashboard.monitoring.models import PartitionState

__all__ = ["iso", "partition_dict"]


def partition_dict(p: PartitionState) -> dict[str, Any]:
    """A partition as ``/api/v1/partitions/<id>/`` answers it."""
    from dashboard.api.schemas.groups import Partition

    return Partition.model_validate(p).model_dump()
