from django.apps import AppConfig


class WhatifConfig(AppConfig):
    """Assignment balance and what-if, and its ``assignment_whatif`` command."""

    name = "dashboard.whatif"
