"""Alerts configuration as a YAML (or JSON) document, for scripts and provisioning:
``manage.py alerts_config import FILE``. Every entry goes through the same form as the UI, and
the whole file is applied in one transaction: one bad entry changes nothing.

    channels:
      - {name: ops-hook, kind: webhook, url: "https://…"}
      - {name: ops-mail, kind: email, recipients: [ops@example.com], smtp_host: relay}
      - {name: oncall, kind: pagerduty, routing_key: {env: PD_KEY}, region: eu}
    rules:
      - {name: orders stuck, group_pattern: "orders-*", statuses: [STALL, STOP, ERR],
         min_evaluations: 2, severity: critical, channels: [ops-hook, ops-mail]}
    silences:
      - {group_pattern: "batch-*", hours: 8, reason: nightly reload}

Channels and rules are matched by name (created or updated); silences are always added.

A channel URL is a secret (Slack's carry their token, a Teams workflow's its signature), and
so is a channel's key (PagerDuty's ``routing_key``, Opsgenie's ``api_key``): an export writes
``url: {env: LAGWATCH_CHANNEL_<NAME>_URL}`` (``routing_key: {env: …_ROUTING_KEY}``…), or
nothing (``secrets="omit"``), with a masked hint (``url_masked``, ``routing_key_masked``); an
import reads ``{env: NAME}`` from the environment, and a channel entry without the value keeps
the stored one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

import yaml
from django.db import transaction

from dashboard.alerts.forms import ChannelForm, RuleForm, SilenceForm
from dashboard.alerts.models import KEY_KINDS, KEY_NAMES, Channel, Rule, Silence
from dashboard.secrecy import env_ref, env_var_name, is_env_ref

SECTIONS = ("channels", "rules", "silences")
RULE_DEFAULTS = {
    "enabled": True, "cluster_pattern": "*", "group_pattern": "*", "topic_pattern": "*",
    "statuses": [], "diagnoses": [], "level": "partition", "min_evaluations": 2,
    "min_duration_s": 0, "severity": "warning", "notify_resolved": True, "channels": [],
}  # fmt: skip
CHANNEL_DEFAULTS = {"enabled": True, "send_resolved": True, "recipients": "", "url": "",
                    "secret": "", "region": ""}  # fmt: skip
SECRET_FIELDS = ("url", *KEY_NAMES.values())
SILENCE_DEFAULTS = {"cluster_pattern": "*", "group_pattern": "*", "topic_pattern": "*"}
CREATED_BY_MAX = Silence._meta.get_field("created_by").max_length


class AlertsConfigError(ValueError):
    pass


def parse(text: str) -> dict[str, list[dict[str, Any]]]:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise AlertsConfigError(f"not valid YAML: {exc}") from None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise AlertsConfigError("the document must be a mapping of channels, rules, silences")
    where = _not_unicode(doc)
    if where is not None:
        raise AlertsConfigError(
            f"{where}: not valid Unicode (a lone surrogate escape such as \\ud800)"
        )
    unknown = sorted(map(str, set(doc) - set(SECTIONS)))
    if unknown:
        raise AlertsConfigError(f"unknown section(s): {', '.join(map(str, unknown))}")
    out: dict[str, list[dict[str, Any]]] = {}
    for section in SECTIONS:
        entries = doc.get(section) or []
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise AlertsConfigError(f"{section}: a list of mappings expected")
        out[section] = entries
    return out


def _not_unicode(doc: Any) -> str | None:
    """The path of a string (or key) holding a lone surrogate, which no database stores (YAML
    reads one from a ``"\\ud800"`` escape), or None. Iterative, each container once: aliases
    make shared and self-containing structures."""
    stack: list[tuple[str, Any]] = [("", doc)]
    seen: set[int] = set()
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return path.encode("utf-8", "backslashreplace").decode() or "document"
        elif isinstance(value, dict | list) and id(value) not in seen:
            seen.add(id(value))
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                here = f"{path}[{key}]" if isinstance(value, list) else f"{path}.{key}".lstrip(".")
                stack.append((here, key))
                stack.append((here, item))
    return None


def _form_data(entry: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    data = {**defaults, **entry}
    for key, value in list(data.items()):
        if value is None:
            data[key] = ""
        elif isinstance(value, bool):
            data[key] = "on" if value else ""
        elif isinstance(value, int | float):
            # As a form posts it: text. A float field given a Python int beyond a double's
            # range raises OverflowError; given its text, it says "Enter a number."
            data[key] = str(value)
    return data


def _errors(where: str, form: Any) -> str:
    parts = []
    for field, errs in form.errors.items():
        label = "entry" if field == "__all__" else field
        parts.append(f"{label}: {' '.join(errs)}")
    return f"{where}: {'; '.join(parts)}"


def _env_values(where: str, entry: dict[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """The entry with each secret given as ``{env: NAME}`` read from the environment."""
    entry = dict(entry)
    for key in SECRET_FIELDS:
        value = entry.get(key)
        if not is_env_ref(value):
            continue
        if value["env"] not in environ:
            raise AlertsConfigError(
                f"{where}: {key}: environment variable {value['env']} is not set"
            )
        entry[key] = environ[value["env"]]
    return entry


def _channel_key(where: str, entry: dict[str, Any]) -> dict[str, Any]:
    """A PagerDuty ``routing_key`` or an Opsgenie ``api_key`` as the channel's ``secret``; the
    other kind's name, or the field's own, is refused (a key must not land on the wrong kind)."""
    entry = dict(entry)
    if "secret" in entry:
        raise AlertsConfigError(f"{where}: secret: write routing_key (pagerduty) or api_key "
                                "(opsgenie)")  # fmt: skip
    kind = entry.get("kind")
    if not isinstance(kind, str):  # a list or a mapping: the form's check names it below
        kind = None
    mine = KEY_NAMES.get(kind)  # type: ignore[arg-type]
    for name in KEY_NAMES.values():
        if name in entry and name != mine:
            raise AlertsConfigError(f"{where}: {name}: not a field of a channel of kind "
                                    f"{entry.get('kind')}")  # fmt: skip
    if mine and mine in entry:
        entry["secret"] = entry.pop(mine)
    return entry


def apply(
    config: dict[str, list[dict[str, Any]]],
    by: str = "alerts_config",
    environ: Mapping[str, str] | None = None,
) -> dict[str, list]:
    """Create/update everything or nothing; the names touched, per verb. ``{env: NAME}``
    values are read from ``environ`` (default: this process's environment)."""
    environ = os.environ if environ is None else environ
    done: dict[str, list] = {"created": [], "updated": [], "silences": []}
    with transaction.atomic():
        for i, entry in enumerate(config["channels"]):
            where = f"channels[{i}] ({entry.get('name', '?')})"
            entry = _channel_key(where, _env_values(where, entry, environ))
            data = _form_data(entry, CHANNEL_DEFAULTS)
            if isinstance(entry.get("recipients"), list):
                data["recipients"] = "\n".join(map(str, entry["recipients"]))
            instance = Channel.objects.filter(name=entry.get("name")).first()
            form = ChannelForm(data, instance=instance)
            if not form.is_valid():
                raise AlertsConfigError(_errors(where, form))
            form.save()
            done["updated" if instance else "created"].append(f"channel {form.instance.name}")
        for i, entry in enumerate(config["rules"]):
            where = f"rules[{i}] ({entry.get('name', '?')})"
            data = _form_data(entry, RULE_DEFAULTS)
            names = entry.get("channels") or []
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise AlertsConfigError(f"{where}: channels: a list of channel names expected")
            channels = {c.name: c.pk for c in Channel.objects.filter(name__in=names)}
            missing = [n for n in names if n not in channels]
            if missing:
                raise AlertsConfigError(
                    f"{where}: channels: unknown {', '.join(map(str, missing))}"
                )
            data["channels"] = [channels[n] for n in names]
            for key in ("min_lag", "min_time_lag_s"):
                data.setdefault(key, "")
            instance = Rule.objects.filter(name=entry.get("name")).first()
            form = RuleForm(data, instance=instance)
            if not form.is_valid():
                raise AlertsConfigError(_errors(where, form))
            form.save()
            done["updated" if instance else "created"].append(f"rule {form.instance.name}")
        for i, entry in enumerate(config["silences"]):
            data = _form_data(entry, SILENCE_DEFAULTS)
            rule_name = entry.get("rule")
            if rule_name:
                rule = Rule.objects.filter(name=rule_name).first()
                if rule is None:
                    raise AlertsConfigError(f"silences[{i}]: rule: unknown {rule_name}")
                data["rule"] = rule.pk
            form = SilenceForm(data)
            if not form.is_valid():
                raise AlertsConfigError(_errors(f"silences[{i}]", form))
            silence = form.save(commit=False)
            silence.created_by = str(entry.get("created_by") or by)
            if len(silence.created_by) > CREATED_BY_MAX:
                raise AlertsConfigError(
                    f"silences[{i}]: created_by: at most {CREATED_BY_MAX} characters"
                )
            silence.save()
            from dashboard.alerts.silencing import apply_to_open_alerts

            apply_to_open_alerts(silence)
            done["silences"].append(f"silence #{silence.pk}")
    return done


def _url_entry(channel: Channel, secrets: str) -> dict[str, Any]:
    if not channel.url:
        return {}
    from dashboard.alerts.masking import mask_url

    hint = {"url_masked": mask_url(channel.url)}
    if secrets == "omit":
        return hint
    return {"url": env_ref(env_var_name("channel", channel.name, "url")), **hint}


def _key_entry(channel: Channel, secrets: str) -> dict[str, Any]:
    """A PagerDuty or Opsgenie channel's key (as a reference, or left out) and region."""
    if channel.kind not in KEY_KINDS:
        return {}
    name = KEY_NAMES[channel.kind]
    found: dict[str, Any] = {"region": channel.region or "us"}
    if channel.secret:
        if secrets != "omit":
            found[name] = env_ref(env_var_name("channel", channel.name, name))
        found[f"{name}_masked"] = channel.masked_secret
    return found


def export(secrets: Literal["env", "omit"] = "env") -> dict[str, list[dict[str, Any]]]:
    """The configuration; an export never carries a secret: a channel's URL or key is a
    reference to an environment variable (``env``) or left out (``omit``), with its masked
    form."""
    channels = [
        {
            "name": c.name,
            "kind": c.kind,
            "enabled": c.enabled,
            **_url_entry(c, secrets),
            **_key_entry(c, secrets),
            **({"recipients": c.recipient_list()} if c.recipients else {}),
            **({"smtp_host": c.smtp_host} if c.smtp_host else {}),
            **({"smtp_port": c.smtp_port} if c.smtp_port else {}),
            "send_resolved": c.send_resolved,
        }  # fmt: skip
        for c in Channel.objects.all()
    ]
    rules = [
        {
            "name": r.name,
            "enabled": r.enabled,
            "cluster_pattern": r.cluster_pattern,
            "group_pattern": r.group_pattern,
            "topic_pattern": r.topic_pattern,
            "statuses": list(r.statuses),
            "diagnoses": list(r.diagnoses),
            "level": r.level,
            "min_evaluations": r.min_evaluations,
            "min_duration_s": r.min_duration_s,
            "min_lag": r.min_lag,
            "min_time_lag_s": r.min_time_lag_s,
            "severity": r.severity,
            "notify_resolved": r.notify_resolved,
            "channels": [c.name for c in r.channels.all()],
        }  # fmt: skip
        for r in Rule.objects.prefetch_related("channels")
    ]
    silences = [
        {
            "cluster_pattern": s.cluster_pattern,
            "group_pattern": s.group_pattern,
            "topic_pattern": s.topic_pattern,
            "until": s.until.isoformat(),
            "reason": s.reason,
            "created_by": s.created_by,
            **({"rule": s.rule.name} if s.rule else {}),
        }  # fmt: skip
        for s in Silence.objects.select_related("rule")
    ]
    return {"channels": channels, "rules": rules, "silences": silences}
