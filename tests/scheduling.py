"""How ``scripts/test`` spreads the suite over pytest-xdist workers.

The end-to-end tests spend minutes waiting on windows and job periods; the lab stack each one
waits on is not idle meanwhile (a full stack takes ~0.9 of a core: broker, Spark, workload;
benchmarks/RESULTS.md). Units of scheduling: every test of the shared lab stack
(``tests/lab_world.py``) goes to one worker, so that stack starts once; the tests that start
stacks of their own go to three more units (two short ones, each to follow one of the two
long ones); each other module is a unit of its own (its module fixtures built once), spread
over whichever worker is free. The stack units are scheduled first, so the run does not end
on one long test, and the shared stack stops after its unit's last test rather than with its
worker's session (``tests/conftest.py``).

No more than ``STACK_UNITS_AT_ONCE`` stack units run at a time (``LAGWATCH_TEST_STACK_UNITS``,
default 2): the others wait until one has ended, their workers taking ordinary modules meanwhile,
or idling once none are left. Three full stacks beside the unit tests ask ~2.7 cores of two;
a fresh-clone run that had them all (and a fourth started by ``test_stack.py``) saw status runs
of 160-290 s where ~10 s is usual, and three tests missed their verdicts. Two stacks leave the
status job its period, and the unit tests the rest of the machine.

pytest-xdist's ``--dist loadgroup`` would do the grouping with markers, but with pytest 9 its
group suffix no longer reaches the node ids (pytest-xdist 3.8 sets ``item._nodeid``, which
pytest 9 no longer reads); a scheduler of our own keeps it to public hooks.
"""

from __future__ import annotations

import os

from xdist.scheduler import LoadScopeScheduling
from xdist.workermanage import WorkerController

# Modules whose tests use the ``lab_world`` fixture; tests/conftest.py refuses to run a test
# that uses it from a module not listed here (it would start a second shared stack).
LAB_WORLD_MODULES = frozenset({
    "tests/lab/test_lab_alerts.py",
    "tests/lab/test_lab_backpressure.py",
    "tests/lab/test_lab_purgatory.py",
    "tests/lab/test_lab_retention.py",
    "tests/reports/test_lab_reports.py",
    "tests/ui/test_browser.py",
})  # fmt: skip
# Every tests/lab/ module goes to an own-stack unit, also those on the session's
# ``lab_services``: in collection order the light ones (fetch watchdog, PartitionManager,
# scenarios) run before the sharded collectors' two stacks, so the heavy stacks do not all
# start in the first minute (a fresh-clone run that spread them as ordinary modules started
# five stacks at once, and the shared stack's first verdicts took ~4 min).
# These own-stack modules (the standalone Spark cluster the one outside tests/lab/) are a unit
# apart from the other tests/lab/ ones, so that the two short units follow each of the two
# long ones (lab_world, own-long) rather than both the first to end: a fresh-clone run ended
# on the one short unit of ~11 min, alone on its worker for its last 3
# (benchmarks/suite_timeline.py; RESULTS.md, "The test suite's wall time", "The stack units
# split"). Split by their measured time: the
# sharded collectors and the lighter lab modules (~340 s) against the stack tests and the
# standalone Spark cluster (~310 s).
OWN_STACKS_APART = frozenset({
    "tests/lab/test_stack.py",
    "tests/spark_jobs/test_standalone_cluster.py",
})  # fmt: skip
# The two full stacks with the demo workload and the scenarios on the session's services, a
# unit of their own so that the two long stack units take about as long (in a green run:
# shared stack ~12 min, this unit ~10.5 min without the scenarios, the other ~14 min with them).
OWN_STACKS_LONG = frozenset({
    "tests/lab/test_lab_verdicts.py",
    "tests/lab/test_production_run.py",
    "tests/lab/test_scenarios.py",
})  # fmt: skip

LAB_WORLD = "stacks:lab_world"
OWN_STACKS = "stacks:own"
OWN_STACKS_B = "stacks:own-long"
OWN_STACKS_C = "stacks:own-apart"


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def scope_of(nodeid: str) -> str:
    module = module_of(nodeid)
    if module in LAB_WORLD_MODULES:
        return LAB_WORLD
    if module in OWN_STACKS_LONG:
        return OWN_STACKS_B
    if module in OWN_STACKS_APART:
        return OWN_STACKS_C
    if module.startswith("tests/lab/"):
        return OWN_STACKS
    return module


STACK_UNITS = (LAB_WORLD, OWN_STACKS_B, OWN_STACKS, OWN_STACKS_C)  # in the order they start
STACK_UNITS_AT_ONCE = int(os.environ.get("LAGWATCH_TEST_STACK_UNITS", "2"))


def tier(nodeid: str) -> int:
    """Scheduling order: the stack units (the two longest first, the short ones after: they
    wait for a slot), then everything else."""
    scope = scope_of(nodeid)
    return STACK_UNITS.index(scope) if scope in STACK_UNITS else len(STACK_UNITS)


class StackAwareScheduling(LoadScopeScheduling):
    """pytest-xdist's scope scheduling with the scopes above, and at most
    ``STACK_UNITS_AT_ONCE`` stack units under way."""

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid)

    def _next_scope(self, node: WorkerController) -> str | None:
        """The first unit in the queue ``node`` may take now; None while only stack units are
        left and no slot is free. ``node`` asks when it has at most two tests left, so a stack
        unit of its own is ending: the next one may follow it on the same worker. But not a
        second one while it holds one it has not begun (a short unit handed over at the end
        of a long one): that one is left for the next worker whose stack unit ends."""
        under_way = sum(
            scope in STACK_UNITS and not all(tests.values())
            for other, work in self.assigned_work.items()
            if other is not node
            for scope, tests in work.items()
        )
        waiting = any(
            scope in STACK_UNITS and not any(tests.values())
            for scope, tests in self.assigned_work.get(node, {}).items()
        )
        free = under_way < STACK_UNITS_AT_ONCE and not waiting
        return next((s for s in self.workqueue if free or s not in STACK_UNITS), None)

    def _assign_work_unit(self, node: WorkerController) -> None:
        scope = self._next_scope(node)
        if scope is None:
            # The worker idles on its last test (xdist runs it once more work or the shutdown
            # comes): ``_reschedule`` gives it the waiting unit when a slot frees.
            return
        self.workqueue.move_to_end(scope, last=False)
        super()._assign_work_unit(node)

    def _reschedule(self, node: WorkerController) -> None:
        super()._reschedule(node)
        # A test ending may free a slot, or empty the queue: a worker idle for want of a slot
        # gets the waiting unit, or its shutdown (which runs the last test it holds).
        for other in self.nodes:
            if other is not node:
                super()._reschedule(other)
