"""The Django admin for every alerts model. Channel URLs and keys are masked in lists and never
rendered back in forms (the channel form keeps the stored ones when left blank); a role that
may only read a channel sees the masked target. Permissions follow the roles (RoleAdmin)."""

from django.contrib import admin

from dashboard.accounts.access import RoleAdmin
from dashboard.accounts.roles import Action
from dashboard.alerts.forms import ChannelForm, RuleForm, SilenceForm
from dashboard.alerts.models import (
    Alert,
    AlertEvent,
    Candidate,
    Channel,
    Delivery,
    DeliveryAttempt,
    Rule,
    Silence,
)


@admin.register(Rule)
class RuleAdmin(RoleAdmin):
    change_action = Action.EDIT_RULES
    form = RuleForm
    list_display = ("name", "enabled", "cluster_pattern", "group_pattern", "topic_pattern",
                    "level", "min_evaluations", "severity")  # fmt: skip
    list_filter = ("enabled", "level", "severity")
    search_fields = ("name", "group_pattern", "topic_pattern")


@admin.register(Channel)
class ChannelAdmin(RoleAdmin):
    change_action = Action.EDIT_CHANNELS
    form = ChannelForm
    list_display = ("name", "kind", "enabled", "masked_target", "send_resolved")
    list_filter = ("kind", "enabled")
    search_fields = ("name",)

    def get_fields(self, request, obj=None):  # noqa: ANN001, ANN201
        """Read-only (a viewer): the admin would print every field's value, so the URL is
        shown masked instead."""
        fields = list(super().get_fields(request, obj))
        if obj is not None and not self.has_change_permission(request, obj):
            fields = ["masked_target" if f == "url" else f for f in fields if f != "secret"]
        return fields

    def get_readonly_fields(self, request, obj=None):  # noqa: ANN001, ANN201
        if obj is not None and not self.has_change_permission(request, obj):
            return ("masked_target",)
        return ()


@admin.register(Silence)
class SilenceAdmin(RoleAdmin):
    change_action = Action.SILENCE
    form = SilenceForm
    list_display = ("pk", "cluster_pattern", "group_pattern", "topic_pattern", "rule", "until",
                    "created_by", "reason")  # fmt: skip
    list_filter = ("until",)


class AlertEventInline(admin.TabularInline):
    model = AlertEvent
    extra = 0
    readonly_fields = ("at", "kind", "actor", "message")
    can_delete = False


class DeliveryInline(admin.TabularInline):
    model = Delivery
    extra = 0
    readonly_fields = ("channel_name", "notice", "state", "attempts", "last_error", "sent_at",
                       "next_attempt_at")  # fmt: skip
    exclude = ("channel",)
    can_delete = False


@admin.register(Alert)
class AlertAdmin(RoleAdmin):
    change_action = Action.CHANGE  # deleting one is an admin's housekeeping
    list_display = ("pk", "state", "severity", "title", "rule_name", "fired_at", "resolved_at")
    list_filter = ("state", "severity", "level", "cluster")
    search_fields = ("title", "group", "topic", "rule_name")
    date_hierarchy = "fired_at"
    readonly_fields = [f.name for f in Alert._meta.concrete_fields if f.name != "id"]
    inlines = [AlertEventInline, DeliveryInline]

    def has_add_permission(self, request) -> bool:  # alerts come from the evaluator only
        return False


@admin.register(AlertEvent)
class AlertEventAdmin(RoleAdmin):
    change_action = Action.CHANGE
    list_display = ("alert", "at", "kind", "actor", "message")
    list_filter = ("kind",)


class DeliveryAttemptInline(admin.TabularInline):
    model = DeliveryAttempt
    extra = 0
    readonly_fields = ("number", "at", "ok", "error", "duration_ms", "retry_in_s")
    can_delete = False


@admin.register(Delivery)
class DeliveryAdmin(RoleAdmin):
    change_action = Action.CHANGE
    list_display = ("pk", "alert", "channel_name", "notice", "state", "attempts", "created_at")
    list_filter = ("state", "notice")
    readonly_fields = ("alert", "channel", "channel_name", "notice", "state", "attempts",
                       "last_error", "created_at", "sent_at", "next_attempt_at")  # fmt: skip
    inlines = [DeliveryAttemptInline]


@admin.register(DeliveryAttempt)
class DeliveryAttemptAdmin(RoleAdmin):
    change_action = Action.CHANGE
    list_display = ("delivery", "number", "at", "ok", "error", "retry_in_s")
    list_filter = ("ok",)


@admin.register(Candidate)
class CandidateAdmin(RoleAdmin):
    change_action = Action.CHANGE
    list_display = ("rule", "subject_key", "evaluations", "first_matched_at", "last_matched_at")
