"""Alerts (SPEC §7): rules, the alerts they raise and their history, silences, channels and
deliveries.

An alert is one (rule, subject) while it lasts; the subject is a partition or a whole group,
named by a stable key so the same fault across status runs stays one alert (enforced by a
conditional unique constraint on open alerts, not only by the evaluator).
"""

from django.db import models
from django.utils import timezone


class Severity(models.TextChoices):
    INFO = "info", "Info"
    WARNING = "warning", "Warning"
    CRITICAL = "critical", "Critical"


class Level(models.TextChoices):
    PARTITION = "partition", "One alert per partition"
    GROUP = "group", "One alert per group"


class AlertState(models.TextChoices):
    FIRING = "firing", "Firing"
    ACKNOWLEDGED = "acknowledged", "Acknowledged"
    RESOLVED = "resolved", "Resolved"


OPEN_STATES = (AlertState.FIRING, AlertState.ACKNOWLEDGED)


class ChannelKind(models.TextChoices):
    EMAIL = "email", "Email"
    WEBHOOK = "webhook", "Webhook (JSON)"
    SLACK = "slack", "Slack-compatible webhook"
    ALERTMANAGER = "alertmanager", "Prometheus Alertmanager"
    PAGERDUTY = "pagerduty", "PagerDuty (Events API v2)"
    OPSGENIE = "opsgenie", "Opsgenie"
    TEAMS = "teams", "Microsoft Teams (Workflows webhook)"


# The kinds whose URL is required (and is the secret: it carries a token or a signature),
# and the kinds whose secret is a key of their own (the URL then optional: a proxy).
URL_KINDS = (ChannelKind.WEBHOOK, ChannelKind.SLACK, ChannelKind.ALERTMANAGER, ChannelKind.TEAMS)
KEY_KINDS = (ChannelKind.PAGERDUTY, ChannelKind.OPSGENIE)
# What a kind's key is called, in forms, files and messages.
KEY_NAMES = {ChannelKind.PAGERDUTY: "routing_key", ChannelKind.OPSGENIE: "api_key"}


class Region(models.TextChoices):
    US = "us", "US (default)"
    EU = "eu", "EU"


class Rule(models.Model):
    """What to alert on. Patterns are shell-style globs (fnmatch, case-sensitive)."""

    name = models.CharField(max_length=100, unique=True)
    enabled = models.BooleanField(default=True)
    cluster_pattern = models.CharField(max_length=255, default="*")
    group_pattern = models.CharField(max_length=255, default="*")
    topic_pattern = models.CharField(max_length=255, default="*")
    # A subject matches when its status is listed (or none are) and one of its diagnosis codes
    # is listed (or none are); at least one of the two lists is set (forms validate it).
    statuses = models.JSONField(default=list, blank=True)
    diagnoses = models.JSONField(default=list, blank=True)
    level = models.CharField(max_length=16, choices=Level.choices, default=Level.PARTITION)
    min_evaluations = models.PositiveIntegerField(default=2)
    min_duration_s = models.PositiveIntegerField(default=0)
    min_lag = models.BigIntegerField(null=True, blank=True)
    min_time_lag_s = models.FloatField(null=True, blank=True)
    severity = models.CharField(max_length=16, choices=Severity.choices, default=Severity.WARNING)
    # No channel selected: every enabled channel.
    channels = models.ManyToManyField("Channel", blank=True, related_name="rules")
    notify_resolved = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Channel(models.Model):
    """Where notifications go. A URL may carry a secret, and ``secret`` is one (PagerDuty's
    routing key, Opsgenie's API key): both shown masked everywhere."""

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=16, choices=ChannelKind.choices)
    enabled = models.BooleanField(default=True)
    url = models.CharField(max_length=2000, blank=True)  # URL_KINDS; KEY_KINDS: an override
    secret = models.CharField(max_length=500, blank=True)  # KEY_KINDS: the key
    region = models.CharField(max_length=2, choices=Region.choices, blank=True)  # KEY_KINDS
    recipients = models.TextField(blank=True)  # email: comma or newline separated
    # Email only, blank = the EMAIL_* settings (a per-channel SMTP server, e.g. a relay).
    smtp_host = models.CharField(max_length=255, blank=True)
    smtp_port = models.PositiveIntegerField(null=True, blank=True)
    send_resolved = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"

    @property
    def masked_target(self) -> str:
        from dashboard.alerts.masking import mask_url

        if self.kind == ChannelKind.EMAIL:
            return self.recipients.replace("\n", ", ")
        if self.kind in KEY_KINDS:
            where = mask_url(self.url) if self.url else f"region {self.region or 'us'}"
            return f"{where}, {KEY_NAMES[self.kind]} {self.masked_secret}"
        return mask_url(self.url)

    @property
    def masked_secret(self) -> str:
        """``…1a2b``: enough to tell two keys apart, not to use one."""
        if not self.secret:
            return ""
        return f"…{self.secret[-4:]}" if len(self.secret) > 12 else "…"

    def recipient_list(self) -> list[str]:
        parts = self.recipients.replace("\n", ",").replace(";", ",").split(",")
        return [p.strip() for p in parts if p.strip()]


class Silence(models.Model):
    """Alerts in scope until ``until`` are recorded but send nothing."""

    rule = models.ForeignKey(Rule, null=True, blank=True, on_delete=models.CASCADE)
    cluster_pattern = models.CharField(max_length=255, default="*")
    group_pattern = models.CharField(max_length=255, default="*")
    topic_pattern = models.CharField(max_length=255, default="*")
    until = models.DateTimeField()
    reason = models.TextField(blank=True)
    created_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-until"]

    def __str__(self) -> str:
        return (
            f"{self.cluster_pattern}/{self.group_pattern}/{self.topic_pattern} until {self.until}"
        )

    def is_active(self, now=None) -> bool:
        return self.until > (now or timezone.now())


class Candidate(models.Model):
    """A subject matching a rule that has not lasted long enough to fire yet."""

    rule = models.ForeignKey(Rule, on_delete=models.CASCADE, related_name="candidates")
    subject_key = models.CharField(max_length=64)
    first_matched_at = models.DateTimeField()
    evaluations = models.PositiveIntegerField(default=1)
    last_matched_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["rule", "subject_key"], name="uniq_alert_candidate")
        ]

    def __str__(self) -> str:
        return f"rule {self.rule_id} {self.subject_key[:12]}: {self.evaluations} evaluation(s)"


class Alert(models.Model):
    rule = models.ForeignKey(
        Rule, null=True, blank=True, on_delete=models.SET_NULL, related_name="alerts"
    )
    rule_name = models.CharField(max_length=100)
    subject_key = models.CharField(max_length=64)
    level = models.CharField(max_length=16, choices=Level.choices)
    cluster = models.CharField(max_length=255)
    source = models.CharField(max_length=16, blank=True)
    group = models.CharField(max_length=255)
    topic = models.CharField(max_length=255, blank=True)
    partition = models.IntegerField(null=True, blank=True)
    state = models.CharField(max_length=16, choices=AlertState.choices, default=AlertState.FIRING)
    severity = models.CharField(max_length=16, choices=Severity.choices)
    title = models.CharField(max_length=1000)
    status = models.CharField(max_length=16, blank=True)
    diagnosis = models.JSONField(default=list, blank=True)
    reason = models.TextField(blank=True)
    lag = models.BigIntegerField(null=True, blank=True)
    time_lag_s = models.FloatField(null=True, blank=True)
    details = models.JSONField(default=dict, blank=True)  # e.g. the partitions of a group alert
    started_at = models.DateTimeField()  # when the subject first matched
    fired_at = models.DateTimeField()
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.CharField(max_length=150, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_reason = models.CharField(max_length=255, blank=True)
    silence = models.ForeignKey(Silence, null=True, blank=True, on_delete=models.SET_NULL)
    last_evaluated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-fired_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["rule", "subject_key"],
                condition=models.Q(state__in=["firing", "acknowledged"]),
                name="uniq_open_alert_per_rule_subject",
            )
        ]
        indexes = [models.Index(fields=["state", "-fired_at"])]

    def __str__(self) -> str:
        return f"#{self.pk} {self.title}"

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_STATES

    @property
    def silenced(self) -> bool:
        return self.silence_id is not None


class AlertEvent(models.Model):
    """The history of an alert: fired, acknowledged, silenced, notified, resolved..."""

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(default=timezone.now)
    kind = models.CharField(max_length=32)
    actor = models.CharField(max_length=150, blank=True)
    message = models.TextField(blank=True)

    class Meta:
        ordering = ["pk"]  # the order things happened here (run times may lag the clock)

    def __str__(self) -> str:
        return f"{self.kind} @ {self.at:%Y-%m-%d %H:%M:%S}"


class DeliveryState(models.TextChoices):
    PENDING = "pending"
    RETRYING = "retrying"
    SENT = "sent"
    FAILED = "failed"


class Delivery(models.Model):
    """One notice (firing or resolved) to one channel; its own task, its own retries."""

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.ForeignKey(
        Channel, null=True, blank=True, on_delete=models.SET_NULL, related_name="deliveries"
    )
    channel_name = models.CharField(max_length=100)
    notice = models.CharField(max_length=16)  # "firing" or "resolved"
    state = models.CharField(
        max_length=16, choices=DeliveryState.choices, default=DeliveryState.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["alert", "channel_name", "notice"], name="uniq_delivery_per_notice"
            )
        ]

    def __str__(self) -> str:
        return f"{self.notice} of alert {self.alert_id} to {self.channel_name}: {self.state}"


class DeliveryAttempt(models.Model):
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    at = models.DateTimeField(default=timezone.now)
    ok = models.BooleanField()
    error = models.TextField(blank=True)
    duration_ms = models.FloatField()
    retry_in_s = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["delivery", "number"]

    def __str__(self) -> str:
        return (
            f"attempt {self.number} of delivery {self.delivery_id}: {'ok' if self.ok else 'failed'}"
        )
