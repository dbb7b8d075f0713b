"""Secrets are never shown in full: a unique text is planted in each secret (a cluster's SASL
password, OAUTHBEARER client secret and private key; a webhook URL; the SMTP password) and
every output is searched for it: admin pages, UI pages, API documents, exports, logs (a
failing webhook delivery included) and a 500 error report."""

from __future__ import annotations

import io
import json
import logging
import sys
import urllib.error

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from dashboard.accounts.roles import Role
from dashboard.alerts.delivery import attempt
from dashboard.alerts.models import Alert, Channel, Delivery
from dashboard.monitoring.config_file import parse_config
from dashboard.monitoring.models import Cluster
from dashboard.secrecy import MASK, is_secret_key, mask_config, redact_key_values
from tests.roles import user_with_role

pytestmark = pytest.mark.django_db

KAFKA_PW = "kafkaPw-5d1e9c7b"
OAUTH = "oauthSecret-8a4f2c6e"
PEM = "-----BEGIN PRIVATE KEY-----pemSecret-3b7d9f1a"
HOOK_TOKEN = "T0AB12CD/B0EF34GH/hookToken9c8d7e6f"
HOOK_URL = f"https://hooks.example.com/services/{HOOK_TOKEN}"
SMTP_PW = "smtpPw-2e4a6c8b"
PD_KEY = "pdRoutingKey0123456789abcdef0f1e"
GENIE_KEY = "genieKey-7f3e2d1c-aaaa-bbbb-cccc"
TEAMS_SIG = "teamsSig9a8b7c6d5e4f3a2b1c0d"
TEAMS_URL = ("https://prod-00.westeurope.logic.azure.com/workflows/abc/triggers/manual/paths/"
             f"invoke?api-version=2016-06-01&sp=%2Ftriggers&sv=1.0&sig={TEAMS_SIG}")
SECRETS = (KAFKA_PW, OAUTH, "pemSecret-3b7d9f1a", HOOK_TOKEN, SMTP_PW, PD_KEY, GENIE_KEY,
           TEAMS_SIG[:-4])


def assert_no_secret(text: str | bytes, where: str) -> None:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    for secret in SECRETS:
        assert secret not in text, f"{where} shows a secret"


@pytest.fixture
def world(settings):
    settings.EMAIL_HOST_PASSWORD = SMTP_PW
    cluster = Cluster.objects.create(
        name="prod-eu",
        kafka_bootstrap_servers="k1:9093",
        kafka_config={"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                      "sasl.username": "lagwatch", "sasl.password": KAFKA_PW,
                      "sasl.oauthbearer.client.secret": OAUTH, "ssl.key.pem": PEM},
    )  # fmt: skip
    channel = Channel.objects.create(name="ops-hook", kind="webhook", url=HOOK_URL)
    Channel.objects.create(name="pd-oncall", kind="pagerduty", secret=PD_KEY, region="eu")
    Channel.objects.create(name="responders", kind="opsgenie", secret=GENIE_KEY, region="us")
    Channel.objects.create(name="teams-ops", kind="teams", url=TEAMS_URL)
    now = timezone.now()
    alert = Alert.objects.create(
        rule_name="r", subject_key="k", level="partition", cluster="prod-eu", group="g",
        topic="t", partition=0, severity="warning", title="g stalled", started_at=now,
        fired_at=now,
    )  # fmt: skip
    return {"cluster": cluster, "channel": channel, "alert": alert}


def as_role(role: Role) -> Client:
    client = Client()
    client.force_login(user_with_role(f"s-{role}", role))
    return client


# --- which keys are secrets ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "secret"),
    [("sasl.password", True), ("ssl.key.password", True), ("ssl.keystore.password", True),
     ("sasl.oauthbearer.client.secret", True), ("ssl.key.pem", True), ("sasl.jaas.config", True),
     ("sasl.oauthbearer.config", True), ("sasl.username", False), ("security.protocol", False),
     ("ssl.ca.location", False), ("ssl.certificate.pem", False), ("sasl.mechanism", False)],
)  # fmt: skip
def test_which_librdkafka_keys_are_secret(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


def test_mask_config_and_key_value_redaction() -> None:
    assert mask_config({"sasl.password": "x", "a": 1, "ssl.key.password": ""}) == {
        "sasl.password": MASK, "a": 1, "ssl.key.password": ""
    }  # fmt: skip
    line = "config {'sasl.password': 'p@ss w', 'x': 1} and sasl.password=abc&y=2"
    assert redact_key_values(line) == (
        f"config {{'sasl.password': '{MASK}', 'x': 1}} and sasl.password={MASK}&y=2"
    )


# --- the admin ----------------------------------------------------------------------------------


@pytest.mark.parametrize("role", list(Role))
def test_admin_pages_never_show_a_secret(world, role: Role) -> None:
    client = as_role(role)
    cluster = world["cluster"]
    for url in (
        f"/admin/monitoring/cluster/{cluster.pk}/change/",
        "/admin/monitoring/cluster/",
        *[f"/admin/alerts/channel/{pk}/change/" for pk in Channel.objects.values_list("pk", flat=True)],
        "/admin/alerts/channel/",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        assert_no_secret(response.content, f"{url} as {role}")
    page = client.get(f"/admin/monitoring/cluster/{cluster.pk}/change/").content.decode()
    assert MASK in page and "lagwatch" in page  # masked, and the rest still shown


def _cluster_form(config_text: str, poll: str = "10") -> dict:
    return {
        "name": "prod-eu", "enabled": "on", "poll_interval_s": poll,
        "kafka_bootstrap_servers": "k1:9093", "kafka_config": config_text,
        "read_consumer_offsets_topic": "on", "zk_hosts": "", "storm_spout_roots": "[]",
        "storm_ui_url": "", "broker_metrics_urls": "[]", "retention_risk_s": "3600",
    }  # fmt: skip


def test_admin_edit_without_retyping_keeps_the_stored_secret(world) -> None:
    client = as_role(Role.ADMIN)
    url = f"/admin/monitoring/cluster/{world['cluster'].pk}/change/"
    shown = {**mask_config(world["cluster"].kafka_config), "sasl.username": "other"}
    response = client.post(url, _cluster_form(json.dumps(shown), poll="20"))
    assert response.status_code == 302, response.content[:500]
    stored = Cluster.objects.get(pk=world["cluster"].pk)
    assert stored.poll_interval_s == 20 and stored.kafka_config["sasl.username"] == "other"
    assert stored.kafka_config["sasl.password"] == KAFKA_PW
    assert stored.kafka_config["ssl.key.pem"] == PEM
    # A new value replaces it; a removed key is dropped.
    changed = {**shown, "sasl.password": "new-one-123"}
    del changed["ssl.key.pem"]
    assert client.post(url, _cluster_form(json.dumps(changed))).status_code == 302
    stored.refresh_from_db()
    assert stored.kafka_config["sasl.password"] == "new-one-123"
    assert "ssl.key.pem" not in stored.kafka_config


def test_admin_form_with_an_error_does_not_echo_a_typed_secret(world) -> None:
    client = as_role(Role.ADMIN)
    url = f"/admin/monitoring/cluster/{world['cluster'].pk}/change/"
    typed = {"sasl.password": KAFKA_PW, "security.protocol": "SASL_SSL"}
    response = client.post(url, _cluster_form(json.dumps(typed), poll="0"))  # invalid poll
    assert response.status_code == 200 and b"errornote" in response.content
    assert_no_secret(response.content, "the admin form sent back with errors")


# --- UI pages and the API -----------------------------------------------------------------------


def failing_delivery(world, monkeypatch) -> Delivery:
    """A delivery to the webhook whose failure quotes the URL (as a proxy's refusal does)."""

    def refuse(request, timeout=None):
        raise urllib.error.URLError(f"proxy refused CONNECT for {request.full_url}")

    monkeypatch.setattr("dashboard.alerts.transports.base.urllib.request.urlopen", refuse)
    delivery = Delivery.objects.create(
        alert=world["alert"], channel=world["channel"], channel_name="ops-hook", notice="firing"
    )
    attempt(delivery.pk)
    return Delivery.objects.get(pk=delivery.pk)


def test_failed_delivery_keeps_logs_and_shows_no_url(world, monkeypatch, settings, caplog,
                                                     capsys) -> None:  # fmt: skip
    settings.LAGWATCH_ALERTS_MAX_ATTEMPTS = 1  # final at once: the alert's history says so too
    with caplog.at_level(logging.INFO):
        delivery = failing_delivery(world, monkeypatch)
    assert delivery.state == "failed" and "proxy refused" in delivery.last_error
    assert_no_secret(delivery.last_error, "Delivery.last_error")
    assert_no_secret(str(list(delivery.attempt_log.values())), "DeliveryAttempt.error")
    assert_no_secret(str(list(world["alert"].events.values())), "AlertEvent.message")
    records = [r for r in caplog.records if r.name == "dashboard.alerts.delivery"]
    assert records, "a failed delivery is logged"
    assert_no_secret(repr([vars(r) for r in records]), "the delivery log record")
    assert "hooks.example.com" in records[0].target  # the masked URL says where
    assert_no_secret(capsys.readouterr().err, "stderr (the JSON log)")
    out = io.StringIO()
    call_command("alerts_config", "alerts", "--json", stdout=out)
    assert_no_secret(out.getvalue(), "alerts_config alerts --json")


@pytest.mark.parametrize("role", list(Role))
def test_pages_and_api_never_show_a_secret(world, monkeypatch, role: Role) -> None:
    failing_delivery(world, monkeypatch)
    client = as_role(role)
    pages = ["/", "/groups/", "/sources/", "/jobs/", "/alerts/", f"/alerts/{world['alert'].pk}/",
             "/alerts/rules/", "/alerts/channels/", "/alerts/silences/", "/reports/",
             "/api/v1/", "/api/v1/clusters/", "/api/v1/clusters/prod-eu/", "/api/v1/alerts/",
             f"/api/v1/alerts/{world['alert'].pk}/", "/api/v1/openapi.json", "/v3/kafka",
             "/metrics"]  # fmt: skip
    if role is Role.ADMIN:  # the edit forms
        pages.extend(f"/alerts/channels/{pk}/" for pk in Channel.objects.values_list("pk", flat=True))
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        body = b"".join(response.streaming_content) if response.streaming else response.content
        assert_no_secret(body, url)


def test_channels_page_shows_the_masked_url(world) -> None:
    body = as_role(Role.VIEWER).get("/alerts/channels/").content.decode()
    assert "https://hooks.example.com/…7e6f" in body
    assert "region eu, routing_key …0f1e" in body and "region us, api_key …cccc" in body
    assert "https://prod-00.westeurope.logic.azure.com/…1c0d" in body


def test_a_channel_key_is_redacted_from_a_delivery_error(world, monkeypatch) -> None:
    """A service that quotes the key back (a proxy's refusal) does not put it on the page."""

    def refuse(request, timeout=None):
        raise urllib.error.URLError(f"refused {request.data.decode()}")

    monkeypatch.setattr("dashboard.alerts.transports.base.urllib.request.urlopen", refuse)
    delivery = Delivery.objects.create(
        alert=world["alert"], channel=Channel.objects.get(name="pd-oncall"),
        channel_name="pd-oncall", notice="firing",
    )  # fmt: skip
    attempt(delivery.pk)
    delivery.refresh_from_db()
    assert "refused" in delivery.last_error and MASK in delivery.last_error
    assert_no_secret(delivery.last_error, "Delivery.last_error")


# --- exports and imports ------------------------------------------------------------------------


def run(*args: str, stdin: str | None = None) -> str:
    out = io.StringIO()
    if stdin is not None:
        sys_stdin, sys.stdin = sys.stdin, io.StringIO(stdin)
    try:
        call_command(*args, stdout=out)
    finally:
        if stdin is not None:
            sys.stdin = sys_stdin
    return out.getvalue()


def test_cluster_export_writes_env_references_or_omits(world) -> None:
    text = run("lagwatch_config", "export")
    assert_no_secret(text, "lagwatch_config export")
    config = yaml.safe_load(text)["clusters"][0]["kafka"]["config"]
    assert config["sasl.password"] == {"env": "LAGWATCH_KAFKA_PROD_EU_SASL_PASSWORD"}
    assert config["sasl.oauthbearer.client.secret"] == {
        "env": "LAGWATCH_KAFKA_PROD_EU_SASL_OAUTHBEARER_CLIENT_SECRET"
    }
    assert config["sasl.username"] == "lagwatch"
    omitted = run("lagwatch_config", "export", "--secrets", "omit")
    assert_no_secret(omitted, "lagwatch_config export --secrets omit")
    config = yaml.safe_load(omitted)["clusters"][0]["kafka"]["config"]
    assert not any(is_secret_key(k) for k in config) and config["sasl.username"] == "lagwatch"


def test_cluster_import_resolves_env_references(world, monkeypatch, tmp_path) -> None:
    exported = run("lagwatch_config", "export")
    monkeypatch.setenv("LAGWATCH_KAFKA_PROD_EU_SASL_PASSWORD", "from-the-env-1")
    monkeypatch.setenv("LAGWATCH_KAFKA_PROD_EU_SASL_OAUTHBEARER_CLIENT_SECRET", OAUTH)
    monkeypatch.setenv("LAGWATCH_KAFKA_PROD_EU_SSL_KEY_PEM", PEM)
    path = tmp_path / "c.yaml"
    path.write_text(exported)
    assert "updated: prod-eu" in run("lagwatch_config", "import", str(path))
    stored = Cluster.objects.get(name="prod-eu").kafka_config
    assert stored["sasl.password"] == "from-the-env-1" and stored["ssl.key.pem"] == PEM


def test_cluster_import_refuses_an_unset_variable_and_changes_nothing(world, tmp_path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(run("lagwatch_config", "export"))
    before = Cluster.objects.get(name="prod-eu").kafka_config
    with pytest.raises(CommandError) as info:
        run("lagwatch_config", "import", str(path))
    assert "environment variable LAGWATCH_KAFKA_PROD_EU_" in str(info.value)
    assert "is not set" in str(info.value) and "nothing was changed" in str(info.value)
    assert Cluster.objects.get(name="prod-eu").kafka_config == before


def test_cluster_import_keeps_a_secret_the_file_leaves_out(world, tmp_path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(run("lagwatch_config", "export", "--secrets", "omit").replace(
        "poll_interval_s: 10", "poll_interval_s: 15"))  # fmt: skip
    assert "updated: prod-eu" in run("lagwatch_config", "import", str(path))
    cluster = Cluster.objects.get(name="prod-eu")
    assert cluster.poll_interval_s == 15
    assert cluster.kafka_config["sasl.password"] == KAFKA_PW
    assert cluster.kafka_config["ssl.key.pem"] == PEM
    # Imported again: nothing to change (the kept secrets are not a difference).
    assert "unchanged: prod-eu" in run("lagwatch_config", "import", str(path))


def test_cluster_import_null_removes_a_stored_secret(world) -> None:
    doc = yaml.safe_load(run("lagwatch_config", "export", "--secrets", "omit"))
    doc["clusters"][0]["kafka"]["config"]["ssl.key.pem"] = None
    run("lagwatch_config", "import", "-", stdin=yaml.safe_dump(doc))
    stored = Cluster.objects.get(name="prod-eu").kafka_config
    assert "ssl.key.pem" not in stored and stored["sasl.password"] == KAFKA_PW


def test_parse_errors_never_quote_a_secret_value() -> None:
    text = "clusters:\n  - name: a\n    kafka:\n      bootstrap_servers: k\n" \
           f"      config: {{sasl.password: [{KAFKA_PW}]}}\n"  # fmt: skip
    with pytest.raises(ValueError) as info:
        parse_config(text, environ={})
    assert_no_secret(str(info.value), "the parse error")
    assert repr(parse_config(
        "clusters:\n  - name: a\n    kafka:\n      bootstrap_servers: k\n"
        "      config: {sasl.password: {env: PW}}\n", environ={"PW": KAFKA_PW})[0]
    ).count(MASK) == 1  # fmt: skip


def test_alerts_export_writes_env_references_and_import_keeps_the_url(world, monkeypatch
                                                                      ) -> None:  # fmt: skip
    text = run("alerts_config", "export")
    assert_no_secret(text, "alerts_config export")
    hook = yaml.safe_load(text)["channels"][0]
    assert hook["url"] == {"env": "LAGWATCH_CHANNEL_OPS_HOOK_URL"}
    omitted = run("alerts_config", "export", "--secrets", "omit")
    assert_no_secret(omitted, "alerts_config export --secrets omit")
    # Left out: the stored URL stays; a reference: read from the environment.
    run("alerts_config", "import", "-", stdin=omitted)
    assert Channel.objects.get(name="ops-hook").url == HOOK_URL
    with pytest.raises(CommandError, match="LAGWATCH_CHANNEL_OPS_HOOK_URL is not set"):
        run("alerts_config", "import", "-", stdin=text)
    assert Channel.objects.get(name="ops-hook").url == HOOK_URL
    monkeypatch.setenv("LAGWATCH_CHANNEL_OPS_HOOK_URL", "https://hooks.example.com/new/abcd")
    with pytest.raises(CommandError, match="routing_key: environment variable "
                       "LAGWATCH_CHANNEL_PD_ONCALL_ROUTING_KEY is not set"):  # fmt: skip
        run("alerts_config", "import", "-", stdin=text)
    monkeypatch.setenv("LAGWATCH_CHANNEL_PD_ONCALL_ROUTING_KEY", "pd-new-key-0123456789")
    monkeypatch.setenv("LAGWATCH_CHANNEL_RESPONDERS_API_KEY", GENIE_KEY)
    monkeypatch.setenv("LAGWATCH_CHANNEL_TEAMS_OPS_URL", TEAMS_URL)
    run("alerts_config", "import", "-", stdin=text)
    assert Channel.objects.get(name="ops-hook").url == "https://hooks.example.com/new/abcd"
    pd = Channel.objects.get(name="pd-oncall")
    assert (pd.secret, pd.region) == ("pd-new-key-0123456789", "eu")
    exported = {c["name"]: c for c in yaml.safe_load(text)["channels"]}
    assert exported["pd-oncall"]["routing_key"] == {"env": "LAGWATCH_CHANNEL_PD_ONCALL_ROUTING_KEY"}
    assert exported["pd-oncall"]["routing_key_masked"] == "…0f1e"
    assert exported["responders"]["api_key"] == {"env": "LAGWATCH_CHANNEL_RESPONDERS_API_KEY"}
    assert "api_key" not in yaml.safe_load(omitted)["channels"][2]


# --- logs and error reports ---------------------------------------------------------------------


def test_the_log_filter_masks_secret_settings(capsys) -> None:
    log = logging.getLogger("dashboard.test")
    log.warning("client config %s", {"sasl.password": KAFKA_PW, "bootstrap": "k"})
    log.warning("settings", extra={"config": {"ssl.key.pem": PEM}, "url": f"x?password={SMTP_PW}"})
    err = capsys.readouterr().err
    assert "client config" in err and MASK in err
    assert_no_secret(err, "stderr (the JSON log)")


def test_a_500_error_report_shows_no_secret(world, monkeypatch, settings, capsys) -> None:
    """The channel test button crashing inside the transport, with the URL in its locals, in
    the POST, and in the exception's message: the DEBUG page (what mails to ADMINS hold) and
    the error log line."""

    def crash(request, timeout=None):
        raise RuntimeError(f"unexpected failure for {request.full_url}")

    monkeypatch.setattr("dashboard.alerts.transports.base.urllib.request.urlopen", crash)
    settings.DEBUG = True
    client = Client(raise_request_exception=False)
    client.force_login(user_with_role("root", Role.ADMIN))
    channel = world["channel"]
    response = client.post(f"/alerts/channels/{channel.pk}/test/",
                           {"url": HOOK_URL, "sasl.password": KAFKA_PW})  # fmt: skip
    assert response.status_code == 500
    page = response.content.decode()
    assert "RuntimeError" in page and "unexpected failure for" in page  # it is the report
    assert_no_secret(page, "the DEBUG 500 page")
    err = capsys.readouterr().err
    # The error is logged (through the root's redacting handler, to today's stderr: Django's
    # own DEBUG console handler wrote it unredacted to the stderr of configuration time).
    assert "Internal Server Error" in err and "unexpected failure for" in err
    assert_no_secret(err, "the error log line")
    settings.DEBUG = False
    response = client.post(f"/alerts/channels/{channel.pk}/test/")
    assert response.status_code == 500
    assert_no_secret(response.content, "the production 500 page")


def test_error_reports_hide_secret_settings(settings) -> None:
    from django.views.debug import get_default_exception_reporter_filter

    settings.REDIS_URL = "redis://:redisPw-1a2b3c4d@redis:6379/0"
    settings.EMAIL_HOST_PASSWORD = SMTP_PW
    shown = json.dumps(get_default_exception_reporter_filter().get_safe_settings(), default=str)
    assert "redisPw-1a2b3c4d" not in shown and SMTP_PW not in shown


def test_a_record_that_cannot_be_written_is_reported_without_its_content(capsys) -> None:
    """logging's own report of a failed record prints its message, arguments and the
    traceback being logged (whose message may quote a secret): one line names it instead."""
    import logging

    from dashboard.logging import StderrHandler

    class Broken(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            raise ValueError("formatter broke")

    handler = StderrHandler()
    handler.setFormatter(Broken())
    log = logging.getLogger("lagwatch.test.broken")
    log.addHandler(handler)
    log.propagate = False
    try:
        try:
            raise RuntimeError(f"unexpected failure for {HOOK_URL}")
        except RuntimeError:
            log.exception("delivery to %s failed", HOOK_URL)
    finally:
        log.removeHandler(handler)
        log.propagate = True
    err = capsys.readouterr().err
    assert "could not be written (ValueError)" in err
    assert_no_secret(err, "logging's error report")


@pytest.mark.parametrize("name", ["", "django", "django.request", "django.security", "celery"])
def test_every_console_handler_on_the_error_path_redacts(name: str) -> None:
    """Django's default "django" logger prints a 500's traceback to the console in DEBUG,
    unredacted; the settings route those records to the root's redacting handler only."""
    import logging

    from dashboard.logging import RedactSecretsFilter

    logger = logging.getLogger(name)
    while logger is not None:
        for handler in logger.handlers:
            if type(handler).__module__.startswith("_pytest"):
                continue  # pytest's own capture, not the product's configuration
            if isinstance(handler, logging.StreamHandler):
                assert any(isinstance(f, RedactSecretsFilter) for f in handler.filters), (
                    f"{handler!r} on logger {logger.name!r} writes without redacting"
                )
        logger = logger.parent if logger.propagate else None
