"""The Django tests run on the database ``--database`` names (``scripts/test`` runs them on
SQLite, then on PostgreSQL): proof that the option changes the engine, not only a name."""

import pytest
from django.db import connection

ENGINES = {"sqlite": "sqlite", "postgresql": "postgresql"}


@pytest.mark.django_db
def test_the_tests_run_on_the_database_asked_for(request: pytest.FixtureRequest) -> None:
    asked = request.config.getoption("--database")
    assert connection.vendor == ENGINES[asked]
    with connection.cursor() as cursor:
        if asked == "postgresql":
            cursor.execute("SELECT current_database(), version()")
            name, version = cursor.fetchone()
            assert name.startswith("test_") and version.startswith("PostgreSQL")
        else:
            cursor.execute("SELECT sqlite_version()")
            assert cursor.fetchone()[0]
