"""The audit log (dashboard/accounts/audit.py): each kind of change, made through the real
pages, admin and API (the cases of test_enforcement.py), leaves exactly one entry naming the
actor, how they acted, the object and the client's address; secrets never reach it; only
admins read it, on its page and in /api/v1."""

from __future__ import annotations

import json
import sys

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from dashboard.accounts.models import AuditEntry
from dashboard.accounts.roles import Role
from dashboard.alerts.models import Channel
from dashboard.api.models import ApiToken
from dashboard.api.tokens import create_token
from dashboard.monitoring.models import Cluster
from tests.accounts.test_enforcement import CASES, world  # noqa: F401 - the fixture
from tests.roles import user_with_role

pytestmark = pytest.mark.django_db

# case of test_enforcement.CASES → (kind of object, action, its name in the log)
EXPECTED = {
    "ui acknowledge": ("alert", "acknowledged", "g stalled"),
    "ui new silence": ("silence", "created", None),
    "ui end silence": ("silence", "changed", None),
    "ui new rule": ("rule", "created", "r2"),
    "ui delete rule": ("rule", "deleted", "r1"),
    "ui new channel": ("channel", "created", "m2"),
    "admin change cluster": ("cluster", "changed", "prod"),
    "admin delete cluster": ("cluster", "deleted", "prod"),
    "admin change rule": ("rule", "deleted", "r1"),
    "admin new token": ("token", "created", "t1"),
    "admin new user": ("user", "created", "newbie"),
    "api acknowledge (token)": ("alert", "acknowledged", "g stalled"),
}
# What changes nothing audited: a test message, a silence on one alert (the alert's own
# state, not a person's change of a rule, channel...: its silence is a new Silence below),
# reports.
NOT_AUDITED = {"ui test channel", "ui build report", "api build report (token)",
               "api build report (session)"}  # fmt: skip


def test_every_case_is_classified() -> None:
    assert set(CASES) - NOT_AUDITED - {"ui silence alert"} == set(EXPECTED)


def admin_client(token: bool) -> tuple[Client, str]:
    if token:
        _, secret = create_token("t-admin", "write")
        client = Client(headers={"Authorization": f"Bearer {secret}"}, REMOTE_ADDR="192.0.2.7")
        return client, "token:t-admin"
    client = Client(REMOTE_ADDR="192.0.2.7")
    client.force_login(user_with_role("boss", Role.ADMIN))
    return client, "boss"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_change_leaves_one_entry_with_its_actor_and_object(world, name: str) -> None:  # noqa: ANN001, F811
    case = CASES[name]
    client, actor = admin_client(case.token)
    before = set(AuditEntry.objects.values_list("pk", flat=True))
    response = case.do(client, world)
    assert response.status_code in (200, 201, 302), response.content[:600]
    new = list(AuditEntry.objects.exclude(pk__in=before))
    kind, action, named = EXPECTED[name]
    mine = [e for e in new if e.object_type == kind]
    assert len(mine) == 1, [(e.object_type, e.action) for e in new]
    entry = mine[0]
    assert (entry.action, entry.actor_name, entry.client_address) == (action, actor, "192.0.2.7")
    assert entry.via == ("api" if case.token else "admin" if "admin" in name else "page")
    assert entry.actor_id == (
        None if case.token else get_user_model().objects.get(username="boss").pk
    )
    if named is not None:
        assert entry.object_repr == named or named in entry.object_repr
    assert entry.object_id
    if action == "changed":
        assert entry.changes, "a change names its fields"


def test_secrets_never_reach_the_log(world) -> None:  # noqa: ANN001, F811
    client, _ = admin_client(token=False)
    hook = "https://hooks.example.com/services/T000/B000/very-secret-path"
    client.post("/alerts/channels/new/", {"name": "hook", "kind": "webhook", "enabled": "on",
                                          "url": hook})  # fmt: skip
    assert Channel.objects.filter(name="hook").exists()
    cluster = Cluster.objects.get(name="prod")
    cluster.kafka_config = {"sasl.password": "kafka-secret-pw", "security.protocol": "SASL_SSL"}
    cluster.save()
    client.post("/admin/api/apitoken/add/", {"name": "t9", "scope": "read"})
    token = ApiToken.objects.get(name="t9")
    client.post("/admin/auth/user/add/", {"username": "pw-user", "password1": "Long-pass-9-x-y",
                                          "password2": "Long-pass-9-x-y",
                                          "usable_password": "true"})  # fmt: skip
    log = json.dumps(list(AuditEntry.objects.values("changes", "object_repr")))
    for secret in (
        "very-secret-path",
        "kafka-secret-pw",
        token.secret_hash,
        token.prefix,
        "Long-pass-9-x-y",
        get_user_model().objects.get(username="pw-user").password,
    ):
        assert secret not in log  # fmt: skip
    made = AuditEntry.objects.get(object_type="user", object_repr="pw-user")
    assert made.changes["password"] == [None, "changed"]
    changed = AuditEntry.objects.get(object_type="cluster", action="changed")
    assert changed.changes["kafka_config"][1]["sasl.password"] == "********"
    assert changed.actor_name == "system" and changed.via == "system"  # no request, no command


def test_role_changes_by_command_and_token_revocation(world, monkeypatch) -> None:  # noqa: ANN001, F811
    user = get_user_model().objects.create_user("ann")
    monkeypatch.setattr(sys, "argv", ["manage.py", "lagwatch_user"])
    call_command("lagwatch_user", "ann", "--role", "operator")
    entries = AuditEntry.objects.filter(object_type="user", object_id=str(user.pk),
                                        action="changed")  # fmt: skip
    added = [e.changes["role"] for e in entries if "added" in e.changes.get("role", {})]
    assert added == [{"added": ["operator"]}]
    assert {e.actor_name for e in entries} == {"manage.py lagwatch_user"}
    client, _ = admin_client(token=False)
    _, secret = create_token("old", "read")
    token = ApiToken.objects.get(name="old")
    client.post("/admin/api/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})
    revoked = AuditEntry.objects.get(object_type="token", object_id=str(token.pk), action="revoked")
    assert revoked.actor_name == "boss" and "revoked_at" in revoked.changes


def test_an_alert_changed_by_the_system_is_not_a_persons_change(world) -> None:  # noqa: ANN001, F811
    alert = world["alert"]
    alert.reason = "still stalled"
    alert.save(update_fields=["reason"])
    alert.state = "resolved"
    alert.save()
    assert not AuditEntry.objects.filter(object_type="alert").exists()


@pytest.mark.parametrize(("role", "status"), [(Role.VIEWER, 403), (Role.OPERATOR, 403),
                                              (Role.ADMIN, 200)])  # fmt: skip
def test_only_admins_read_the_log(world, role: Role, status: int) -> None:  # noqa: ANN001, F811
    admin, _ = admin_client(token=False)
    admin.post(f"/alerts/rules/{world['rule'].pk}/delete/")
    client = Client()
    client.force_login(user_with_role(f"u-{role}", role))
    page = client.get("/audit/")
    assert page.status_code == status
    api = client.get("/api/v1/audit/?actor=boss")
    assert api.status_code == status
    if status == 200:
        assert "r1" in page.content.decode() and "boss" in page.content.decode()
        body = api.json()
        assert body["count"] == 1
        assert body["results"][0] | {"id": 0, "at": ""} == {
            "id": 0, "at": "", "actor": "boss", "via": "page", "action": "deleted",
            "object_type": "rule", "object_id": str(world["rule"].pk), "object": "r1",
            "changes": {}, "client_address": "192.0.2.7",
        }  # fmt: skip
        filtered = client.get("/api/v1/audit/?object_type=cluster&actor=boss").json()
        assert filtered["count"] == 0


@pytest.mark.parametrize(("scope", "status"), [("read", 403), ("operate", 403), ("write", 200)])
def test_only_write_tokens_read_the_log_in_the_api(world, scope: str, status: int) -> None:  # noqa: ANN001, F811
    _, secret = create_token(f"t-{scope}", scope)
    answer = Client().get("/api/v1/audit/", headers={"Authorization": f"Bearer {secret}"})
    assert answer.status_code == status


def test_saving_without_a_change_records_nothing(world) -> None:  # noqa: ANN001, F811
    before = AuditEntry.objects.count()
    for name in ("cluster", "rule", "channel", "silence"):
        world[name].save()  # as a re-import of the same file does
    assert AuditEntry.objects.count() == before
