"""The cycles own the collector process's garbage collector: none during a cycle, one at its end.

Why, and why memory stays bounded, is below; the measurements are in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["cycle_gc"]

# Why: a cycle of 10,000 partitions allocates a few hundred thousand objects (records,
# figures, rows), most of them alive until the cycle ends. Left to itself, the collector
# runs a collection every 700 net allocations, and a full one whenever the survivors reach a
# quarter of everything alive, walking the whole worker (Django, the clients, the offset
# history): 1 to 5 full collections per cycle, 0.08 s of a 0.7 s Kafka cycle and 0.6 s of a
# 2.5 s ZooKeeper + broker cycle (benchmarks/RESULTS.md), none of which finds garbage worth
# the walk, since nearly everything a cycle makes is freed by reference counting.
#
# So during a cycle the collector is off, and each cycle ends with one explicit full
# collection, once the cycle's own objects are gone (``run_cycle`` returns from
# ``_run_cycle`` first). And the first cycle of the process ends with ``gc.freeze()``: what
# is alive then (Django, the modules, the clients, the first offset history) is long-lived,
# and leaving it out of every later collection makes the end-of-cycle collection cost
# milliseconds, not a walk of the whole heap.
#
# Memory stays bounded: reference counting frees everything acyclic at once, as before; what
# only the collector can free (reference cycles) is at most one cycle's worth, freed by the
# collection at its end, also when cycles of several clusters overlap (the collector queue
# runs a thread pool), since every cycle collects at its end whether or not another is still
# running. The frozen objects are frozen once per process and never again, so the frozen set
# cannot grow: the most it can hold back is cyclic garbage among what was alive after the
# first cycle. Between cycles, the collector runs as usual. Measured with
# ``benchmarks/bench_cycle.py --worker-cycles N`` (the worker's private RSS per cycle).
_gc_lock = threading.Lock()
_gc_cycles_running = 0
_gc_was_enabled = True
_gc_frozen = False


@contextmanager
def cycle_gc() -> Iterator[None]:
    """Around one cycle: the collector off while any cycle runs, a full collection at its end."""
    global _gc_cycles_running, _gc_was_enabled, _gc_frozen
    with _gc_lock:
        if _gc_cycles_running == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_cycles_running += 1
    try:
        yield
    finally:
        gc.collect()
        with _gc_lock:
            _gc_cycles_running -= 1
            if _gc_cycles_running == 0:
                if not _gc_frozen:
                    gc.freeze()  # after a full collection, with no other cycle's objects alive
                    _gc_frozen = True
                if _gc_was_enabled:
                    gc.enable()
