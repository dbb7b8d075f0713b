"""Assignment balance and what-if: how a consumer group's partitions and lag spread over its
members, and what Kafka's assignors would assign to the same members now (DOMAIN §3).

Why a stage of its own: the page, the API and ``manage.py assignment_whatif`` all need it,
and it depends on nothing but what the store keeps. The assignors are pure (no Django import;
the stored members are read through ``dashboard.monitoring.membership``); only ``apps.py`` and
the command touch Django. ``collectors/`` would be the wrong side: it never reads the store.

Modules: ``java`` (Java's string order and ``HashMap`` iteration order, which decide Kafka's
ties), ``model`` (members, partition counts, assignments), ``classic`` (range, round-robin),
``sticky`` + ``sticky_general`` (sticky and cooperative-sticky), ``server`` +
``uniform_balance`` (the broker's KIP-848 uniform; its range is ``classic.range_assign``),
``balance`` (per-member partitions, lag, time lag, imbalance) and ``whatif`` (a stored group in,
the report out).

Each assignor is a port of Apache Kafka's Java code, not a re-derivation: the what-if must say
what the group leader or the broker would really do. Racks are not known to Lagwatch, so
Kafka's rack-aware branches are left out.
"""

from dashboard.whatif.balance import Figures, balance
from dashboard.whatif.classic import range_assign, round_robin
from dashboard.whatif.model import Assignment, Member, member
from dashboard.whatif.server import uniform
from dashboard.whatif.sticky import sticky
from dashboard.whatif.whatif import assignment_report, group_report, holdings

__all__ = [
    "Assignment",
    "Figures",
    "Member",
    "assignment_report",
    "balance",
    "group_report",
    "holdings",
    "member",
    "range_assign",
    "round_robin",
    "sticky",
    "uniform",
]
