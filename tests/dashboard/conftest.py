"""Fixtures of the collection tests (the world they monitor lives in collection_world.py)."""

from collections.abc import Iterator

import pytest

from dashboard import locks
from tests.dashboard.collection_world import cluster, world  # noqa: F401


@pytest.fixture
def redis(redis_url: str, settings) -> Iterator[str]:
    """The product's Redis client on a real, emptied ``redis-server`` (the module's)."""
    settings.REDIS_URL = redis_url
    locks._client = None
    locks.client().flushdb()
    yield redis_url
    locks._client = None
