"""Short Redis locks: a collection slot dispatched once, one cycle of a cluster at a time.

Redis is already the Celery broker, so it costs no new service. Every lock expires on its
own: a worker killed mid-cycle cannot hold a cluster forever.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import redis
from django.conf import settings

_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end"
_client: redis.Redis | None = None


def client() -> redis.Redis:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(
            settings.REDIS_URL, socket_timeout=5, socket_connect_timeout=5
        )
    return _client


def claim_once(key: str, ttl_s: int) -> bool:
    """True for the first caller of ``key`` within ``ttl_s``: dedupes beat's dispatches."""
    return bool(client().set(key, b"1", nx=True, ex=max(1, ttl_s)))


@contextmanager
def exclusive(key: str, ttl_s: int) -> Iterator[bool]:
    """Yields whether the lock was taken; released on exit only if still ours."""
    token = secrets.token_hex(8)
    taken = bool(client().set(key, token, nx=True, ex=max(1, ttl_s)))
    try:
        yield taken
    finally:
        if taken:
            client().eval(_RELEASE, 1, key, token)
