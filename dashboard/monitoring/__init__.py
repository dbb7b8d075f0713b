"""The monitoring app: the domain models every stage shares (clusters, groups, partitions,
history, source health, Spark runs) and the totals kept on a group's row (``group_totals``,
rewritten by the store and the status run), the clusters file, the health check, and the
readers the pages, the API and ``lagwatch_status`` share (``membership``, ``spouts``,
``producers``, ``trends``, ``status_report``). Writing is the store's (``dashboard.store``)
and the status run's (``dashboard.status``); the pages are ``dashboard.ui``."""
