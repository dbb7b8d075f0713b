"""Fixtures of the collection tests (the world they monitor lives in collection_world.py)."""

from tests.dashboard.collection_world import cluster, world  # noqa: F401
