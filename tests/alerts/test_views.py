"""Alerts pages: login, CSRF, acknowledge / silence / test-send flows, forms, escaping."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.accounts.roles import Role
from dashboard.alerts.models import Alert, Channel, Rule, Silence
from tests.roles import user_with_role

pytestmark = pytest.mark.django_db

HOSTILE = '<img src=x onerror="alert(1)">'


@pytest.fixture
def user():
    # These tests change rules and channels: an admin (tests/accounts test each role).
    return user_with_role("alice", Role.ADMIN)


@pytest.fixture
def client_in(user):
    c = Client()
    c.force_login(user)
    return c


@pytest.fixture
def csrf_client(user):
    c = Client(enforce_csrf_checks=True)
    c.force_login(user)
    return c


def firing_alert(mworld, group="orders-spout", topic="orders"):
    mworld.set(group, topic, 0, "STALL", ["POISON_MESSAGE"], source="storm", reason=HOSTILE)
    mworld.apply()
    mworld.apply()
    return Alert.objects.get(group=group)


PAGES = [
    ("alerts:index", ()), ("alerts:rules", ()), ("alerts:channels", ()),
    ("alerts:silences", ()), ("alerts:rule_new", ()), ("alerts:channel_new", ()),
]  # fmt: skip


@pytest.mark.parametrize(("name", "args"), PAGES)
def test_pages_need_login(client, name, args):
    response = client.get(reverse(name, args=args))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.parametrize(("name", "args"), PAGES)
def test_pages_render(client_in, name, args):
    assert client_in.get(reverse(name, args=args)).status_code == 200


def test_detail_needs_login_and_404s(client, client_in, mworld):
    alert = firing_alert(mworld)
    assert client.get(reverse("alerts:detail", args=[alert.pk])).status_code == 302
    assert client_in.get(reverse("alerts:detail", args=[alert.pk + 99])).status_code == 404


def test_hostile_names_escaped_on_list_and_detail(client_in, mworld):
    alert = firing_alert(mworld, group=HOSTILE, topic="<b>t</b>")
    for url in (reverse("alerts:index"), reverse("alerts:detail", args=[alert.pk])):
        html = client_in.get(url).content.decode()
        assert HOSTILE not in html and "<b>t</b>" not in html
        assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html


def test_list_filters(client_in, mworld):
    a = firing_alert(mworld, group="orders-spout")
    b = firing_alert(mworld, group="payments-ledger")
    Alert.objects.filter(pk=b.pk).update(state="resolved", resolved_at=timezone.now())
    html = client_in.get(reverse("alerts:index")).content.decode()
    assert f'data-alert="{a.pk}"' in html and f'data-alert="{b.pk}"' not in html
    html = client_in.get(reverse("alerts:index"), {"state": "resolved"}).content.decode()
    assert f'data-alert="{b.pk}"' in html and f'data-alert="{a.pk}"' not in html
    html = client_in.get(reverse("alerts:index"), {"state": "all", "q": "payments"}).content
    assert f'data-alert="{b.pk}"'.encode() in html and f'data-alert="{a.pk}"'.encode() not in html
    html = client_in.get(reverse("alerts:index"), {"severity": "critical"}).content.decode()
    assert "No open alerts matching the filter" in html
    assert (
        client_in.get(reverse("alerts:index"), {"state": "bogus", "page": "x"}).status_code == 200
    )


def test_acknowledge_flow_with_csrf(csrf_client, mworld):
    alert = firing_alert(mworld)
    url = reverse("alerts:acknowledge", args=[alert.pk])
    assert csrf_client.post(url).status_code == 403  # no CSRF token
    csrf_client.get(reverse("alerts:detail", args=[alert.pk]))
    token = csrf_client.cookies["csrftoken"].value
    response = csrf_client.post(url, {"csrfmiddlewaretoken": token}, follow=True)
    assert response.status_code == 200 and "acknowledged" in response.content.decode()
    alert.refresh_from_db()
    assert (alert.state, alert.acknowledged_by) == ("acknowledged", "alice")
    assert list(alert.events.values_list("kind", "actor")) == [
        ("fired", ""),
        ("acknowledged", "alice"),
    ]
    assert csrf_client.get(url).status_code == 405


def test_acknowledging_a_resolved_alert_says_so(client_in, mworld):
    alert = firing_alert(mworld)
    Alert.objects.filter(pk=alert.pk).update(state="resolved")
    response = client_in.post(reverse("alerts:acknowledge", args=[alert.pk]), follow=True)
    assert "already resolved" in response.content.decode()


def test_silence_button_silences_exactly_that_subject(client_in, mworld):
    alert = firing_alert(mworld, group="orders[1]*")
    response = client_in.post(reverse("alerts:silence", args=[alert.pk]),
                              {"hours": "4", "reason": "deploying"}, follow=True)  # fmt: skip
    assert response.status_code == 200
    s = Silence.objects.get()
    assert (s.group_pattern, s.topic_pattern, s.rule_id) == (
        "orders[[]1][*]",
        "orders",
        alert.rule_id,
    )
    assert s.created_by == "alice" and s.reason == "deploying"
    assert timedelta(hours=3.9) < s.until - timezone.now() <= timedelta(hours=4)
    alert.refresh_from_db()
    assert alert.silence_id == s.pk and "silenced" in alert.events.values_list("kind", flat=True)
    # The escaped pattern matches the literal name only.
    other = firing_alert(mworld, group="orders1x")
    assert other.silence_id is None


def test_silence_button_rejects_bad_hours(client_in, mworld):
    alert = firing_alert(mworld)
    for hours in ("abc", "0", "-1", "99999"):
        response = client_in.post(reverse("alerts:silence", args=[alert.pk]), {"hours": hours},
                                  follow=True)  # fmt: skip
        assert "hours: give a number" in response.content.decode()
    assert not Silence.objects.exists()


def test_silences_page_create_and_end(client_in, mworld):
    alert = firing_alert(mworld)
    bad = client_in.post(reverse("alerts:silences"), {"group_pattern": "*", "cluster_pattern": "*",
                                                      "topic_pattern": "*"})  # fmt: skip
    assert bad.status_code == 400 and "Give a duration" in bad.content.decode()
    past = client_in.post(reverse("alerts:silences"), {
        "group_pattern": "*", "cluster_pattern": "*", "topic_pattern": "*",
        "until": "2001-01-01 00:00",
    })  # fmt: skip
    assert past.status_code == 400 and "in the past" in past.content.decode()
    ok = client_in.post(reverse("alerts:silences"), {
        "group_pattern": "orders-*", "cluster_pattern": "*", "topic_pattern": "*", "hours": "2",
        "reason": "maintenance",
    }, follow=True)  # fmt: skip
    assert "1 open alert(s) silenced" in ok.content.decode()
    s = Silence.objects.get()
    alert.refresh_from_db()
    assert alert.silence_id == s.pk
    client_in.post(reverse("alerts:silence_end", args=[s.pk]))
    s.refresh_from_db()
    assert s.until <= timezone.now()


def test_rule_create_validation_edit_delete(client_in):
    url = reverse("alerts:rule_new")
    base = {"name": "orders", "enabled": "on", "cluster_pattern": "*", "group_pattern": "orders-*",
            "topic_pattern": "*", "level": "partition", "min_evaluations": "2",
            "min_duration_s": "0", "severity": "critical", "notify_resolved": "on"}  # fmt: skip
    response = client_in.post(url, base)
    assert response.status_code == 400
    assert "Choose at least one status or diagnosis" in response.content.decode()
    response = client_in.post(url, {**base, "statuses": ["STALL"], "min_evaluations": "0"})
    assert response.status_code == 400 and "At least one evaluation" in response.content.decode()
    response = client_in.post(url, {**base, "statuses": ["OK"]})
    assert response.status_code == 400  # OK is not a choice
    response = client_in.post(url, {**base, "diagnoses": ["SOURCE_UNREACHABLE"]})
    assert response.status_code == 400
    response = client_in.post(url, {**base, "statuses": ["STALL", "STOP"], "min_lag": "-5"})
    assert response.status_code == 400 and "Must be zero or more" in response.content.decode()
    assert not Rule.objects.filter(name="orders").exists()
    response = client_in.post(url, {**base, "statuses": ["STALL", "STOP"], "min_lag": "100"})
    assert response.status_code == 302
    rule = Rule.objects.get(name="orders")
    assert (rule.statuses, rule.min_lag, rule.severity) == (["STALL", "STOP"], 100, "critical")
    edit = reverse("alerts:rule_edit", args=[rule.pk])
    assert client_in.post(edit, {**base, "diagnoses": ["POISON_MESSAGE"]}).status_code == 302
    rule.refresh_from_db()
    assert (rule.statuses, rule.diagnoses) == ([], ["POISON_MESSAGE"])
    delete = reverse("alerts:rule_delete", args=[rule.pk])
    assert client_in.get(delete).status_code == 200 and Rule.objects.filter(pk=rule.pk).exists()
    client_in.post(delete)
    assert not Rule.objects.filter(pk=rule.pk).exists()


def test_channel_form_validates_and_never_shows_the_url(client_in):
    url = reverse("alerts:channel_new")
    secret = "https://hooks.slack.com/services/T0/B0/verysecrettoken"
    assert client_in.post(url, {"name": "s", "kind": "slack"}).status_code == 400
    r = client_in.post(url, {"name": "s", "kind": "slack", "url": "ftp://x/y"})
    assert r.status_code == 400 and "http:// or https://" in r.content.decode()
    r = client_in.post(url, {"name": "m", "kind": "email", "recipients": "ops@example.com, nope"})
    assert r.status_code == 400 and "Not an email address: nope" in r.content.decode()
    assert client_in.post(url, {"name": "s", "kind": "slack", "url": secret}).status_code == 302
    channel = Channel.objects.get(name="s")
    assert channel.url == secret
    for page in (reverse("alerts:channels"), reverse("alerts:channel_edit", args=[channel.pk])):
        html = client_in.get(page).content.decode()
        assert "verysecrettoken" not in html and "…oken" in html
    # Edited without a URL: the stored one stays.
    edit = reverse("alerts:channel_edit", args=[channel.pk])
    assert client_in.post(edit, {"name": "s2", "kind": "slack", "url": ""}).status_code == 302
    channel.refresh_from_db()
    assert (channel.name, channel.url) == ("s2", secret)


def test_admin_never_shows_the_url(mworld):
    admin_user = User.objects.create_superuser("root")
    c = Client()
    c.force_login(admin_user)
    channel = Channel.objects.create(
        name="hook", kind="webhook", url="https://x.example/tok3nSECRET"
    )
    firing_alert(mworld)
    for page in ("/admin/alerts/channel/", f"/admin/alerts/channel/{channel.pk}/change/"):
        html = c.get(page).content.decode()
        assert "tok3nSECRET" not in html, page
    for model in ("rule", "alert", "alertevent", "delivery", "deliveryattempt", "silence",
                  "candidate"):  # fmt: skip
        assert c.get(f"/admin/alerts/{model}/").status_code == 200, model


def test_test_send_button_reports_success_and_error(client_in, hook):
    good = Channel.objects.create(name="good", kind="webhook", url=hook.url)
    bad = Channel.objects.create(name="<bad>", kind="webhook", url="http://127.0.0.1:1/x")
    r = client_in.post(reverse("alerts:channel_test", args=[good.pk]), follow=True)
    assert "Test notice sent to “good”" in r.content.decode()
    assert hook.bodies()[0]["notice"] == "test"
    r = client_in.post(reverse("alerts:channel_test", args=[bad.pk]), follow=True)
    html = r.content.decode()
    assert "Test notice to “&lt;bad&gt;” failed: cannot reach the endpoint" in html
    assert client_in.get(reverse("alerts:channel_test", args=[good.pk])).status_code == 405


def test_summary_helpers(mworld):
    from dashboard.alerts.summary import open_alerts, open_alerts_count

    assert open_alerts(5) == [] and open_alerts_count() == 0
    a = firing_alert(mworld)
    Rule.objects.create(name="crit", statuses=["STALL"], severity="critical", min_evaluations=1,
                        group_pattern="payments")  # fmt: skip
    mworld.set("payments", "p", 0, "STALL")
    mworld.apply()
    mworld.apply()
    rows = open_alerts(10)
    assert open_alerts_count() == 3 and len(rows) == 3
    assert set(rows[0]) == {"id", "severity", "state", "title", "started_at", "url"}
    assert rows[0]["severity"] == "critical"
    assert open_alerts(1)[0]["url"] == f"/alerts/{rows[0]['id']}/"
    Alert.objects.filter(pk=a.pk).update(state="resolved")
    assert open_alerts_count() == 2


def test_acknowledge_errors():
    from dashboard.alerts.lifecycle import AlertNotFound, acknowledge

    with pytest.raises(AlertNotFound, match="alert 12345 does not exist"):
        acknowledge(12345, by="x")


def test_every_post_needs_the_csrf_token(csrf_client, mworld, hook):
    alert = firing_alert(mworld)
    channel = Channel.objects.create(name="hook", kind="webhook", url=hook.url)
    rule = Rule.objects.get(name="Stuck partition (default)")
    silence = Silence.objects.create(until=timezone.now() + timedelta(hours=1))
    posts = [
        reverse("alerts:acknowledge", args=[alert.pk]),
        reverse("alerts:silence", args=[alert.pk]),
        reverse("alerts:channel_test", args=[channel.pk]),
        reverse("alerts:channel_delete", args=[channel.pk]),
        reverse("alerts:rule_delete", args=[rule.pk]),
        reverse("alerts:rule_new"),
        reverse("alerts:silences"),
        reverse("alerts:silence_end", args=[silence.pk]),
    ]
    for url in posts:
        assert csrf_client.post(url, {"hours": "1"}).status_code == 403, url
    assert not hook.requests and Channel.objects.exists() and Rule.objects.filter(pk=rule.pk)
    alert.refresh_from_db()
    assert alert.state == "firing" and alert.silence_id is None
