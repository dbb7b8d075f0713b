"""Brokers' delayed operations (purgatory, DOMAIN §5): the latest figures per broker."""

from django.db import models


class BrokerPurgatory(models.Model):
    """One broker of one cluster, as its metrics endpoint last said; one row, updated each
    cycle. A failed scrape sets ``error`` and ``checked_at`` and leaves the last figures and
    their ``as_of`` as they were: nothing stored is lost, and the page says how old they are.
    """

    cluster = models.ForeignKey("monitoring.Cluster", on_delete=models.CASCADE, related_name="+")
    broker = models.CharField(max_length=255)  # the endpoint's host:port
    url = models.CharField(max_length=200)
    fetch_purgatory = models.PositiveBigIntegerField(null=True)
    produce_purgatory = models.PositiveBigIntegerField(null=True)
    fetch_watched = models.PositiveBigIntegerField(null=True)
    produce_watched = models.PositiveBigIntegerField(null=True)
    fetch_expires_per_s = models.FloatField(null=True)
    produce_expires_per_s = models.FloatField(null=True)
    as_of = models.DateTimeField(null=True)  # the last scrape that answered
    checked_at = models.DateTimeField(null=True)  # the last scrape, answered or not
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["broker"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "broker"], name="uniq_broker_purgatory")
        ]

    def __str__(self) -> str:
        return f"{self.cluster_id}/{self.broker}"

    def document(self) -> dict:
        """The broker as ``/api/v1/clusters/<name>/`` and ``lagwatch_status --json`` show it."""

        def iso(at):  # the API's form: UTC with a Z
            return None if at is None else at.isoformat().replace("+00:00", "Z")

        return {
            "broker": self.broker,
            "url": self.url,
            "fetch_purgatory": self.fetch_purgatory,
            "produce_purgatory": self.produce_purgatory,
            "fetch_watched": self.fetch_watched,
            "produce_watched": self.produce_watched,
            "fetch_expirations_per_s": self.fetch_expires_per_s,
            "produce_expirations_per_s": self.produce_expires_per_s,
            "as_of": iso(self.as_of),
            "checked_at": iso(self.checked_at),
            "error": self.error or None,
        }
