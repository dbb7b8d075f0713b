"""Short Redis locks: a collection slot dispatched once, one cycle of a cluster at a time,
one run of a Spark job at a time, a /metrics exposition build requested once.

Redis is already the Celery broker, so it costs no new service. Every lock expires on its
own: a worker killed mid-cycle cannot hold a cluster forever. A :func:`lease` is held by a
live process as long as it needs (a thread renews it), and lost a few seconds after that
process dies, so that another collector takes the cluster's next slot instead of skipping it;
the cycles waiting for it are served in slot order (a queue in Redis beside the lease).
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
# Take ``KEYS[1]`` only for the lowest live waiter of the queue ``KEYS[2]`` (a sorted set of
# waiters by their order ``ARGV[6]``, joined here; ``KEYS[3]`` the hash of when each last
# asked): waiters that stopped asking for ``ARGV[4]`` ms (a dead process) are dropped first.
_TAKE_IN_ORDER = (
    "local t = redis.call('time') "
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "
    "redis.call('hset', KEYS[3], ARGV[1], now) redis.call('zadd', KEYS[2], 'NX', ARGV[6], ARGV[1]) "
    "redis.call('pexpire', KEYS[3], ARGV[5]) redis.call('pexpire', KEYS[2], ARGV[5]) "
    "local first = redis.call('zrange', KEYS[2], 0, 0) "
    "while first[1] and first[1] ~= ARGV[1] do "
    "  local seen = tonumber(redis.call('hget', KEYS[3], first[1]) or '0') "
    "  if now - seen <= tonumber(ARGV[4]) then return 0 end "
    "  redis.call('zrem', KEYS[2], first[1]) redis.call('hdel', KEYS[3], first[1]) "
    "  first = redis.call('zrange', KEYS[2], 0, 0) "
    "end "
    "if redis.call('set', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[3]) then "
    "  redis.call('zrem', KEYS[2], ARGV[1]) redis.call('hdel', KEYS[3], ARGV[1]) return 1 "
    "end return 0"
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


def _take_in_order(key: str, token: str, ttl_ms: int, wait_s: float, order: int) -> bool:
    """``_take``, but waiters are served lowest ``order`` first (ties by arrival): each waits
    in the queue ``<key>:queue`` until it is the first live one there and the key is free.
    A waiter that has not asked for ``2 × _WAIT_STEP_S`` and a second is taken for gone."""
    queue, seen = f"{key}:queue", f"{key}:queue:seen"
    member = f"{order:020d}/{token}"
    stale_ms = int(_WAIT_STEP_S * 2000) + 1000
    keep_ms = max(60_000, int(wait_s * 2000))
    deadline = time.monotonic() + max(0.0, wait_s)
    redis_client = client()
    try:
        while True:
            if redis_client.eval(
                _TAKE_IN_ORDER,
                3,
                key,
                queue,
                seen,
                member,
                token,
                ttl_ms,
                stale_ms,
                keep_ms,
                order,
            ):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(_WAIT_STEP_S)
    finally:
        try:  # taken or given up: out of the queue (taken, the script did it already)
            redis_client.zrem(queue, member)
            redis_client.hdel(seen, member)
        except redis.RedisError:
            pass  # gone with Redis; or dropped by the next waiter as stale


@contextmanager
def lease(
    key: str, ttl_s: float, wait_s: float = 0.0, holder: str = "", order: int | None = None
) -> Iterator[bool]:
    """Yields whether ``key`` was taken, waiting up to ``wait_s`` for its holder to let go.

    With ``order`` (a collection slot), waiters are served in that order, whoever polls
    first: two cycles waiting behind a slow one (the database locked) are collected oldest
    first, so the newer one's mark does not make the older one's slot look stored already.

    While held, a daemon thread renews it every third of ``ttl_s``: a long cycle keeps it,
    and a holder that dies (SIGKILL, a lost machine) loses it ``ttl_s`` later at most.
    Released on exit only if still ours. Its value is ``<holder>/<random token>``: who holds
    a cluster can be read from Redis.
    """
    token = f"{holder}/{secrets.token_hex(8)}"
    ttl_ms = max(1000, int(ttl_s * 1000))
    taken = (
        _take(key, token, ttl_ms, wait_s)
        if order is None
        else _take_in_order(key, token, ttl_ms, wait_s, order)
    )
    if not taken:
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
