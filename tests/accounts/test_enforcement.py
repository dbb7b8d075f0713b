"""Every role × every action through the real pages, API and admin (Django test client):
allowed → it happens; refused → 403 and the database is as it was. And a viewer's pages
have no buttons it may not use.

Who is expected to be allowed is written out in ``test_roles.EXPECTED`` (the table of
docs/DASHBOARD.md, "Roles"), not read from the code under test.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.utils import timezone

from dashboard.accounts.roles import Action, Role
from dashboard.alerts.models import Alert, AlertState, Channel, Rule, Silence
from dashboard.api.models import ApiToken
from dashboard.api.tokens import create_token
from dashboard.monitoring.models import Cluster
from dashboard.reports.models import Report
from tests.accounts.test_roles import EXPECTED
from tests.roles import user_with_role

pytestmark = pytest.mark.django_db
SCOPE_OF = {Role.VIEWER: "read", Role.OPERATOR: "operate", Role.ADMIN: "write"}


@pytest.fixture
def world(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    now = timezone.now()
    cluster = Cluster.objects.create(name="prod", kafka_bootstrap_servers="k:9092")
    rule = Rule.objects.create(name="r1", statuses=["STALL"])
    channel = Channel.objects.create(name="mail", kind="email", recipients="ops@example.com")
    alert = Alert.objects.create(
        rule=rule, rule_name="r1", subject_key="k1", level="partition", cluster="prod",
        group="g", topic="t", partition=0, severity="warning", title="g stalled",
        started_at=now, fired_at=now,
    )  # fmt: skip
    silence = Silence.objects.create(until=now + timedelta(hours=1), reason="x")
    return {"cluster": cluster, "rule": rule, "channel": channel, "alert": alert,
            "silence": silence}  # fmt: skip


def snapshot() -> tuple:
    """Everything an action could change (a token's last use is bookkeeping, not a change)."""
    tokens = ApiToken.objects.values("name", "scope", "revoked_at", "secret_hash")
    return tuple(
        sorted(map(repr, model.objects.values()))
        for model in (Alert, Silence, Rule, Channel, Cluster, Report, get_user_model())
    ) + (sorted(map(repr, tokens)), len(mail.outbox))


def logged_in(role: Role) -> Client:
    client = Client()
    client.force_login(user_with_role(f"u-{role}", role))
    return client


@dataclass
class Case:
    """One action done one way; ``done`` says whether it took effect."""

    action: Action
    do: Callable[[Client, dict], object]
    done: Callable[[dict], bool]
    token: bool = False  # the client carries a token of the role's scope instead of a login


def _api(client: Client, url: str, body: dict | None = None):
    return client.post(url, json.dumps(body or {}), content_type="application/json")


CLUSTER_FORM = {
    "name": "prod", "enabled": "on", "poll_interval_s": "30", "kafka_bootstrap_servers": "k:9092",
    "kafka_config": "{}", "read_consumer_offsets_topic": "on", "zk_hosts": "",
    "storm_spout_roots": "[]", "storm_ui_url": "", "broker_metrics_urls": "[]",
    "retention_risk_s": "3600",
}  # fmt: skip

CASES = {
    "ui acknowledge": Case(
        Action.ACKNOWLEDGE,
        lambda c, w: c.post(f"/alerts/{w['alert'].pk}/acknowledge/"),
        lambda w: Alert.objects.get(pk=w["alert"].pk).state == AlertState.ACKNOWLEDGED,
    ),
    "ui silence alert": Case(
        Action.SILENCE,
        lambda c, w: c.post(f"/alerts/{w['alert'].pk}/silence/", {"hours": "2"}),
        lambda w: Alert.objects.get(pk=w["alert"].pk).silence_id is not None,
    ),
    "ui new silence": Case(
        Action.SILENCE,
        lambda c, w: c.post(
            "/alerts/silences/",
            {"hours": "2", "cluster_pattern": "*", "group_pattern": "g*", "topic_pattern": "*"},
        ),
        lambda w: Silence.objects.filter(group_pattern="g*").exists(),
    ),  # fmt: skip
    "ui end silence": Case(
        Action.SILENCE,
        lambda c, w: c.post(f"/alerts/silences/{w['silence'].pk}/end/"),
        lambda w: not Silence.objects.get(pk=w["silence"].pk).is_active(),
    ),
    "ui build report": Case(
        Action.BUILD_REPORT,
        lambda c, w: c.post(
            "/reports/",
            {
                "cluster": "prod",
                "since": "1h",
                "resolution": "1m",
                "format": "csv",
                "action": "build",
            },
        ),
        lambda w: Report.objects.exists(),
    ),  # fmt: skip
    "ui new rule": Case(
        Action.EDIT_RULES,
        lambda c, w: c.post(
            "/alerts/rules/new/",
            {
                "name": "r2",
                "enabled": "on",
                "cluster_pattern": "*",
                "group_pattern": "*",
                "topic_pattern": "*",
                "statuses": ["STOP"],
                "level": "partition",
                "min_evaluations": "2",
                "min_duration_s": "0",
                "severity": "warning",
            },
        ),
        lambda w: Rule.objects.filter(name="r2").exists(),
    ),  # fmt: skip
    "ui delete rule": Case(
        Action.EDIT_RULES,
        lambda c, w: c.post(f"/alerts/rules/{w['rule'].pk}/delete/"),
        lambda w: not Rule.objects.filter(pk=w["rule"].pk).exists(),
    ),
    "ui new channel": Case(
        Action.EDIT_CHANNELS,
        lambda c, w: c.post(
            "/alerts/channels/new/",
            {"name": "m2", "kind": "email", "enabled": "on", "recipients": "a@example.com"},
        ),
        lambda w: Channel.objects.filter(name="m2").exists(),
    ),  # fmt: skip
    "ui test channel": Case(
        Action.EDIT_CHANNELS,
        lambda c, w: c.post(f"/alerts/channels/{w['channel'].pk}/test/"),
        lambda w: len(mail.outbox) == 1,
    ),
    "admin change cluster": Case(
        Action.EDIT_CLUSTERS,
        lambda c, w: c.post(f"/admin/monitoring/cluster/{w['cluster'].pk}/change/", CLUSTER_FORM),
        lambda w: Cluster.objects.get(pk=w["cluster"].pk).poll_interval_s == 30,
    ),
    "admin delete cluster": Case(
        Action.EDIT_CLUSTERS,
        lambda c, w: c.post(
            f"/admin/monitoring/cluster/{w['cluster'].pk}/delete/", {"post": "yes"}
        ),
        lambda w: not Cluster.objects.filter(pk=w["cluster"].pk).exists(),
    ),  # fmt: skip
    "admin change rule": Case(
        Action.EDIT_RULES,
        lambda c, w: c.post(f"/admin/alerts/rule/{w['rule'].pk}/delete/", {"post": "yes"}),
        lambda w: not Rule.objects.filter(pk=w["rule"].pk).exists(),
    ),
    "admin new token": Case(
        Action.MANAGE_TOKENS,
        lambda c, w: c.post("/admin/api/apitoken/add/", {"name": "t1", "scope": "read"}),
        lambda w: ApiToken.objects.filter(name="t1").exists(),
    ),
    "admin new user": Case(
        Action.MANAGE_USERS,
        lambda c, w: c.post(
            "/admin/auth/user/add/",
            {
                "username": "newbie",
                "password1": "Very-long-pass-4-roles",
                "password2": "Very-long-pass-4-roles",
                "usable_password": "true",
            },
        ),
        lambda w: get_user_model().objects.filter(username="newbie").exists(),
    ),  # fmt: skip
    "api acknowledge (token)": Case(
        Action.ACKNOWLEDGE,
        lambda c, w: _api(c, f"/api/v1/alerts/{w['alert'].pk}/acknowledge"),
        lambda w: Alert.objects.get(pk=w["alert"].pk).state == AlertState.ACKNOWLEDGED,
        token=True,
    ),
    "api build report (token)": Case(
        Action.BUILD_REPORT,
        lambda c, w: _api(c, "/api/v1/reports/", {"cluster": "prod", "since": "1h"}),
        lambda w: Report.objects.exists(),
        token=True,
    ),
    "api build report (session)": Case(
        Action.BUILD_REPORT,
        lambda c, w: _api(c, "/api/v1/reports/", {"cluster": "prod", "since": "1h"}),
        lambda w: Report.objects.exists(),
    ),
}


def client_for(role: Role, case: Case) -> Client:
    if not case.token:
        return logged_in(role)
    _, secret = create_token(f"t-{role}", SCOPE_OF[role])
    return Client(headers={"Authorization": f"Bearer {secret}"})


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize("name", list(CASES))
def test_role_action(world, role: Role, name: str) -> None:
    case = CASES[name]
    client = client_for(role, case)
    before = snapshot()
    response = case.do(client, world)
    if role in EXPECTED[case.action]:
        assert response.status_code in (200, 201, 202, 302), response.content[:800]
        assert case.done(world), f"{name}: {role} was allowed but nothing happened"
    else:
        assert response.status_code == 403, response.content[:800]
        assert snapshot() == before, f"{name}: refused, yet the database changed"
        assert not case.done(world)


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize(
    "url",
    ["/", "/groups/", "/sources/", "/alerts/", "/alerts/rules/", "/alerts/channels/",
     "/alerts/silences/", "/reports/", "/admin/", "/admin/monitoring/cluster/",
     "/admin/alerts/rule/"],
)  # fmt: skip
def test_every_role_reads_every_page(world, role: Role, url: str) -> None:
    assert logged_in(role).get(url).status_code == 200


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize("url", ["/api/v1/clusters/", "/api/v1/alerts/", "/api/v1/reports/"])
def test_every_scope_reads_the_api(world, role: Role, url: str) -> None:
    _, secret = create_token(f"t-{role}", SCOPE_OF[role])
    assert Client().get(url, headers={"Authorization": f"Bearer {secret}"}).status_code == 200
    assert logged_in(role).get(url).status_code == 200


@pytest.mark.parametrize(
    "url", ["/alerts/rules/new/", "/alerts/channels/new/", "/alerts/rules/{rule}/",
            "/alerts/rules/{rule}/delete/", "/alerts/channels/{channel}/"],
)  # fmt: skip
def test_editing_forms_are_refused_to_an_operator_with_a_clear_page(world, url: str) -> None:
    url = url.format(rule=world["rule"].pk, channel=world["channel"].pk)
    response = logged_in(Role.OPERATOR).get(url)
    assert response.status_code == 403
    text = response.content.decode()
    assert "Your role (operator) does not allow you to" in text and "Nothing was changed" in text


def test_a_user_in_no_role_group_is_a_viewer(world) -> None:
    client = Client()
    client.force_login(get_user_model().objects.create_user("plain"))
    assert client.get("/alerts/").status_code == 200
    before = snapshot()
    assert client.post(f"/alerts/{world['alert'].pk}/acknowledge/").status_code == 403
    assert client.post("/alerts/rules/new/", {"name": "x"}).status_code == 403
    assert snapshot() == before


def test_a_superuser_is_an_admin(world) -> None:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "r@example.com"))
    assert client.post(f"/alerts/rules/{world['rule'].pk}/delete/").status_code == 302
    assert not Rule.objects.filter(pk=world["rule"].pk).exists()


def test_a_read_token_is_told_which_scope_it_needs(world) -> None:
    _, secret = create_token("r", "read")
    response = _api(
        Client(headers={"Authorization": f"Bearer {secret}"}),
        f"/api/v1/alerts/{world['alert'].pk}/acknowledge",
    )
    assert response.status_code == 403
    assert 'scope="operate write"' in response["WWW-Authenticate"]
    assert "needs scope operate or write" in response.json()["error"]["message"]


def test_the_api_index_says_the_role(world) -> None:
    _, secret = create_token("o", "operate")
    body = Client().get("/api/v1/", headers={"Authorization": f"Bearer {secret}"}).json()
    assert body["you"] == {"actor": "token:o", "scope": "operate", "role": "operator"}


# --- the buttons a role may not use are not there ---------------------------------------------

BUTTONS = {  # page → (text of a control, the action it needs)
    "/alerts/": [(">Acknowledge</button>", Action.ACKNOWLEDGE),
                 (">Silence</button>", Action.SILENCE)],
    "/alerts/{alert}/": [(">Acknowledge</button>", Action.ACKNOWLEDGE),
                         (">Silence</button>", Action.SILENCE)],
    "/alerts/rules/": [("New rule</a>", Action.EDIT_RULES),
                       ("/alerts/rules/{rule}/delete/", Action.EDIT_RULES),
                       ('href="/alerts/rules/{rule}/"', Action.EDIT_RULES)],
    "/alerts/channels/": [("New channel</a>", Action.EDIT_CHANNELS),
                          (">Send test</button>", Action.EDIT_CHANNELS),
                          ("/alerts/channels/{channel}/delete/", Action.EDIT_CHANNELS)],
    "/alerts/silences/": [(">End now</button>", Action.SILENCE),
                          ("<h2>New silence</h2>", Action.SILENCE)],
    "/reports/": [('value="build">Build report</button>', Action.BUILD_REPORT),
                  ('value="download">Download now</button>', Action.VIEW)],
}  # fmt: skip


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize("page", list(BUTTONS))
def test_pages_show_only_the_controls_of_the_role(world, role: Role, page: str) -> None:
    ids = {"alert": world["alert"].pk, "rule": world["rule"].pk, "channel": world["channel"].pk}
    body = logged_in(role).get(page.format(**ids)).content.decode()
    for text, action in BUTTONS[page]:
        shown = text.format(**ids) in body
        assert shown is (role in EXPECTED[action]), f"{page}: {text!r} for {role}"


def test_admin_shows_a_viewer_no_add_or_change(world) -> None:
    client = logged_in(Role.VIEWER)
    listing = client.get("/admin/alerts/rule/").content.decode()
    assert "/admin/alerts/rule/add/" not in listing
    page = client.get(f"/admin/monitoring/cluster/{world['cluster'].pk}/change/")
    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()
    assert client.get("/admin/auth/user/").status_code == 403
    assert client.get("/admin/api/apitoken/").status_code == 403
