"""The soak's network faults: Toxiproxy (``lab/toxiproxy.py``) between the product and Kafka,
ZooKeeper, Redis and PostgreSQL, each fault kind of ``lab.toxiproxy.FAULTS`` in turn.

Apart from ``benchmarks/soak.py`` (which adds them to its faults and ``toxiproxy`` to its
stack) so that each module stays readable. A toxic (2 s latency, a 10 KB/s link, hung
connections, resets) is held ``TOXIC_S``, a cut ``CUT_S``; the sources page is watched by the
soak as for its other faults: a Kafka or ZooKeeper fault that makes the source unreachable
must show it down there (the slow link is collected on, so it shows nothing), a Redis cut
stops collection (the page says so) and a PostgreSQL cut only where the soak runs on it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from lab.toxiproxy import FAULTS as KINDS
from lab.toxiproxy import ToxiproxyClient, injected

TOXIC_S = 30
CUT_S = 60
_SHOWN = {"kafka": "Kafka", "zookeeper": "ZooKeeper"}
# Slots missing while these lasted are not counted lost: nothing could store them.
EXCUSED = frozenset({"redis-cut", "postgres-cut"})


def network_fault(proxy: str, kind: str) -> Callable[[Any, Any], None]:
    """The soak's ``how`` of one fault: ``kind`` on ``proxy``, held, undone."""

    def how(lab: Any, fault: Any) -> None:
        client = ToxiproxyClient(lab.endpoints["toxiproxy"])
        fault.started = time.time()
        with injected(client, proxy, kind) as spec:
            fault.details.update(proxy=proxy, kind=kind, what=spec.what)
            time.sleep(CUT_S if kind == "cut" else TOXIC_S)
        fault.ended = time.time()

    return how


def network_faults(with_postgres: bool) -> list[tuple[str, Callable[[Any, Any], None], str | None]]:
    """(name, how, the source the sources page must show down or None), as ``soak.FAULTS``."""
    faults = [
        (f"{proxy}-{kind}", network_fault(proxy, kind), None if kind == "slow-link" else shown)
        for proxy, shown in _SHOWN.items()
        for kind in KINDS
    ]
    faults.append(("redis-cut", network_fault("redis", "cut"), "collection"))
    if with_postgres:
        faults.append(("postgres-cut", network_fault("postgres", "cut"), None))
    return faults
