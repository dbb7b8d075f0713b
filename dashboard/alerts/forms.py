"""Forms of the alerts pages, the admin and ``manage.py alerts_config import`` alike: one
place validates a rule, a channel or a silence, whoever writes it."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlsplit

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils import timezone

from dashboard.alerts.models import (
    KEY_KINDS,
    URL_KINDS,
    Channel,
    ChannelKind,
    Region,
    Rule,
    Silence,
)
from dashboard.alerts.rules import ALERTABLE_STATUSES, SOURCE_UNREACHABLE

# The evaluator's diagnosis codes (spark_jobs/evaluator/types.py), but SOURCE_UNREACHABLE: an
# alert never fires on it.
DIAGNOSES = (
    "BACKPRESSURE", "DEAD_CONSUMER", "OUT_OF_RANGE", "PENDING_LEAK", "POISON_MESSAGE",
    "REBALANCE_STORM", "REBALANCING", "RETENTION_RISK", "SKIPPED_DATA", "SLOW_CONSUMER",
    "SPOUT_ID_COLLISION", "TOPOLOGY_RESTARTED",
    "PRODUCER_EXPIRY",  # a topic's, from its producers' reports (dashboard/monitoring/producers)
)  # fmt: skip
PATTERN_HELP = "Shell-style glob, case-sensitive: * any, ? one character, [abc] one of."


def _pattern_field(label: str) -> forms.CharField:
    return forms.CharField(label=label, max_length=255, initial="*", help_text=PATTERN_HELP)


class RuleForm(forms.ModelForm):
    statuses = forms.MultipleChoiceField(
        choices=[(s, s) for s in ALERTABLE_STATUSES],
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )
    diagnoses = forms.MultipleChoiceField(
        choices=[(d, d) for d in DIAGNOSES],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="With statuses too, both must hold.",
    )
    cluster_pattern = _pattern_field("Cluster")
    group_pattern = _pattern_field("Group")
    topic_pattern = _pattern_field("Topic")

    class Meta:
        model = Rule
        fields = [
            "name", "enabled", "cluster_pattern", "group_pattern", "topic_pattern", "statuses",
            "diagnoses", "level", "min_evaluations", "min_duration_s", "min_lag",
            "min_time_lag_s", "severity", "channels", "notify_resolved",
        ]  # fmt: skip
        widgets = {"channels": forms.CheckboxSelectMultiple}
        help_texts = {
            "min_evaluations": "Consecutive status runs the condition must hold (≥ 1).",
            "min_duration_s": "And for at least this many seconds since the status began.",
            "min_lag": "Only when the lag (messages) is at least this. Blank: any.",
            "min_time_lag_s": "Only when the time lag (seconds) is at least this. Blank: any.",
            "channels": "None selected: every enabled channel.",
        }

    def clean_min_evaluations(self) -> int:
        value = self.cleaned_data["min_evaluations"]
        if value < 1:
            raise ValidationError("At least one evaluation.")
        return value

    def clean_diagnoses(self) -> list[str]:
        value = self.cleaned_data.get("diagnoses") or []
        if SOURCE_UNREACHABLE in value:
            raise ValidationError("An alert never fires on SOURCE_UNREACHABLE.")
        return value

    def clean(self) -> dict:
        data = super().clean()
        if not data.get("statuses") and not data.get("diagnoses"):
            raise ValidationError("Choose at least one status or diagnosis.", code="empty")
        for name in ("min_lag", "min_time_lag_s"):
            if data.get(name) is not None and data[name] < 0:
                self.add_error(name, "Must be zero or more.")
        return data


def _validate_hook_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError("Enter an http:// or https:// URL.", code="url")


class ChannelForm(forms.ModelForm):
    """The URL and the key are never rendered back (either may be the secret): left blank on
    edit, they stay. Which fields a kind needs: ``URL_KINDS`` a URL; PagerDuty and Opsgenie a
    key, a region and optionally a URL (a proxy); email its recipients."""

    url = forms.CharField(
        label="URL",
        max_length=2000,
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Webhook, Slack or Teams workflow URL; the Alertmanager's URL "
        "(http://alertmanager:9093); for PagerDuty and Opsgenie only to replace the "
        "region's endpoint. Never shown again once saved.",
    )
    secret = forms.CharField(
        label="Routing key / API key",
        max_length=500,
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="PagerDuty: the Events API v2 integration (routing) key. Opsgenie: the API "
        "integration's key. Never shown again once saved.",
    )
    region = forms.ChoiceField(
        choices=Region.choices,
        required=False,
        help_text="PagerDuty and Opsgenie: the service region of the account.",
    )
    recipients = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Email: addresses separated by commas or new lines.",
    )

    class Meta:
        model = Channel
        fields = ["name", "kind", "enabled", "url", "secret", "region", "recipients",
                  "smtp_host", "smtp_port", "send_resolved"]  # fmt: skip
        help_texts = {"smtp_host": "Email only. Blank: the server in EMAIL_HOST/EMAIL_PORT."}

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk and self.instance.url:
            self.fields[
                "url"
            ].help_text = f"Current: {self.instance.masked_target}. Leave blank to keep it."
        if self.instance.pk and self.instance.secret:
            self.fields[
                "secret"
            ].help_text = f"Current: {self.instance.masked_secret}. Leave blank to keep it."

    def _kept(self, data: dict, name: str) -> str:
        """The typed value, else (editing, same kind) the stored one."""
        value = (data.get(name) or "").strip()
        same_kind = self.instance.pk and self.instance.kind == data.get("kind")
        if not value and same_kind:
            value = getattr(self.instance, name)
        return value

    def _check_url(self, url: str) -> None:
        try:
            _validate_hook_url(url)
        except ValidationError as exc:
            self.add_error("url", exc)

    def clean(self) -> dict:
        data = super().clean()
        kind = data.get("kind")
        if kind in URL_KINDS:
            url = (data.get("url") or "").strip()
            if not url and self.instance.pk and self.instance.kind in URL_KINDS:
                url = self.instance.url  # kept (a webhook may become a Slack channel)
            if not url:
                self.add_error("url", "This kind of channel needs a URL.")
            else:
                self._check_url(url)
            data.update(url=url, recipients="", secret="", region="")
        elif kind in KEY_KINDS:
            url = self._kept(data, "url")
            if url:
                self._check_url(url)
            secret = self._kept(data, "secret")
            if not secret:
                self.add_error("secret", "This kind of channel needs its key.")
            elif len(secret.split()) != 1 or len(secret) > 500:
                self.add_error("secret", "A key is one word, without spaces.")
            data.update(url=url, secret=secret, recipients="", region=data.get("region") or "us")
        elif kind == ChannelKind.EMAIL:
            recipients = Channel(recipients=data.get("recipients") or "").recipient_list()
            if not recipients:
                self.add_error("recipients", "An email channel needs at least one address.")
            for address in recipients:
                try:
                    validate_email(address)
                except ValidationError:
                    self.add_error("recipients", f"Not an email address: {address}")
            data.update(recipients="\n".join(recipients), url="", secret="", region="")
        return data


class SilenceForm(forms.ModelForm):
    hours = forms.FloatField(
        min_value=0.01, max_value=24 * 90, required=False,
        help_text="How long, from now (or give an end time).",
    )  # fmt: skip
    until = forms.DateTimeField(required=False, help_text="End time (UTC), YYYY-MM-DD HH:MM.")
    cluster_pattern = _pattern_field("Cluster")
    group_pattern = _pattern_field("Group")
    topic_pattern = _pattern_field("Topic")

    class Meta:
        model = Silence
        fields = ["rule", "cluster_pattern", "group_pattern", "topic_pattern", "until", "reason"]

    def clean(self) -> dict:
        data = super().clean()
        now = timezone.now()
        if data.get("hours"):
            data["until"] = now + timedelta(hours=data["hours"])
        if not data.get("until"):
            self.add_error("until", "Give a duration in hours or an end time.")
        elif data["until"] <= now:
            self.add_error("until", "The end time is in the past.")
        return data
