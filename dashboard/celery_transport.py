"""kombu's Redis transport, with a channel that stays safe to use after its connection was
collected: Celery 5.7 collects a lost connection, and the stock channel then kills the worker
(settings: ``CELERY_BROKER_TRANSPORT``).

On a lost broker connection Celery 5.7's consumer first ``collect()``s the connection, which
detaches kombu's transport from it (``transport.client = None``; a closed channel loses its
transport altogether), then ``close()``s it and connects again. Two things still use the old
channel afterwards, and both build a Redis client from the detached transport, failing with
an ``AttributeError`` that no ``ignore_errors`` catches, so the worker process exits (both seen
when the production run's Redis was stopped while a Spark job ran,
``tests/lab/test_production_run.py``):

- closing the default channel restores its unacknowledged messages (with ``acks_late``
  every running task's message is one): ``'NoneType' object has no attribute 'hostname'``;
- the running task ends after the reconnection and acknowledges its message on the old
  channel: ``'NoneType' object has no attribute 'client'``.

This channel skips that restore and answers any other use with a Redis ``ConnectionError``,
which kombu and Celery handle as the lost connection it is (an acknowledgement that fails so
is logged). Nothing is lost by that: the message stays in Redis's unacked index and is
delivered again after the visibility timeout, as any message whose acknowledgement did not
reach the broker (``acks_late`` is at least once).
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis
from redis.exceptions import ConnectionError as RedisConnectionError


def _detached(channel: redis.Channel) -> bool:
    return getattr(channel.connection, "client", None) is None


class Channel(redis.Channel):
    def close(self) -> None:
        if not self.closed and _detached(self):
            self.do_restore = False  # no client to restore through; see the module's doc
        super().close()

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        if _detached(self):
            raise RedisConnectionError("this channel's broker connection was closed")
        return super()._connparams(asynchronous)


class Transport(redis.Transport):
    Channel = Channel
