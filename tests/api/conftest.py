"""Fixtures of the API tests: the world in the test database, tokens, authenticated calls."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from dashboard.api.models import TokenScope
from dashboard.api.tokens import create_token
from tests.api.world import World, build_world


@pytest.fixture
def world(db: None) -> World:
    return build_world()


@pytest.fixture
def read_secret(db: None) -> str:
    return create_token("reader", TokenScope.READ)[1]


@pytest.fixture
def write_secret(db: None) -> str:
    return create_token("writer", TokenScope.WRITE)[1]


class Api:
    """Calls with a bearer token; ``get`` returns the parsed JSON after checking the code."""

    def __init__(self, client: Client, secret: str) -> None:
        self.client = client
        self.headers = {"Authorization": f"Bearer {secret}"}

    def raw(self, url: str, **query: Any):
        return self.client.get(url, query, headers=self.headers)

    def get(self, url: str, expect: int = 200, **query: Any) -> Any:
        response = self.raw(url, **query)
        assert response.status_code == expect, response.content[:500]
        return response.json()

    def post(self, url: str, body: Any = None, expect: int | None = None):
        import json

        response = self.client.post(
            url, json.dumps(body or {}), content_type="application/json", headers=self.headers
        )
        if expect is not None:
            assert response.status_code == expect, response.content[:500]
        return response


@pytest.fixture
def api(client: Client, read_secret: str) -> Api:
    return Api(client, read_secret)


@pytest.fixture
def writer(client: Client, write_secret: str) -> Api:
    return Api(client, write_secret)
