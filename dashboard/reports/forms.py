"""The form of a report schedule, for the pages and the admin alike: one place checks its scope
and range (as a report's spec, :func:`spec.parse_spec`), its cron expression
(:func:`cron.validate`) and its recipients."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils import timezone

from dashboard.monitoring.models import Cluster
from dashboard.reports import cron
from dashboard.reports.models import ReportSchedule
from dashboard.reports.spec import FORMATS, SOURCES, SpecError, parse_spec

RESOLUTIONS = ("raw", "1m", "5m", "15m", "1h", "6h", "1d")
LIST_FIELDS = ("groups", "topics", "sources")


def _names(text: str) -> list[str]:
    return [part.strip() for part in str(text or "").split(",") if part.strip()]


class ReportScheduleForm(forms.ModelForm):
    groups = forms.CharField(required=False, help_text="Names or patterns (orders-*), "
                             "comma-separated; empty: all.")  # fmt: skip
    topics = forms.CharField(required=False, help_text="The same, for topics.")
    sources = forms.CharField(required=False, help_text=f"Any of {', '.join(SOURCES)}; "
                              "empty: all.")  # fmt: skip
    range = forms.CharField(label="Range", initial="24h", help_text="How far back each report "
                            "goes from its due time: 1h, 24h, 7d…")  # fmt: skip
    resolution = forms.ChoiceField(choices=[(r, r) for r in RESOLUTIONS], initial="1h")
    fmt = forms.ChoiceField(label="Format", choices=[(f, f.upper()) for f in FORMATS])
    recipients = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Email addresses, separated by commas or new lines.",
    )
    cron = forms.CharField(
        label="Schedule (cron, UTC)",
        help_text="minute hour day-of-month month day-of-week: '0 6 * * *' every day at 06:00, "
        "'0 7 * * 1' Mondays at 07:00, '0 */6 * * *' every six hours; at most once an hour.",
    )

    class Meta:
        model = ReportSchedule
        fields = ["name", "enabled", "cluster", "groups", "topics", "sources", "range",
                  "resolution", "fmt", "recipients", "cron"]  # fmt: skip

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:  # lists shown as the comma-separated text they were typed as
            for name in LIST_FIELDS:
                self.initial[name] = ", ".join(getattr(self.instance, name) or [])

    def clean_groups(self) -> list[str]:
        return _names(self.cleaned_data.get("groups", ""))

    def clean_topics(self) -> list[str]:
        return _names(self.cleaned_data.get("topics", ""))

    def clean_sources(self) -> list[str]:
        return _names(self.cleaned_data.get("sources", ""))

    def clean_cron(self) -> str:
        try:
            return cron.validate(self.cleaned_data.get("cron", ""))
        except cron.CronError as exc:
            raise ValidationError(str(exc)) from None

    def clean_recipients(self) -> str:
        addresses = ReportSchedule(recipients=self.cleaned_data.get("recipients", ""))
        found = addresses.recipient_list()
        if not found:
            raise ValidationError("At least one address.")
        for address in found:
            try:
                validate_email(address)
            except ValidationError:
                raise ValidationError(f"Not an email address: {address}") from None
        return "\n".join(found)

    def clean(self) -> dict:
        data = super().clean()
        fields = {k: data.get(k) for k in ("cluster", *LIST_FIELDS, "resolution")}
        fields["since"] = data.get("range")
        if any(k not in data for k in ("cluster", "range", "resolution")):
            return data  # already refused field by field
        try:
            parse_spec(fields, now=timezone.now())
        except SpecError as exc:
            self.add_error("range" if exc.field == "since" else exc.field, exc.message)
            return data
        if not Cluster.objects.filter(name=data["cluster"]).exists():
            self.add_error("cluster", f"No cluster named {data['cluster']!r}.")
        return data
