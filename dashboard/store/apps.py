from django.apps import AppConfig


class StoreConfig(AppConfig):
    """The store's tasks and ``collect`` command; its tables are ``dashboard.monitoring``'s
    models."""

    name = "dashboard.store"
