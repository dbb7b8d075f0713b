"""The secured lab broker, shared by the modules marked ``secured`` (one broker per run:
starting one costs half a minute), and the groups read through it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient

from lab.secured_kafka import admin_bootstrap
from lab.services import Context
from tests.lab.secured_world import Groups, make_groups, secured_stack


@pytest.fixture(scope="session")
def secured_ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Context]:
    yield from secured_stack(tmp_path_factory.mktemp("secured"))


@pytest.fixture(scope="session")
def secured_admin(secured_ctx: Context) -> AdminClient:
    """A super user's client, over the PLAINTEXT listener."""
    return AdminClient({"bootstrap.servers": admin_bootstrap(secured_ctx)})


@pytest.fixture(scope="session")
def secured_groups(secured_ctx: Context, secured_admin: AdminClient) -> Iterator[Groups]:
    world = make_groups(secured_ctx, secured_admin)
    yield world
    world.close()
