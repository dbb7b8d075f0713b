"""Short Redis locks: a collection slot dispatched once, one cycle of a cluster at a time,
one run of a Spark job at a time, a /metrics exposition build requested once.

Redis is already the Celery broker, so it costs no new service. Every lock expires on its
own: a worker killed mid-cycle cannot hold a cluster forever. A :func:`lease` is held by a
live process as long as it needs (a thread renews it), and lost a few seconds after that
process dies, so that another collector takes the cluster's next slot instead of skipping it.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import redis
from django.conf import settings

_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end"
_RENEW = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
)
# Raise a cluster's mark to a slot only if higher: collectors finish out of order.
_RAISE = (
    "local v = tonumber(redis.call('get', KEYS[1]) or '-1') "
    "if tonumber(ARGV[1]) > v then redis.call('set', KEYS[1], ARGV[1], 'EX', ARGV[2]) "
    "return 1 end return 0"
)
_WAIT_STEP_S = 0.2
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


def _take(key: str, token: str, ttl_ms: int, wait_s: float) -> bool:
    """Set ``key`` to ``token`` if unset, trying again for up to ``wait_s``."""
    deadline = time.monotonic() + max(0.0, wait_s)
    while not client().set(key, token, nx=True, px=ttl_ms):
        if time.monotonic() >= deadline:
            return False
        time.sleep(_WAIT_STEP_S)
    return True


@contextmanager
def exclusive(key: str, ttl_s: int, wait_s: float = 0.0) -> Iterator[bool]:
    """Yields whether the lock was taken, waiting up to ``wait_s`` for its holder to let go;
    released on exit only if still ours."""
    token = secrets.token_hex(8)
    taken = _take(key, token, max(1, ttl_s) * 1000, wait_s)
    try:
        yield taken
    finally:
        if taken:
            client().eval(_RELEASE, 1, key, token)


@contextmanager
def lease(key: str, ttl_s: float, wait_s: float = 0.0, holder: str = "") -> Iterator[bool]:
    """Yields whether ``key`` was taken, waiting up to ``wait_s`` for its holder to let go.

    While held, a daemon thread renews it every third of ``ttl_s``: a long cycle keeps it,
    and a holder that dies (SIGKILL, a lost machine) loses it ``ttl_s`` later at most.
    Released on exit only if still ours. Its value is ``<holder>/<random token>``: who holds
    a cluster can be read from Redis.
    """
    token = f"{holder}/{secrets.token_hex(8)}"
    ttl_ms = max(1000, int(ttl_s * 1000))
    if not _take(key, token, ttl_ms, wait_s):
        yield False
        return
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(ttl_ms / 3000):
            try:
                if not client().eval(_RENEW, 1, key, token, ttl_ms):
                    return  # lost (expired while this process stalled): nothing to renew
            except redis.RedisError:
                continue  # Redis away for a moment: the next turn tries again

    renewer = threading.Thread(target=renew, name=f"lease {key}", daemon=True)
    renewer.start()
    try:
        yield True
    finally:
        stop.set()
        renewer.join()
        client().eval(_RELEASE, 1, key, token)


def newest_mark(key: str) -> int | None:
    """The highest value :func:`raise_mark` put under ``key`` (None: none, or expired)."""
    value = client().get(key)
    return None if value is None else int(value)


def raise_mark(key: str, value: int, ttl_s: int) -> bool:
    """Set ``key`` to ``value`` if that is higher than what it holds; True if it was."""
    return bool(client().eval(_RAISE, 1, key, value, max(1, ttl_s)))
