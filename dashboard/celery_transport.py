"""kombu's Redis transport, with a channel that can be closed after its connection was
collected: Celery 5.7 does that when Redis goes away, and the stock channel then kills the
worker (settings: ``CELERY_BROKER_TRANSPORT``).

On a lost broker connection Celery 5.7's consumer first ``collect()``s the connection, which
detaches the transport from it (``transport.client = None``), then ``close()``s it. Closing
the default channel restores its unacknowledged messages (with ``acks_late`` every running
task's message is one), and the restore builds a Redis client from ``transport.client``:
``AttributeError: 'NoneType' object has no attribute 'hostname'``, which no ``ignore_errors``
catches, and the worker process exits (seen when the production run's Redis was stopped
while a Spark job ran: ``tests/lab/test_production_run.py``).

A channel whose transport is detached skips the restore instead. Nothing is lost by that: the
messages stay in Redis's unacked index, the running task acknowledges its message when it
ends (the index is in Redis, not in the channel), and a message whose worker died is
delivered again after the visibility timeout, as for any unacknowledged message.
"""

from __future__ import annotations

from kombu.transport import redis


class Channel(redis.Channel):
    def close(self) -> None:
        if not self.closed and self.connection.client is None:
            self.do_restore = False  # no client to restore through; see the module's doc
        super().close()


class Transport(redis.Transport):
    Channel = Channel
