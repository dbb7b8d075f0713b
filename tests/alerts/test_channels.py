"""Notices through the real channels to real receivers (HTTP server, aiosmtpd), with the
deliveries run as Celery tasks (eagerly, in this process)."""

import socket

import pytest

from dashboard.alerts.delivery import backoff_s, send_test_notice
from dashboard.alerts.models import Alert, Channel, Delivery

pytestmark = pytest.mark.django_db

HOSTILE = "<!channel> & <script>alert(1)</script>"


def fire(mworld, run_on_commit, group="orders-spout", topic="orders", status="STALL",
         codes=("POISON_MESSAGE",)):  # fmt: skip
    mworld.set(group, topic, 0, status, codes, source="storm", lag=42, time_lag_s=120.0,
               reason="committed offset frozen at 1234")  # fmt: skip
    run_on_commit(mworld)
    run_on_commit(mworld)
    return Alert.objects.get(group=group)


def clear(mworld, run_on_commit, group="orders-spout", topic="orders"):
    mworld.set(group, topic, 0, "OK", source="storm")
    run_on_commit(mworld)


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"


def test_webhook_payload_firing_and_resolved(mworld, run_on_commit, hook, settings):
    settings.LAGWATCH_BASE_URL = "https://lagwatch.example.com"
    Channel.objects.create(name="hook", kind="webhook", url=hook.url)
    alert = fire(mworld, run_on_commit)
    (firing,) = hook.bodies("firing")
    assert hook.requests[0]["headers"]["Content-Type"] == "application/json"
    assert set(firing) == {"version", "source", "notice", "sent_at", "alert"}
    assert (firing["version"], firing["source"]) == (1, "lagwatch")
    doc = firing["alert"]
    assert (
        doc["id"] == alert.pk and doc["url"] == f"https://lagwatch.example.com/alerts/{alert.pk}/"
    )
    assert (doc["cluster"], doc["source"], doc["group"], doc["topic"], doc["partition"]) == (
        "prod", "storm", "orders-spout", "orders", 0,
    )  # fmt: skip
    assert (doc["status"], doc["diagnosis"], doc["lag"], doc["time_lag_s"]) == (
        "STALL", ["POISON_MESSAGE"], 42, 120.0,
    )  # fmt: skip
    assert doc["state"] == "firing" and doc["severity"] == "warning" and doc["resolved_at"] is None
    assert doc["rule"] == "Stuck partition (default)" and doc["reason"].endswith("1234")
    clear(mworld, run_on_commit)
    (resolved,) = hook.bodies("resolved")
    assert resolved["alert"]["state"] == "resolved"
    assert resolved["alert"]["resolved_reason"] == "status cleared"
    assert resolved["alert"]["resolved_at"].endswith("Z")
    assert [e for e in alert.events.values_list("kind", flat=True)] == [
        "fired", "notified", "resolved", "notified",
    ]  # fmt: skip


def test_slack_payload_shape_and_escaping(mworld, run_on_commit, hook):
    Channel.objects.create(name="slack", kind="slack", url=hook.url)
    fire(mworld, run_on_commit, group=HOSTILE, topic="t`x`")
    (body,) = hook.bodies()
    assert set(body) == {"text", "blocks", "attachments"}
    assert body["text"].startswith("[Lagwatch FIRING] [warning] STALL")
    everything = str(body)
    assert "<!channel>" not in everything and "<script>" not in everything
    assert "&lt;!channel&gt; &amp; &lt;script&gt;" in body["text"]
    assert all(b["type"] in ("section", "context") for b in body["blocks"])
    details = body["blocks"][1]["text"]["text"]
    assert details.startswith("```") and details.count("```") == 2  # names cannot break out
    assert body["attachments"][0]["color"] == "#d0312d"


def test_email_firing_and_resolve(mworld, run_on_commit, smtp, smtp_settings):
    Channel.objects.create(name="ops mail", kind="email",
                           recipients="ops@example.com,\noncall@example.com")  # fmt: skip
    fire(mworld, run_on_commit, group="orders\r\nBcc: victim@example.com")
    (mail,) = smtp.wait(1)
    assert sorted(mail["to"]) == ["oncall@example.com", "ops@example.com"]
    msg = mail["msg"]
    assert msg["Subject"].startswith("[Lagwatch FIRING] [warning] STALL orders Bcc:")
    assert "victim@example.com" not in mail["to"] and msg["Bcc"] is None
    body = msg.get_content()
    assert "Status:     STALL" in body and "POISON_MESSAGE" in body and "1234" in body
    clear(mworld, run_on_commit, group="orders\r\nBcc: victim@example.com")
    smtp.wait(2)
    assert smtp.messages[1]["msg"]["Subject"].startswith("[Lagwatch RESOLVED]")


def test_email_channel_may_name_its_own_smtp_server(mworld, run_on_commit, smtp, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", 1  # nothing listens there
    Channel.objects.create(name="relay", kind="email", recipients="a@example.com",
                           smtp_host=smtp.host, smtp_port=smtp.port)  # fmt: skip
    fire(mworld, run_on_commit)
    assert smtp.wait(1)[0]["to"] == ["a@example.com"]


@pytest.mark.parametrize("failure", ["http500", "closed_port"])
def test_failing_channel_retries_with_backoff_and_never_blocks_the_other(
    mworld, run_on_commit, hook, smtp, smtp_settings, settings, failure
):
    settings.LAGWATCH_ALERTS_MAX_ATTEMPTS = 4
    settings.LAGWATCH_ALERTS_RETRY_BASE_S = 5
    settings.LAGWATCH_ALERTS_RETRY_MAX_S = 15
    if failure == "http500":
        hook.status = 500
        url = hook.url
    else:
        url = closed_port_url()
    Channel.objects.create(name="broken hook", kind="webhook", url=url)
    Channel.objects.create(name="mail", kind="email", recipients="ops@example.com")
    alert = fire(mworld, run_on_commit)
    assert len(smtp.wait(1)) == 1  # the other channel delivered
    broken = Delivery.objects.get(channel_name="broken hook")
    attempts = list(broken.attempt_log.values_list("number", "ok", "retry_in_s"))
    assert attempts == [(1, False, 5.0), (2, False, 10.0), (3, False, 15.0), (4, False, None)]
    assert broken.state == "failed" and broken.attempts == 4
    error = broken.last_error
    assert ("HTTP 500" in error) if failure == "http500" else ("cannot reach" in error)
    assert "SECRETTOKEN" not in error
    if failure == "http500":
        assert len(hook.requests) == 4
    assert Delivery.objects.get(channel_name="mail").state == "sent"
    kinds = list(alert.events.values_list("kind", flat=True))
    assert kinds.count("delivery_failed") == 1 and kinds.count("notified") == 1


def test_receiver_recovering_mid_retries_is_sent(mworld, run_on_commit, hook, settings):
    settings.LAGWATCH_ALERTS_MAX_ATTEMPTS = 5
    hook.status = 503
    Channel.objects.create(name="flaky", kind="webhook", url=hook.url)
    original = hook.server.RequestHandlerClass.do_POST

    def recover_after_two(handler):
        if len(hook.requests) >= 2:
            hook.status = 200
        original(handler)

    hook.server.RequestHandlerClass.do_POST = recover_after_two
    fire(mworld, run_on_commit)
    d = Delivery.objects.get()
    assert d.state == "sent" and d.attempts == 3 and d.sent_at is not None
    assert list(d.attempt_log.values_list("ok", flat=True)) == [False, False, True]


@pytest.mark.parametrize(
    ("attempt", "expected"), [(1, 10), (2, 20), (3, 40), (4, 80), (5, 160), (6, 300), (10, 300)]
)
def test_backoff_doubles_up_to_a_cap(attempt, expected):
    assert backoff_s(attempt, 10, 300) == expected


def test_test_send_reports_success_and_error(hook, smtp, smtp_settings):
    ok_hook = Channel.objects.create(name="hook", kind="webhook", url=hook.url)
    assert send_test_notice(ok_hook, "alice") == (True, "")
    assert hook.bodies()[0]["notice"] == "test"
    mail = Channel.objects.create(name="mail", kind="email", recipients="a@example.com")
    assert send_test_notice(mail, "alice") == (True, "")
    assert "[Lagwatch TEST]" in smtp.wait(1)[0]["msg"]["Subject"]
    dead = Channel.objects.create(name="dead", kind="slack", url=closed_port_url())
    ok, error = send_test_notice(dead, "alice")
    assert not ok and "cannot reach the endpoint" in error
    empty = Channel.objects.create(name="nobody", kind="email", recipients="")
    assert send_test_notice(empty, "alice") == (False, "no recipients")


def test_webhook_url_is_masked():
    c = Channel(name="s", kind="slack", url="https://hooks.slack.com/services/T0/B0/tokensecret")
    assert c.masked_target == "https://hooks.slack.com/…cret"
    assert "services" not in c.masked_target
