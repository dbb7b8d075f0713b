"""The broker transport Celery uses (dashboard/celery_transport.py) against a real Redis.

Celery 5.7's consumer, on a lost broker connection, ``collect()``s the connection and then
``close()``s it, while a running ``acks_late`` task's message is still unacknowledged; the task
acknowledges it later, on the old channel. With the stock Redis channel both steps fail with an
AttributeError that kills the worker; with Lagwatch's, the close succeeds and the late
acknowledgement fails as a connection error, which kombu logs and Celery survives.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import redis as redis_py
from kombu import Connection, Exchange, Queue
from kombu.transport import redis as stock

from dashboard.celery_transport import Transport

TRANSPORTS = pytest.mark.parametrize(
    ("transport", "stock_kind"),
    [(stock.Transport, True), (Transport, False)],
    ids=["kombu's", "lagwatch's"],
)


def delivered_then_detached(url: str, transport: type) -> tuple[Connection, Any]:
    """One message delivered and unacknowledged on a connection whose transport was then
    detached: ``collect()`` closes the channels, then detaches the transport, and when closing
    the default channel times out (the consumer bounds the old sockets to a second, and a
    BRPOP was in flight) the channel stays open with the transport detached all the same.
    That state is made here directly (``_do_close_transport``, what ``collect`` ends with), as
    a worker's log showed it, rather than by racing a BRPOP against a stopped Redis."""
    redis_py.Redis.from_url(url).delete("unacked", "unacked_index")
    name = f"t-{uuid.uuid4().hex[:8]}"
    queue = Queue(name, Exchange(name), routing_key=name)
    with Connection(url, transport=transport) as conn:
        conn.Producer().publish({"n": 1}, exchange=queue.exchange, routing_key=name,
                                declare=[queue])  # fmt: skip
    conn = Connection(url, transport=transport)
    message = queue(conn.default_channel).get(no_ack=False)
    assert message is not None and message.payload == {"n": 1}
    conn._do_close_transport()
    return conn, message


def raised(call: Any) -> Exception | None:
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the failure is the finding
        return exc
    return None


def unacked(url: str) -> list[bytes]:
    return list(redis_py.Redis.from_url(url).hkeys("unacked"))


@TRANSPORTS
def test_closing_the_collected_connection(redis_url: str, transport: type, stock_kind: bool):
    conn, _ = delivered_then_detached(redis_url, transport)
    error = raised(conn.close)
    if stock_kind:  # kombu's own: if this starts passing, the shim can go
        assert isinstance(error, AttributeError) and "hostname" in str(error), error
    else:
        assert error is None
        assert len(unacked(redis_url)) == 1  # not lost: delivered again after the timeout


@TRANSPORTS
def test_acknowledging_on_the_old_channel(redis_url: str, transport: type, stock_kind: bool):
    conn, message = delivered_then_detached(redis_url, transport)
    raised(conn.close)
    error = raised(message.ack)
    if stock_kind:
        assert isinstance(error, AttributeError) and "NoneType" in str(error), error
    else:
        # A connection error: what kombu's ack_log_error logs and Celery's consumer expects.
        assert isinstance(error, conn.connection_errors), error
        assert raised(lambda: message.ack_log_error(_Log(), conn.connection_errors)) is None
        assert len(unacked(redis_url)) == 1


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def critical(self, msg: str, *args: object, **kwargs: object) -> None:
        self.lines.append(msg % args)


def test_celery_uses_it() -> None:
    from dashboard.celery import app

    with app.connection_for_write() as conn:
        assert conn.transport_cls == "dashboard.celery_transport:Transport"
        assert isinstance(conn.transport, Transport)
