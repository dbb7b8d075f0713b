"""Signals the monitoring app sends to the apps downstream of it (alerts).

A signal rather than a call keeps data flowing one way: the monitoring app does not know who
reacts to a status run, and a failing receiver cannot fail the run (sent with ``send_robust``).
"""

from django.dispatch import Signal

# After a status run was applied to the database. kwargs: ``run`` (the SparkJobRun, outcome
# ok) and ``changes`` (the StatusChange rows that run created).
status_applied = Signal()

# After figures were stored: a collection cycle (kwargs ``cluster``, the name) or an applied
# Spark run (``run``). Lets /metrics rebuild its exposition (dashboard/api/exposition.py).
figures_stored = Signal()
