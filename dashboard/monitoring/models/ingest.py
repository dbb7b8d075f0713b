"""What clients pushed to the ingest endpoint (SPEC §2.3): the latest report per client.

A client pushes every few seconds and only its latest figures matter, so each push replaces
the previous one of the same client (unique cluster, kind, key) instead of piling up rows.
The payload is the validated, normalized report, never the raw document, so readers rebuild
the plain records without parsing untrusted input twice.
"""

from django.db import models

from dashboard.monitoring.models.config import Cluster


class IngestKind(models.TextChoices):
    LIBRDKAFKA_CONSUMER = "librdkafka-consumer", "librdkafka consumer"
    LIBRDKAFKA_PRODUCER = "librdkafka-producer", "librdkafka producer"
    SPOUT = "spout", "Storm spout"


class ClientReportRow(models.Model):
    """``key``: ``<group>/<instance name>@<host>`` for librdkafka clients (an instance name
    such as ``billing-1#consumer-1`` repeats across processes and hosts), and
    ``<topology id>/<spout id>`` for spouts. ``group`` is the declared group, or the spout id.
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=24, choices=IngestKind.choices)
    key = models.CharField(max_length=800)
    group = models.CharField(max_length=255, blank=True)
    received_at = models.DateTimeField()
    payload = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "kind", "key"], name="uniq_client_report")
        ]
        indexes = [models.Index(fields=["cluster", "received_at"])]

    def __str__(self) -> str:
        return f"{self.cluster_id}/{self.kind}/{self.key}"
