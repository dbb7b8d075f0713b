"""Signals the store and the status run send to the apps downstream of them (alerts,
/metrics), and the two functions that send them.

A signal rather than a call keeps data flowing one way: neither stage knows who reacts to
what it stored, and a failing receiver cannot fail a cycle or a run (sent with
``send_robust``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from django.dispatch import Signal

if TYPE_CHECKING:
    from dashboard.monitoring.models import SparkJobRun

log = logging.getLogger(__name__)

# After a status run was applied to the database. kwargs: ``run`` (the SparkJobRun, outcome
# ok) and ``changes`` (the StatusChange rows that run created).
status_applied = Signal()

# After figures were stored: a collection cycle (kwargs ``cluster``, the name) or an applied
# Spark run (``run``). Lets /metrics rebuild its exposition (dashboard/api/metrics/exposition.py).
figures_stored = Signal()


def announce_status(run: SparkJobRun, changes: list) -> None:
    """Tell the apps downstream (alerts) that statuses changed; their failures are logged,
    never the run's."""
    for receiver, outcome in status_applied.send_robust(sender=None, run=run, changes=changes):
        if isinstance(outcome, Exception):
            log.error("status_applied receiver %r failed: %s", receiver, outcome)


def announce_figures(**kwargs: object) -> None:
    """Tell the apps downstream (/metrics) that stored figures changed; as robust as
    :func:`announce_status`."""
    for receiver, outcome in figures_stored.send_robust(sender=None, **kwargs):
        if isinstance(outcome, Exception):
            log.error("figures_stored receiver %r failed: %s", receiver, outcome)
