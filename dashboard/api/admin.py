"""API tokens in the Django admin: create (the secret is shown once), list, revoke."""

from django.contrib import admin, messages
from django.utils import timezone

from dashboard.accounts.access import RoleAdmin
from dashboard.accounts.roles import Action
from dashboard.api.models import ApiToken
from dashboard.api.tokens import set_new_secret


@admin.register(ApiToken)
class ApiTokenAdmin(RoleAdmin):
    view_action = change_action = Action.MANAGE_TOKENS
    list_display = ("name", "scope", "prefix", "created_at", "created_by", "last_used_at",
                    "revoked_at")  # fmt: skip
    list_filter = ("scope", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("name", "prefix")
    readonly_fields = ("prefix", "created_at", "created_by", "last_used_at", "revoked_at")
    actions = ("revoke",)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("name", "scope")
        return ("name", "scope", *self.readonly_fields)

    def save_model(self, request, obj: ApiToken, form, change: bool) -> None:
        secret = None
        if not change:
            obj.created_by = request.user
            secret = set_new_secret(obj)
        super().save_model(request, obj, form, change)
        if secret is not None:
            messages.warning(
                request,
                f"Token {obj.name!r} created. Copy its secret now, it is not shown again: {secret}",
            )

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request, queryset) -> None:
        # One save per token, not a bulk update: the audit log records each revocation.
        now, n = timezone.now(), 0
        for token in queryset.filter(revoked_at__isnull=True):
            token.revoked_at = now
            token.save(update_fields=["revoked_at"])
            n += 1
        self.message_user(request, f"{n} token(s) revoked.")
