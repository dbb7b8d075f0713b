"""How ``scripts/test`` spreads the suite over pytest-xdist workers.

The end-to-end tests spend minutes waiting on windows and job periods; the lab stack each one
waits on is not idle meanwhile (a full stack takes ~0.9 of a core: broker, Spark, workload;
benchmarks/RESULTS.md). Three units of scheduling: every test of the shared lab stack
(``tests/lab_world.py``) goes to one worker, so that stack starts once; the tests that start
stacks of their own go to two more units, so no more than three stacks run at a time; each
other module is a unit of its own
(its module fixtures built once), spread over whichever worker is free. The stack units are
scheduled first, so the run does not end on one long test, and the shared stack stops after
its unit's last test rather than with its worker's session (``tests/conftest.py``).

pytest-xdist's ``--dist loadgroup`` would do the grouping with markers, but with pytest 9 its
group suffix no longer reaches the node ids (pytest-xdist 3.8 sets ``item._nodeid``, which
pytest 9 no longer reads); a scheduler of our own keeps it to public hooks.
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

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
# Outside tests/lab/, modules that start heavy services of their own. Every tests/lab/ module
# goes to an own-stack unit, also those on the session's ``lab_services``: in collection order
# the light ones (fetch watchdog, PartitionManager, scenarios) run before the sharded
# collectors' two stacks, so the heavy stacks do not all start in the first minute (a
# fresh-clone run that spread them as ordinary modules started five stacks at once, and the
# shared stack's first verdicts took ~4 min).
OWN_STACK_MODULES = frozenset({"tests/spark_jobs/test_standalone_cluster.py"})
# The two full stacks with the demo workload and the scenarios on the session's services, a
# unit of their own so that the three stack units take about as long (session 15's green run:
# shared stack ~12 min, this unit ~10.5 min without the scenarios, the other ~14 min with them).
OWN_STACKS_LONG = frozenset({
    "tests/lab/test_lab_verdicts.py",
    "tests/lab/test_production_run.py",
    "tests/lab/test_scenarios.py",
})  # fmt: skip

LAB_WORLD = "stacks:lab_world"
OWN_STACKS = "stacks:own"
OWN_STACKS_B = "stacks:own-long"


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def scope_of(nodeid: str) -> str:
    module = module_of(nodeid)
    if module in LAB_WORLD_MODULES:
        return LAB_WORLD
    if module in OWN_STACKS_LONG:
        return OWN_STACKS_B
    if module.startswith("tests/lab/") or module in OWN_STACK_MODULES:
        return OWN_STACKS
    return module


def tier(nodeid: str) -> int:
    """Scheduling order: the shared stack's tests, the own-stack tests, everything else."""
    return {LAB_WORLD: 0, OWN_STACKS_B: 1, OWN_STACKS: 1}.get(scope_of(nodeid), 2)


class StackAwareScheduling(LoadScopeScheduling):
    """pytest-xdist's scope scheduling with the scopes above."""

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid)
