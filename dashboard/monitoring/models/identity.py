"""A cluster's identity as its sources report it, and the events of its timeline.

Marks (``collectors.identity``) are kept per cluster and source; when one changes, the
cluster was rebuilt under the same name: its offsets history starts over
(``Cluster.history_from``), and a ``ClusterEvent`` says when and what changed.
"""

from django.db import models

from dashboard.monitoring.models.config import Cluster


class ClusterIdentity(models.Model):
    """The identity marks a source of a cluster last reported ({name: value})."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="identities")
    source = models.CharField(max_length=16)
    marks = models.JSONField(default=dict)
    seen_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "source"], name="uniq_cluster_identity")
        ]

    def __str__(self) -> str:
        return f"{self.cluster_id}/{self.source}"


class ClusterEvent(models.Model):
    """Something that happened to a whole cluster, shown on its timeline (the cluster page)
    and, while recent, on the sources page. ``kind``: ``cluster_rebuilt``."""

    REBUILT = "cluster_rebuilt"

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField()
    kind = models.CharField(max_length=32)
    text = models.TextField()
    detail = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "at", "kind"], name="uniq_cluster_event")
        ]
        ordering = ["-at"]

    def __str__(self) -> str:
        return f"{self.cluster_id} {self.kind} @ {self.at:%Y-%m-%d %H:%M:%S}"
