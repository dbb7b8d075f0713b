"""``tests/scheduling.py`` run against a simulated xdist session: workers that run their tests
in order, hold their last one until more work or the shutdown comes (as xdist's workers do),
and stack tests that take much longer than the others."""

from __future__ import annotations

import heapq
from collections import OrderedDict
from types import SimpleNamespace

import pytest

from tests import scheduling
from tests.scheduling import STACK_UNITS, StackAwareScheduling, scope_of, tier

COLLECTION = sorted(
    [f"tests/lab/test_lab_alerts.py::test_{i}" for i in range(3)]
    + [f"tests/ui/test_browser.py::test_{i}" for i in range(2)]
    + [f"tests/lab/test_lab_verdicts.py::test_{i}" for i in range(2)]
    + [f"tests/lab/test_production_run.py::test_{i}" for i in range(4)]
    + [f"tests/lab/test_stack.py::test_{i}" for i in range(5)]
    + [f"tests/lab/test_sharded_collectors.py::test_{i}" for i in range(2)]
    + [f"tests/spark_jobs/test_standalone_cluster.py::test_{i}" for i in range(1)]
    + [f"tests/unit/test_m{m}.py::test_{i}" for m in range(30) for i in range(4)],
    key=tier,
)


class Worker:
    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.queue: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indexes: list[int]) -> None:
        assert not self.shutting_down
        self.queue.extend(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True

    def can_run(self) -> bool:
        # An xdist worker runs a test once it knows the next one (or that none will come).
        return len(self.queue) >= 2 or (len(self.queue) == 1 and self.shutting_down)


def scheduler(workers: list[Worker]) -> StackAwareScheduling:
    sched = StackAwareScheduling.__new__(StackAwareScheduling)
    sched.numnodes = len(workers)
    sched.collection = None
    sched.workqueue = OrderedDict()
    sched.assigned_work = {}
    sched.registered_collections = {}
    sched.log = lambda *args: None
    sched.config = SimpleNamespace(option=SimpleNamespace(loadscopereorder=False))
    for w in workers:
        sched.add_node(w)
        sched.add_node_collection(w, COLLECTION)
    return sched


def simulate(n_workers: int, stack_test_s: float = 50.0) -> tuple[list[str], int, dict[str, str]]:
    """Every test run (in the order they ended), the most stack units under way at once (a
    unit is under way from its first test's start to its last test's end), and the worker
    that ran each test."""
    workers = [Worker(f"gw{i}") for i in range(n_workers)]
    sched = scheduler(workers)
    sched.schedule()
    ran: list[str] = []
    running: dict[int, int | None] = dict.fromkeys(range(n_workers))
    started: set[str] = set()
    where: dict[str, str] = {}
    most = 0
    events = [(0.0, i) for i in range(n_workers)]  # (time, worker)
    idle: list[int] = []
    while events:
        now, i = heapq.heappop(events)
        worker = workers[i]
        if (index := running[i]) is not None:
            running[i] = None
            ran.append(COLLECTION[index])
            sched.mark_test_complete(worker, index)
            events.extend((now, j) for j in idle)  # a test ending may have given them work
            heapq.heapify(events)
            idle.clear()
        if worker.can_run():
            index = running[i] = worker.queue.pop(0)
            where[COLLECTION[index]] = worker.gateway.id
            scope = scope_of(COLLECTION[index])
            if scope in STACK_UNITS:
                started.add(scope)
                most = max(most, len(started - ended(ran)))
            heapq.heappush(events, (now + (stack_test_s if scope in STACK_UNITS else 1.0), i))
        elif worker.queue or not worker.shutting_down:
            idle.append(i)
        if not events and idle:
            raise AssertionError(f"every worker waits: {[w.queue for w in workers]}")
    return ran, most, where


def ended(ran: list[str]) -> set[str]:
    return {
        s for s in STACK_UNITS
        if sum(scope_of(n) == s for n in ran) == sum(scope_of(n) == s for n in COLLECTION)
    }  # fmt: skip


@pytest.mark.parametrize("n_workers", [1, 2, 3, 4])
@pytest.mark.parametrize("at_once", [1, 2, 3])
def test_every_test_runs_once_with_no_more_stack_units_at_once_than_allowed(
    monkeypatch: pytest.MonkeyPatch, n_workers: int, at_once: int
) -> None:
    monkeypatch.setattr(scheduling, "STACK_UNITS_AT_ONCE", at_once)
    ran, most, _ = simulate(n_workers)
    assert sorted(ran) == sorted(COLLECTION)
    assert most <= min(at_once, n_workers)
    assert most == min(at_once, n_workers, len(STACK_UNITS))  # the slots are used


def test_the_waiting_stack_unit_starts_when_a_slot_frees_not_after_the_unit_tests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(scheduling, "STACK_UNITS_AT_ONCE", 2)
    ran, _, _ = simulate(3, stack_test_s=2.0)  # stacks end before the unit tests do
    first_own = min(i for i, n in enumerate(ran) if scope_of(n) == scheduling.OWN_STACKS)
    assert any(scope_of(n) not in STACK_UNITS for n in ran[first_own:])


def test_the_two_short_stack_units_follow_each_of_the_long_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not both after the first long unit to end, leaving the run to end on them alone."""
    monkeypatch.setattr(scheduling, "STACK_UNITS_AT_ONCE", 2)
    _, _, where = simulate(3)
    workers = {unit: {w for n, w in where.items() if scope_of(n) == unit} for unit in STACK_UNITS}
    assert all(len(w) == 1 for w in workers.values())  # a unit runs on one worker
    long_ones = workers[scheduling.LAB_WORLD] | workers[scheduling.OWN_STACKS_B]
    short_ones = workers[scheduling.OWN_STACKS] | workers[scheduling.OWN_STACKS_C]
    assert short_ones == long_ones and len(short_ones) == 2
