from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Roles (viewer, operator, admin) and who may do what: ``roles.py`` is the table,
    ``access.py`` applies it to users, tokens, views, the admin and the templates."""

    name = "dashboard.accounts"
    label = "accounts"
    verbose_name = "Accounts"

    def ready(self) -> None:
        from dashboard.accounts import audit

        audit.connect()
