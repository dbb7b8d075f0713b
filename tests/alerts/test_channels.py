"""Notices through the real channels to real receivers (HTTP server, aiosmtpd), with the
deliveries run as Celery tasks (eagerly, in this process): payloads, and what is retried and
what is not as the receivers answer."""

import socket
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from dashboard.alerts.delivery import backoff_s, retry_wait_s, send_test_notice
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


@pytest.mark.parametrize("failure", ["http500", "http503", "http408", "http429", "closed_port"])
def test_failing_channel_retries_with_backoff_and_never_blocks_the_other(
    mworld, run_on_commit, hook, smtp, smtp_settings, settings, failure
):
    settings.LAGWATCH_ALERTS_MAX_ATTEMPTS = 4
    settings.LAGWATCH_ALERTS_RETRY_BASE_S = 5
    settings.LAGWATCH_ALERTS_RETRY_MAX_S = 15
    if failure.startswith("http"):
        hook.status = int(failure[4:])
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
    assert f"HTTP {failure[4:]}" in error if failure != "closed_port" else "cannot reach" in error
    assert "SECRETTOKEN" not in error and "permanent" not in error
    if failure != "closed_port":
        assert len(hook.requests) == 4
    assert Delivery.objects.get(channel_name="mail").state == "sent"
    kinds = list(alert.events.values_list("kind", flat=True))
    assert kinds.count("delivery_failed") == 1 and kinds.count("notified") == 1


@pytest.mark.parametrize(
    ("kind", "status", "answer"),
    [
        ("slack", 404, b"no_service"),  # the webhook was removed
        ("slack", 404, b"channel_not_found"),
        ("slack", 403, b"invalid_token"),  # the app was uninstalled
        ("slack", 410, b"channel_is_archived"),
        ("slack", 400, b"invalid_payload"),
        ("webhook", 401, b"unauthorized"),
        ("webhook", 404, b"<html><body>Not Found</body></html>"),
    ],
)
def test_permanent_http_failure_is_not_retried(
    mworld, run_on_commit, hook, settings, kind, status, answer
):
    settings.LAGWATCH_ALERTS_MAX_ATTEMPTS = 4
    hook.status, hook.reply_body = status, answer
    Channel.objects.create(name="gone", kind=kind, url=hook.url)
    alert = fire(mworld, run_on_commit)
    d = Delivery.objects.get()
    assert len(hook.requests) == 1
    assert (d.state, d.attempts, d.next_attempt_at) == ("failed", 1, None)
    ((number, ok, retry_in, error),) = d.attempt_log.values_list(
        "number", "ok", "retry_in_s", "error"
    )
    assert (number, ok, retry_in) == (1, False, None)
    assert error.startswith(f"HTTP {status} ") and error.endswith(
        "(permanent failure: not retried)"
    )
    if answer.startswith(b"<"):
        assert "<" not in error  # an HTML error page is not the reason
    else:
        assert answer.decode() in error  # Slack names its error in the body
    assert "SECRETTOKEN" not in error and d.last_error == error
    (failed,) = alert.events.filter(kind="delivery_failed")
    assert failed.message == f"firing notice to gone failed at attempt 1: {error}"


def test_permanent_failure_reason_is_on_the_alert_page(mworld, run_on_commit, hook, client):
    from django.urls import reverse

    from dashboard.accounts.roles import Role
    from tests.roles import user_with_role

    hook.status, hook.reply_body = 410, b"channel_is_archived"
    Channel.objects.create(name="archived", kind="slack", url=hook.url)
    alert = fire(mworld, run_on_commit)
    client.force_login(user_with_role("viewer", Role.VIEWER))
    page = client.get(reverse("alerts:detail", args=[alert.pk])).content.decode()
    assert "HTTP 410 Gone: channel_is_archived (permanent failure: not retried)" in page
    assert "<td>failed</td>" in page and "retry in" not in page


def test_unusable_url_is_a_permanent_failure(mworld, run_on_commit, settings):
    settings.LAGWATCH_ALERTS_MAX_ATTEMPTS = 4
    Channel.objects.create(name="typo", kind="webhook", url="hooks.example.com/T0/SECRET")
    fire(mworld, run_on_commit)
    d = Delivery.objects.get()
    assert (d.state, d.attempts) == ("failed", 1)
    assert d.last_error.startswith("not a usable URL") and "SECRET" not in d.last_error


@pytest.mark.parametrize(
    ("retry_after", "expected_wait_s"),
    [
        ("12", 12.0),  # seconds, longer than the 5 s back-off: the server's wait
        ("1", 5.0),  # shorter: never sooner than the back-off
        ("3600", 15.0),  # never beyond the cap
        ("http-date 12", 12.0),  # an HTTP-date 12 s ahead
        ("http-date 3600", 15.0),
    ],
)
def test_rate_limited_429_honours_retry_after(
    mworld, run_on_commit, hook, settings, retry_after, expected_wait_s
):
    settings.LAGWATCH_ALERTS_MAX_ATTEMPTS = 4
    settings.LAGWATCH_ALERTS_RETRY_BASE_S = 5
    settings.LAGWATCH_ALERTS_RETRY_MAX_S = 15
    if retry_after.startswith("http-date"):
        # Whole seconds, read a moment later: ahead by a little more, as a real server would be.
        at = datetime.now(UTC) + timedelta(seconds=int(retry_after.split()[1]) + 1)
        retry_after = format_datetime(at, usegmt=True)
    hook.replies = [(429, {"Retry-After": retry_after}, b"rate_limited")]
    Channel.objects.create(name="busy", kind="slack", url=hook.url)
    fire(mworld, run_on_commit)
    d = Delivery.objects.get()
    assert (d.state, d.attempts) == ("sent", 2) and len(hook.requests) == 2
    first, second = d.attempt_log.all()
    assert (first.ok, second.ok, second.retry_in_s) == (False, True, None)
    assert first.retry_in_s == pytest.approx(expected_wait_s, abs=1.0)
    assert first.retry_in_s <= 15.0
    assert f"HTTP 429 Too Many Requests: rate_limited (Retry-After: {retry_after})" == first.error


def test_refused_recipient_is_not_retried(mworld, run_on_commit, smtp, smtp_settings, settings):
    settings.LAGWATCH_ALERTS_MAX_ATTEMPTS = 4
    smtp.refuse("nobody@example.com", *["550 5.1.1 No such user"] * 4)
    Channel.objects.create(name="mail", kind="email", recipients="nobody@example.com")
    alert = fire(mworld, run_on_commit)
    d = Delivery.objects.get()
    assert (d.state, d.attempts) == ("failed", 1)
    assert smtp.sink.rcpt_seen == ["nobody@example.com"] and smtp.messages == []
    assert d.last_error == (
        "recipients refused: nobody@example.com (550 5.1.1 No such user) "
        "(permanent failure: not retried)"
    )
    assert list(d.attempt_log.values_list("ok", "retry_in_s")) == [(False, None)]
    assert alert.events.filter(kind="delivery_failed").count() == 1


def test_recipient_refused_for_now_is_retried(mworld, run_on_commit, smtp, smtp_settings,
                                              settings):  # fmt: skip
    settings.LAGWATCH_ALERTS_MAX_ATTEMPTS = 4
    settings.LAGWATCH_ALERTS_RETRY_BASE_S = 5
    smtp.refuse("ops@example.com", "450 4.2.1 Mailbox busy, try again later")
    Channel.objects.create(name="mail", kind="email", recipients="ops@example.com")
    fire(mworld, run_on_commit)
    d = Delivery.objects.get()
    assert (d.state, d.attempts) == ("sent", 2)
    assert list(d.attempt_log.values_list("ok", "retry_in_s")) == [(False, 5.0), (True, None)]
    assert "450 4.2.1 Mailbox busy" in d.attempt_log.first().error
    assert smtp.wait(1)[0]["to"] == ["ops@example.com"]


def test_one_refused_recipient_of_two_still_sends_to_the_other(
    mworld, run_on_commit, smtp, smtp_settings
):
    smtp.refuse("nobody@example.com", "550 5.1.1 No such user")
    Channel.objects.create(name="mail", kind="email",
                           recipients="nobody@example.com, ops@example.com")  # fmt: skip
    fire(mworld, run_on_commit)
    assert smtp.wait(1)[0]["to"] == ["ops@example.com"]
    d = Delivery.objects.get()
    assert (d.state, d.attempts) == ("sent", 1)


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


@pytest.mark.parametrize(
    ("attempt", "retry_after", "expected"),
    [
        (1, None, 5.0),  # the back-off
        (3, None, 15.0),  # 20 s, capped
        (1, 12.0, 12.0),  # the server asks for longer: its wait
        (1, 2.0, 5.0),  # or shorter: never sooner than the back-off
        (1, 0.0, 5.0),
        (1, 3600.0, 15.0),  # never beyond the cap
    ],
)
def test_retry_wait(attempt, retry_after, expected):
    assert retry_wait_s(attempt, retry_after, 5, 15) == expected


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
