"""Beat's scheduler, which also dispatches collection cycles in beat's own process.

Why not a task: a dispatch sent as a message waits for a free worker thread, and the workers'
threads can all be held (the Spark jobs' worker while its JVMs restart; a collector whose
threads wait on a cluster's lease). Every poll slot whose dispatch waited past the slot was
lost. Beat is one process that does nothing else: asking the database which clusters' poll
slots have started and sending their cycles takes a few milliseconds there, every
``LAGWATCH_DISPATCH_S``, whatever the workers are doing. Settings name this class
(``CELERY_BEAT_SCHEDULER``), so no command line changes.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from celery.beat import PersistentScheduler
from django.conf import settings
from django.db import close_old_connections, reset_queries

from dashboard.store.tasks import dispatch_due

log = logging.getLogger(__name__)


class DispatchingScheduler(PersistentScheduler):
    """Celery's default scheduler (the shelve file), plus collection dispatch every
    ``LAGWATCH_DISPATCH_S`` seconds between its entries."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.dispatch_every_s = float(settings.LAGWATCH_DISPATCH_S)
        self._next_dispatch = 0.0
        super().__init__(*args, **kwargs)

    def tick(self, *args: Any, **kwargs: Any) -> float:
        """Dispatch when due, then run beat's own entries; sleep no longer than until the
        next dispatch."""
        now = time.monotonic()
        if now >= self._next_dispatch:
            self._next_dispatch = now + self.dispatch_every_s
            self.dispatch()
        delay = super().tick(*args, **kwargs)
        return max(0.0, min(delay, self._next_dispatch - time.monotonic()))

    def dispatch(self) -> int:
        """One dispatch; a database or Redis that does not answer is logged and tried again
        at the next, never fatal to beat (its other entries go on)."""
        close_old_connections()  # a connection the database closed (restarted) is dropped
        reset_queries()  # with DEBUG on, beat would otherwise keep every dispatch's SQL text
        try:
            return dispatch_due(producer=self.producer)
        except Exception as exc:  # noqa: BLE001 - any failure: logged, next dispatch tries again
            log.warning("collection dispatch failed, trying again in %.0f s: %s",
                        self.dispatch_every_s, exc)  # fmt: skip
            close_old_connections()  # one that failed is closed: the next dispatch reconnects
            return 0
