"""The store: where a collected cycle is written, kept as short history and pruned.

Its one interface upstream is :func:`dashboard.store.cycle.run_cluster_cycle` (the
collectors' ``CycleStore`` port over the ORM; the Celery tasks in ``tasks.py`` and
``manage.py collect`` call it). Downstream stages read what it wrote through the models of
``dashboard.monitoring`` (with ``group_totals``) and the raw history here (``raw_history``).
"""
