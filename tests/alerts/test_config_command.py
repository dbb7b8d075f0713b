"""``manage.py alerts_config``: import (validated, all or nothing, exit code 2), export
(secrets masked), alerts listing, evaluate."""

import io
import json

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from dashboard.alerts.models import Channel, Rule, Silence

pytestmark = pytest.mark.django_db

GOOD = """
channels:
  - {name: lab-hook, kind: webhook, url: "http://127.0.0.1:9/hooks/SECRET123"}
  - {name: lab-mail, kind: email, recipients: [ops@example.com, b@example.com],
     smtp_host: 127.0.0.1, smtp_port: 2525, send_resolved: false}
rules:
  - name: orders-spout stuck
    group_pattern: orders-spout
    statuses: [STALL, STOP, ERR]
    min_evaluations: 2
    severity: critical
    channels: [lab-hook, lab-mail]
  - name: Stuck partition (default)
    statuses: [STALL, STOP, ERR]
    enabled: false
silences:
  - {group_pattern: "payments-*", hours: 2, reason: planned}
"""


def run(*args, stdin=None):
    out = io.StringIO()
    if stdin is not None:
        import sys

        old, sys.stdin = sys.stdin, io.StringIO(stdin)
        try:
            call_command("alerts_config", *args, stdout=out)
        finally:
            sys.stdin = old
    else:
        call_command("alerts_config", *args, stdout=out)
    return out.getvalue()


def test_import_creates_and_updates_by_name(tmp_path):
    path = tmp_path / "alerts.yaml"
    path.write_text(GOOD)
    out = run("import", str(path))
    assert "created: channel lab-hook, channel lab-mail, rule orders-spout stuck" in out
    assert "updated: rule Stuck partition (default)" in out
    rule = Rule.objects.get(name="orders-spout stuck")
    assert (rule.group_pattern, rule.severity, rule.min_evaluations) == (
        "orders-spout",
        "critical",
        2,
    )
    assert sorted(c.name for c in rule.channels.all()) == ["lab-hook", "lab-mail"]
    assert not Rule.objects.get(name="Stuck partition (default)").enabled
    mail = Channel.objects.get(name="lab-mail")
    assert (mail.recipient_list(), mail.smtp_port, mail.send_resolved) == (
        ["ops@example.com", "b@example.com"], 2525, False,
    )  # fmt: skip
    assert Silence.objects.get().group_pattern == "payments-*"
    run("import", "-", stdin=GOOD)  # again, from stdin: updated, not duplicated
    assert Rule.objects.count() == 2 and Channel.objects.count() == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rules: [{name: x}]", "rules[0] (x): entry: Choose at least one status or diagnosis"),
        ("rules: [{name: x, statuses: [BOGUS]}]", "rules[0] (x): statuses:"),
        ("rules: [{name: x, statuses: [STOP], channels: [nope]}]", "channels: unknown nope"),
        ("rules: [{name: x, statuses: [STOP], min_evaluations: zero}]", "min_evaluations:"),
        (
            "channels: [{name: h, kind: webhook}]",
            "channels[0] (h): url: This kind of channel needs a URL",
        ),
        ("channels: [{name: h, kind: carrier-pigeon}]", "kind:"),
        ("channels: [{name: m, kind: email, recipients: [not-an-address]}]", "Not an email"),
        (
            "channels: [{name: p, kind: pagerduty}]",
            "channels[0] (p): secret: This kind of channel needs its key",
        ),
        (
            "channels: [{name: p, kind: pagerduty, api_key: k}]",
            "channels[0] (p): api_key: not a field of a channel of kind pagerduty",
        ),
        (
            "channels: [{name: o, kind: opsgenie, routing_key: k}]",
            "routing_key: not a field of a channel of kind opsgenie",
        ),
        (
            "channels: [{name: o, kind: opsgenie, secret: k}]",
            "secret: write routing_key (pagerduty) or api_key (opsgenie)",
        ),
        (
            "channels: [{name: o, kind: opsgenie, api_key: 'two words'}]",
            "secret: A key is one word",
        ),
        (
            "channels: [{name: o, kind: opsgenie, api_key: k, region: mars}]",
            "region: Select a valid choice",
        ),
        (
            "channels: [{name: t, kind: teams, url: 'ftp://x'}]",
            "url: Enter an http:// or https:// URL",
        ),
        (
            "channels: [{name: a, kind: alertmanager}]",
            "channels[0] (a): url: This kind of channel needs a URL",
        ),
        ("silences: [{group_pattern: x}]", "silences[0]: until: Give a duration"),
        ("silences: [{hours: 1, rule: nope}]", "rule: unknown nope"),
        ("bogus: []", "unknown section(s): bogus"),
        ("- a list", "must be a mapping"),
        ("rules: {name: x}", "rules: a list of mappings expected"),
        ("rules: [ {", "not valid YAML"),
    ],
)
def test_bad_input_exits_2_and_changes_nothing(text, message):
    before = (Rule.objects.count(), Channel.objects.count(), Silence.objects.count())
    full = "channels: [{name: ok, kind: webhook, url: 'http://x.example/h'}]\n" + text
    for doc in (text, full) if text.startswith(("rules:", "silences:")) else (text,):
        with pytest.raises(CommandError) as info:
            run("import", "-", stdin=doc)
        assert info.value.returncode == 2
        assert message in str(info.value) and "nothing was changed" in str(info.value)
    assert (Rule.objects.count(), Channel.objects.count(), Silence.objects.count()) == before


def test_unreadable_file_exits_2(tmp_path):
    with pytest.raises(CommandError) as info:
        run("import", str(tmp_path / "missing.yaml"))
    assert info.value.returncode == 2 and "cannot read" in str(info.value)


def test_export_masks_urls_and_round_trips_rules():
    run("import", "-", stdin=GOOD)
    text = run("export")
    assert "SECRET123" not in text
    doc = yaml.safe_load(text)
    hook = next(c for c in doc["channels"] if c["name"] == "lab-hook")
    assert hook["url_masked"] == "http://127.0.0.1:9/…T123"
    assert hook["url"] == {"env": "LAGWATCH_CHANNEL_LAB_HOOK_URL"}
    omitted = yaml.safe_load(run("export", "--secrets", "omit"))
    assert "url" not in next(c for c in omitted["channels"] if c["name"] == "lab-hook")
    Rule.objects.all().delete()
    run("import", "-", stdin=yaml.safe_dump({"rules": doc["rules"]}))
    assert Rule.objects.get(name="orders-spout stuck").channels.count() == 2


def test_alerts_listing_and_evaluate(mworld):
    mworld.set("g", "t", 0, "STOP")
    assert json.loads(run("evaluate"))["pending"] == 1
    mworld.apply()
    mworld.apply()
    doc = json.loads(run("alerts", "--json", "--state", "open"))
    (alert,) = doc["alerts"]
    assert alert["group"] == "g" and alert["silenced"] is False
    assert [e["kind"] for e in alert["events"]] == ["fired"]
    assert "firing" in run("alerts")


SRE = """
channels:
  - {name: am, kind: alertmanager, url: "http://alertmanager:9093"}
  - {name: pd, kind: pagerduty, routing_key: R0123456789abcdef0123456789abcd, region: eu}
  - {name: og, kind: opsgenie, api_key: 11111111-2222-3333-4444-555555555555}
  - {name: teams, kind: teams, url: "https://x.logic.azure.com/workflows/1/invoke?sig=abcdef123"}
"""


def test_import_and_export_the_sre_channels():
    run("import", "-", stdin=SRE)
    pd, og = Channel.objects.get(name="pd"), Channel.objects.get(name="og")
    assert (pd.kind, pd.secret, pd.region, pd.url) == (
        "pagerduty", "R0123456789abcdef0123456789abcd", "eu", "",
    )  # fmt: skip
    assert (og.secret, og.region) == ("11111111-2222-3333-4444-555555555555", "us")
    exported = {c["name"]: c for c in yaml.safe_load(run("export"))["channels"]}
    assert exported["am"]["url"] == {"env": "LAGWATCH_CHANNEL_AM_URL"}
    assert exported["pd"]["routing_key"] == {"env": "LAGWATCH_CHANNEL_PD_ROUTING_KEY"}
    assert (exported["pd"]["routing_key_masked"], exported["pd"]["region"]) == ("…abcd", "eu")
    assert exported["og"]["api_key"] == {"env": "LAGWATCH_CHANNEL_OG_API_KEY"}
    assert "url" not in exported["pd"] and "api_key" not in exported["pd"]
    # Edited without the key: the stored one stays.
    run("import", "-", stdin="channels: [{name: pd, kind: pagerduty, region: us}]")
    pd.refresh_from_db()
    assert (pd.secret, pd.region) == ("R0123456789abcdef0123456789abcd", "us")
