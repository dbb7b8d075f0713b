"""The secured lab broker and its OIDC issuer, shared by the modules marked ``secured`` (one
broker per run: starting one costs a minute), and the groups read through it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient

from lab import oidc_issuer
from lab.secured_kafka import admin_bootstrap
from lab.services import Context
from lab.stack import Stack
from tests.lab.secured_world import Groups, context_of, make_groups

# The lab issuer's tokens live this long here, so that a test sees them refreshed.
TOKEN_TTL_S = 30


@pytest.fixture(scope="session")
def secured_ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Context]:
    stack = Stack(tmp_path_factory.mktemp("secured"))
    try:
        with pytest.MonkeyPatch.context() as patch:  # read by the issuer as it starts
            patch.setenv(oidc_issuer.TOKEN_TTL_VAR, str(TOKEN_TTL_S))
            stack.up(["kafka-secured"])
        yield context_of(stack)
    finally:
        stack.down()


@pytest.fixture(scope="session")
def secured_admin(secured_ctx: Context) -> AdminClient:
    """A super user's client, over the PLAINTEXT listener."""
    return AdminClient({"bootstrap.servers": admin_bootstrap(secured_ctx)})


@pytest.fixture(scope="session")
def secured_groups(secured_ctx: Context, secured_admin: AdminClient) -> Iterator[Groups]:
    world = make_groups(secured_ctx, secured_admin)
    yield world
    world.close()
