"""The suite's own guard: rows made by data migrations survive transactional tests.

A transactional test's flush empties every table; ``tests/conftest.py`` runs the data
migrations again once it is torn down, because parallel workers may run any test after it.
Two transactional tests in a row: the second sees the role groups and the default alert rule.
"""

import pytest
from django.contrib.auth.models import Group

from dashboard.accounts.roles import ROLE_ORDER
from dashboard.alerts.models import Rule

ROLES = sorted(r.value for r in ROLE_ORDER)


def migration_data() -> tuple[list[str], int]:
    groups = sorted(Group.objects.filter(name__in=ROLES).values_list("name", flat=True))
    return groups, Rule.objects.count()


@pytest.mark.django_db(transaction=True)
def test_a_transactional_test_sees_the_migration_data() -> None:
    assert migration_data() == (ROLES, 1)


@pytest.mark.django_db(transaction=True)
def test_so_does_the_next_one_after_the_flush() -> None:
    assert migration_data() == (ROLES, 1)


@pytest.mark.django_db
def test_and_a_plain_database_test_sees_it_once() -> None:
    assert migration_data() == (ROLES, 1)
