"""Faults the lab can switch on and off at run time, and what Lagwatch should show for each.

A scenario is a class with a `name`, a docstring written for the person watching the
dashboard (what they will see and which status/diagnosis SPEC §4 expects), its declared
parameters, and `start(world, **params)` / `stop(world)`. Targets default to the world's
`Roles`, so the same code drives the demo world and the small worlds of the tests.
`SCENARIOS` here is the one table the control endpoint serves.
"""

from __future__ import annotations

from lab.workload.scenarios.base import Scenario
from lab.workload.scenarios.brokers import FetchPurgatory, ProducerExpiry, SourceOutage
from lab.workload.scenarios.consumers import (
    DeadConsumer,
    Healthy,
    PoisonMessage,
    QuietTopic,
    RebalanceStorm,
    SlowConsumer,
)
from lab.workload.scenarios.retention import Retention, RetentionRisk
from lab.workload.scenarios.spouts import (
    Backpressure,
    PendingLeak,
    SpoutIdCollision,
    TopologyRestart,
)

__all__ = ["SCENARIOS", "Scenario"]

SCENARIOS: dict[str, type[Scenario]] = {
    cls.name: cls
    for cls in (
        Healthy,
        SlowConsumer,
        DeadConsumer,
        PoisonMessage,
        PendingLeak,
        Backpressure,
        RebalanceStorm,
        Retention,
        RetentionRisk,
        TopologyRestart,
        SpoutIdCollision,
        QuietTopic,
        FetchPurgatory,
        SourceOutage,
        ProducerExpiry,
    )
}
