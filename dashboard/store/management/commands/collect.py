"""``manage.py collect --once [--cluster NAME]``: collection cycles without Celery.

``--once`` runs one cycle of each enabled cluster (or of the one named) and exits non-zero
only when a cycle itself failed (its results could not be stored); an unreachable source is
recorded and reported, not a failure. Without ``--once`` it loops on each cluster's poll
interval, for a setup without Celery.
"""

import json
import time

from django.core.management.base import BaseCommand, CommandError, CommandParser

from collectors.cycle.runner import cycle_slot, forget_clusters
from dashboard.monitoring.models import Cluster
from dashboard.store.cycle import run_cluster_cycle


class Command(BaseCommand):
    help = "Run collection cycles synchronously (one with --once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="one cycle, then exit")
        parser.add_argument("--cluster", help="only this cluster (enabled or not)")

    def handle(self, *args, once: bool, cluster: str | None, **options) -> None:
        clusters = Cluster.objects.filter(enabled=True)
        if cluster is not None:
            clusters = Cluster.objects.filter(name=cluster)
            if not clusters.exists():
                raise CommandError(f"unknown cluster {cluster!r}")
        if not clusters.exists():
            raise CommandError("no enabled cluster: import one with `lagwatch_config import`")
        try:
            if once:
                failed = [c.name for c in clusters if not self._cycle(c)]
                if failed:
                    raise CommandError(f"cycle failed for {', '.join(failed)}")
                return
            self._loop(list(clusters))
        finally:
            forget_clusters()

    def _cycle(self, cluster: Cluster, cycle_ms: int | None = None) -> bool:
        try:
            report = run_cluster_cycle(cluster, cycle_ms)
        except Exception as exc:  # the cycle itself failed: say why, keep the other clusters
            self.stderr.write(f"{cluster.name}: cycle failed: {type(exc).__name__}: {exc}")
            return False
        self.stdout.write(json.dumps(report.as_dict()))
        return True

    def _loop(self, clusters: list[Cluster]) -> None:
        last: dict[str, int] = {}
        while True:
            now_ms = int(time.time() * 1000)
            for cluster in clusters:
                slot = cycle_slot(now_ms, cluster.poll_interval_s)
                if last.get(cluster.name) != slot:
                    last[cluster.name] = slot
                    self._cycle(cluster, slot)
            time.sleep(0.5)
