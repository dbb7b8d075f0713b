"""A logged-in client for the page tests."""

import pytest
from django.test import Client


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings) -> None:
    # The default hasher costs ~0.5 s per user on a shared 2-core machine; these tests are
    # about pages, not passwords.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("sre", password="s3cret-pass-123")


@pytest.fixture
def web(client: Client, user) -> Client:
    client.force_login(user)
    return client
