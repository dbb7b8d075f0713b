"""ZooKeeper source adapter: Storm KafkaSpout commits and ZooKeeper-based Kafka consumers.

Reads, per cycle (SPEC §2.1), the spout roots it is configured with (``spouts``) and, with
``zk_consumers``, the pre-0.9 high-level consumers' registry under ``/consumers``
(``consumers``); both walks run together on the batched-read engine (``batched_reads``).

**One result per cycle.** Both kinds live in one ZooKeeper ensemble behind one session, so
they are reachable or not together: :meth:`ZooKeeperSource.collect` returns a single
:class:`CollectionResult` with ``source=Source.ZOOKEEPER`` (the system read) and every record
in it carries its own ``source`` (``STORM`` for spout commits and their errors,
``ZOOKEEPER`` for consumer records and their errors; a connection failure is a ``ZOOKEEPER``
error). A caller wanting one result per kind filters on the records' ``source``.

**Failures.** A bad node is one :class:`SourceError` (``where`` = its path) and the cycle goes
on. A node or group deleted between its listing and its read (``NoNodeError``) is skipped
silently: that is the normal race with a consumer or topology going away. A configured spout
root that does not exist is an error for that root only. Anything that makes the session
untrustworthy (unreachable server, connection or session lost mid-cycle, no reply before the
deadline) ends the cycle with ``reachable=False``, **empty** ``commits`` and ``groups`` (a
half-read tree must not look like partitions that went away) and one error saying why.
:meth:`collect` never raises for a source problem.

Records come in a stable order (spout roots as configured, then spout ids and partitions;
groups by name, then topic and partition), so consecutive cycles compare line by line.

The adapter has no Django imports; it is driven by a Celery task, one object per cluster.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Sequence

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from collectors.records import CollectionResult, Source, SourceError
from collectors.zookeeper.batched_reads import CycleFailed, Walker, new_kazoo_handler, run
from collectors.zookeeper.consumers import walk_consumers
from collectors.zookeeper.identity import walk_identity
from collectors.zookeeper.spouts import walk_spouts

__all__ = ["ZooKeeperSource"]

# Named as when the adapter was collectors/zookeeper_source.py: logging configuration and log
# queries that name it keep working.
log = logging.getLogger("collectors.zookeeper_source")


class ZooKeeperSource:
    """One ZooKeeper ensemble's spout roots and (optionally) its ZooKeeper consumer groups.

    Keeps one kazoo client, created on the first :meth:`collect` and replaced whenever it is
    found disconnected, so a restarted ensemble is picked up without restarting the worker.
    ``timeout_s`` bounds a whole :meth:`collect`, connection included, and is also the
    requested session timeout. One object is not meant to be collected from concurrently;
    calls are serialised by a lock.
    """

    def __init__(
        self,
        hosts: str,
        spout_roots: Sequence[str],
        zk_consumers: bool,
        timeout_s: float = 10,
    ) -> None:
        self.hosts = hosts
        # "/a/b/" and "/a/b" are one root; "/" stays "/" so children join as "/<child>".
        self.spout_roots = [root.rstrip("/") or "/" for root in spout_roots]
        self.zk_consumers = zk_consumers
        self.timeout_s = float(timeout_s)
        self._client: KazooClient | None = None
        self._lock = threading.Lock()

    # -- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Stop the session; a later :meth:`collect` opens a new one."""
        with self._lock:
            self._drop_client()

    def __enter__(self) -> ZooKeeperSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _drop_client(self) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        try:
            client.stop()
            client.close()
        except Exception:  # a dying client must not stop the next cycle
            log.debug("error while stopping kazoo client for %s", self.hosts, exc_info=True)

    def _connected_client(self, deadline: float) -> KazooClient:
        client = self._client
        if client is not None and client.connected:
            return client
        # Disconnected (lost, expired or never started): a fresh client gives a known state
        # instead of waiting on kazoo's background reconnect policy. Nothing is lost: the
        # adapter holds no watches and no ephemeral nodes.
        self._drop_client()
        client = None
        try:
            client = KazooClient(
                hosts=self.hosts,
                timeout=self.timeout_s,
                handler=new_kazoo_handler(),
                connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
            )
            client.start(timeout=max(0.05, deadline - time.monotonic()))
        except Exception as exc:  # timeout, bad host string, resolver error, …
            if client is not None:  # kazoo stops it on a timeout, not on every failure
                with contextlib.suppress(Exception):
                    client.stop()
                    client.close()
            raise CycleFailed(
                f"cannot connect to ZooKeeper within {self.timeout_s:g} s: "
                f"{type(exc).__name__}: {exc}".rstrip(": ")
            ) from None
        self._client = client
        return client

    # -- the cycle -----------------------------------------------------------------------

    def _watched_roots(self) -> list[str]:
        """The roots whose creation identifies the ensemble's data (``collectors.identity``)."""
        return [*self.spout_roots, *(["/consumers"] if self.zk_consumers else [])]

    def collect(self, now_ms: int) -> CollectionResult:
        """Read everything once; ``now_ms`` is the caller's clock for ``started_ms``."""
        with self._lock:
            started = time.monotonic()
            deadline = started + self.timeout_s
            result = CollectionResult(source=Source.ZOOKEEPER, started_ms=now_ms)
            try:
                client = self._connected_client(deadline)
                walkers: list[Walker] = [walk_identity(self._watched_roots(), result)]
                if self.spout_roots:
                    walkers.append(walk_spouts(self.spout_roots, result))
                if self.zk_consumers:
                    walkers.append(walk_consumers(result))
                run(client, walkers, deadline, self.timeout_s)
            except CycleFailed as exc:
                log.warning("ZooKeeper %s: %s", self.hosts, exc)
                result = CollectionResult(
                    source=Source.ZOOKEEPER,
                    started_ms=now_ms,
                    reachable=False,
                    errors=[SourceError(Source.ZOOKEEPER, self.hosts, str(exc))],
                )
            result.finished_ms = now_ms + round((time.monotonic() - started) * 1000)
            return result
