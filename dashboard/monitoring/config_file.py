"""The clusters YAML file (SPEC §2.4): parsed and validated before anything is written.

Pure: no Django. A bad file raises ``ConfigError`` naming the key path and the line, so a
user fixes it in one go; the command applies a file only once all of it is valid.

Secret librdkafka settings (``dashboard.secrecy.is_secret_key``: ``sasl.password``…) are never
written out: an export writes ``{env: LAGWATCH_KAFKA_<CLUSTER>_<KEY>}`` in their place (or
leaves them out), and an import reads such a reference from the environment. A secret the
file leaves out is kept as stored (``cluster_config.apply_config``); ``null`` removes it.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

import yaml

from dashboard.secrecy import env_ref, env_var_name, is_env_ref, is_secret_key, mask_config
from spark_jobs.evaluator.types import WindowInputError
from spark_jobs.evaluator.window_document import parse_config as parse_evaluator_config

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
# The columns' lengths (``Cluster``): PostgreSQL refuses a longer value, so the file does too.
MAX_HOSTS = 1000  # kafka.bootstrap_servers, zookeeper.hosts
MAX_URL = 200  # storm_ui_url, each of broker_metrics_urls
MAX_BROKER_METRICS_URLS = 100


def metrics_url_problem(value: object) -> str | None:
    """Why ``value`` is not a broker metrics URL (None: it is one). Shared by the file and
    the model's validator, so the admin and an import refuse the same things."""
    if not isinstance(value, str) or not value.strip():
        return "expected a non-empty string"
    url = value.strip()
    if len(url) > MAX_URL:
        return f"at most {MAX_URL} characters"
    split = urlsplit(url)
    if split.scheme not in ("http", "https"):
        return "expected an http:// or https:// URL"
    try:
        host = split.hostname
        split.port  # noqa: B018 - raises on a port that is not a number or out of range
    except ValueError as exc:
        return f"not a valid URL: {exc}"
    if not host:
        return "the URL names no host"
    if any(c.isspace() for c in url):
        return "a URL has no spaces"
    return None


class ConfigError(ValueError):
    def __init__(self, where: str, line: int | None, message: str) -> None:
        # Keys come from the file: one that is not valid Unicode is shown escaped, so the
        # message can be printed.
        where = where.encode("utf-8", "backslashreplace").decode("utf-8")
        self.where, self.line = where, line
        at = f" (line {line})" if line else ""
        super().__init__(f"{where}: {message}{at}")


SecretsMode = Literal["env", "omit"]


@dataclass(frozen=True, repr=False)
class ClusterConfig:
    name: str
    poll_interval_s: int = 10
    kafka_bootstrap_servers: str = ""
    kafka_config: dict[str, Any] = field(default_factory=dict)
    read_consumer_offsets_topic: bool = True
    zk_hosts: str = ""
    storm_spout_roots: list[str] = field(default_factory=list)
    zk_consumers: bool = False
    storm_ui_url: str | None = None
    # The brokers' Prometheus JMX exporter endpoints (purgatory figures, DOMAIN §5).
    broker_metrics_urls: list[str] = field(default_factory=list)
    # RETENTION_RISK below this many seconds before retention deletes unread messages; 0: off.
    retention_risk_s: int = 3600
    # The evaluator's thresholds this cluster sets itself (SPEC §2.4, §4), over the
    # deployment's ``LAGWATCH_EVALUATOR``: allowed_lag, window, minimum_complete, ...
    evaluator: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:  # a log line or an error report never prints a password
        fields = {**asdict(self), "kafka_config": mask_config(self.kafka_config)}
        return f"ClusterConfig({', '.join(f'{k}={v!r}' for k, v in fields.items())})"

    def file_kafka_config(self, secrets: SecretsMode = "env") -> dict[str, Any]:
        """The librdkafka settings as the file holds them: a secret as a reference to the
        environment variable an import reads (``env``), or left out (``omit``)."""
        out: dict[str, Any] = {}
        for key, value in self.kafka_config.items():
            if value is None:
                continue
            if not is_secret_key(key):
                out[key] = value
            elif secrets == "env":
                out[key] = env_ref(env_var_name("kafka", self.name, key))
        return out

    def as_file_entry(self, secrets: SecretsMode = "env") -> dict[str, Any]:
        """The cluster in the file's nested shape (export is the inverse of import, secrets
        aside: see ``file_kafka_config``)."""
        entry: dict[str, Any] = {"name": self.name, "poll_interval_s": self.poll_interval_s}
        if self.kafka_bootstrap_servers:
            entry["kafka"] = {
                "bootstrap_servers": self.kafka_bootstrap_servers,
                "config": self.file_kafka_config(secrets),
                "read_consumer_offsets_topic": self.read_consumer_offsets_topic,
            }
        if self.zk_hosts:
            entry["zookeeper"] = {
                "hosts": self.zk_hosts,
                "storm_spout_roots": list(self.storm_spout_roots),
                "zk_consumers": self.zk_consumers,
            }
        entry["storm_ui_url"] = self.storm_ui_url
        if self.broker_metrics_urls:
            entry["broker_metrics_urls"] = list(self.broker_metrics_urls)
        entry["retention_risk_s"] = self.retention_risk_s
        if self.evaluator:
            entry["evaluator"] = dict(self.evaluator)
        return entry

    def as_fields(self) -> dict[str, Any]:
        return asdict(self)


def evaluator_problem(overrides: object) -> str | None:
    """What is wrong with a cluster's evaluator thresholds, or None: the same checks as the
    ``config`` object of an ``evaluate_window`` document (one definition of a valid
    threshold)."""
    if overrides is None or overrides == {}:
        return None
    try:
        parse_evaluator_config(overrides, "evaluator")
    except WindowInputError as exc:
        return str(exc)
    return None


def _line(node: yaml.Node | None) -> int | None:
    return node.start_mark.line + 1 if node is not None else None


class _Reader:
    """Walks the composed YAML tree, so every value keeps the line it came from."""

    def __init__(self, node: yaml.Node, where: str) -> None:
        self.node, self.where = node, where

    def fail(self, message: str) -> ConfigError:
        return ConfigError(self.where, _line(self.node), message)

    def mapping(self, allowed: set[str]) -> dict[str, _Reader]:
        if not isinstance(self.node, yaml.MappingNode):
            raise self.fail("expected a mapping")
        out: dict[str, _Reader] = {}
        for key_node, value_node in self.node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise ConfigError(self.where or "file", _line(key_node), "a key must be a name")
            key = key_node.value
            where = f"{self.where}.{key}" if self.where else key
            if key not in allowed:
                known = ", ".join(sorted(allowed))
                raise ConfigError(where, _line(key_node), f"unknown key (expected one of {known})")
            if key in out:
                raise ConfigError(where, _line(key_node), "duplicate key")
            out[key] = _Reader(value_node, where)
        return out

    def sequence(self) -> list[_Reader]:
        if not isinstance(self.node, yaml.SequenceNode):
            raise self.fail("expected a list")
        return [_Reader(n, f"{self.where}[{i}]") for i, n in enumerate(self.node.value)]

    def _scalar(self) -> Any:
        if not isinstance(self.node, yaml.ScalarNode):
            raise self.fail("expected a single value")
        return self.plain()

    def string(self, *, optional: bool = False, max_length: int | None = None) -> str | None:
        value = self._scalar()
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail("expected a non-empty string")
        if max_length is not None and len(value.strip()) > max_length:
            raise self.fail(f"at most {max_length} characters")
        return value.strip()

    def integer(self, low: int, high: int) -> int:
        value = self._scalar()
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail("expected an integer")
        if not low <= value <= high:
            raise self.fail(f"must be between {low} and {high}")
        return value

    def boolean(self) -> bool:
        value = self._scalar()
        if not isinstance(value, bool):
            raise self.fail("expected true or false")
        return value

    def plain(self) -> Any:
        """The node as plain data. A tag the safe loader does not construct (``!!python/...``,
        ``!foo``) or a string that is not valid Unicode (a ``"\\ud800"`` escape, which no
        database stores) is this key's error, not the whole file's traceback."""
        try:
            value = yaml.safe_load(yaml.serialize(self.node))
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise self.fail(f"unsupported value: {problem}") from None
        if not _valid_unicode(value):
            raise self.fail("not valid Unicode (a lone surrogate escape such as \\ud800)")
        return value


def _valid_unicode(value: Any) -> bool:
    """No string (or key) in ``value`` holds a lone surrogate. Iterative, each container once:
    YAML aliases make shared and even self-containing structures."""
    stack, seen = [value], set()
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return False
        elif isinstance(item, dict | list | tuple | set) and id(item) not in seen:
            seen.add(id(item))
            stack.extend(item.items() if isinstance(item, dict) else item)
    return True


def _librdkafka_value(value: Any) -> bool:
    """librdkafka settings are strings, numbers and booleans (NaN and infinities are not
    numbers a setting takes, nor JSON the column stores)."""
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, str | int | bool)


def parse_config(text: str, environ: Mapping[str, str] | None = None) -> list[ClusterConfig]:
    """Parse and validate the whole file; raise ConfigError at the first problem. ``{env:
    NAME}`` values are read from ``environ`` (default: this process's environment)."""
    environ = os.environ if environ is None else environ
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError("file", line, f"not valid YAML: {problem}") from None
    if root is None:
        raise ConfigError("file", None, "empty file (expected a 'clusters' list)")
    top = _Reader(root, "").mapping({"clusters"})
    if "clusters" not in top:
        raise ConfigError("clusters", _line(root), "missing")
    clusters = [_cluster(item, environ) for item in top["clusters"].sequence()]
    seen: set[str] = set()
    for reader, cluster in zip(top["clusters"].sequence(), clusters, strict=True):
        if cluster.name in seen:
            raise ConfigError(f"{reader.where}.name", _line(reader.node), "duplicate cluster name")
        seen.add(cluster.name)
    return clusters


def _setting(where: str, line: int | None, key: str, value: Any, environ: Mapping[str, str]) -> Any:
    """One librdkafka setting's value: a plain value, a secret's ``{env: NAME}`` read from the
    environment, or a secret's ``null`` (remove the stored one). Messages never quote a value."""
    if is_secret_key(key) and value is None:
        return None
    if is_env_ref(value):
        name = value["env"]
        if name not in environ:
            raise ConfigError(where, line, f"environment variable {name} is not set")
        return environ[name]
    if isinstance(value, dict) and "env" in value:
        raise ConfigError(where, line, "{env: NAME}: NAME is an environment variable name")
    if not _librdkafka_value(value):
        raise ConfigError(where, line, "a librdkafka setting is a string, a number or true/false")
    return value


def _cluster(reader: _Reader, environ: Mapping[str, str]) -> ClusterConfig:
    keys = reader.mapping(
        {
            "name",
            "poll_interval_s",
            "kafka",
            "zookeeper",
            "storm_ui_url",
            "broker_metrics_urls",
            "retention_risk_s",
            "evaluator",
        }
    )
    if "name" not in keys:
        raise reader.fail("missing 'name'")
    name = keys["name"].string()
    if not NAME_RE.match(name):
        raise keys["name"].fail("use letters, digits, '.', '_' or '-' (at most 100)")
    fields: dict[str, Any] = {"name": name}
    if "poll_interval_s" in keys:
        fields["poll_interval_s"] = keys["poll_interval_s"].integer(1, 86400)
    if "kafka" in keys:
        kafka = keys["kafka"].mapping(
            {"bootstrap_servers", "config", "read_consumer_offsets_topic"}
        )
        if "bootstrap_servers" not in kafka:
            raise keys["kafka"].fail("missing 'bootstrap_servers'")
        fields["kafka_bootstrap_servers"] = kafka["bootstrap_servers"].string(max_length=MAX_HOSTS)
        if "config" in kafka:
            config = kafka["config"].plain() or {}
            if not isinstance(config, dict) or not all(isinstance(k, str) for k in config):
                raise kafka["config"].fail("expected a mapping of librdkafka settings")
            line = _line(kafka["config"].node)
            fields["kafka_config"] = {
                key: _setting(f"{kafka['config'].where}.{key}", line, key, value, environ)
                for key, value in config.items()
            }
        if "read_consumer_offsets_topic" in kafka:
            fields["read_consumer_offsets_topic"] = kafka["read_consumer_offsets_topic"].boolean()
    if "zookeeper" in keys:
        zk = keys["zookeeper"].mapping({"hosts", "storm_spout_roots", "zk_consumers"})
        if "hosts" not in zk:
            raise keys["zookeeper"].fail("missing 'hosts'")
        fields["zk_hosts"] = zk["hosts"].string(max_length=MAX_HOSTS)
        if "storm_spout_roots" in zk:
            roots = [r.string() for r in zk["storm_spout_roots"].sequence()]
            for item, root in zip(zk["storm_spout_roots"].sequence(), roots, strict=True):
                if not root.startswith("/") or (len(root) > 1 and root.endswith("/")):
                    raise item.fail("a ZooKeeper path starts with '/' and has no trailing '/'")
            fields["storm_spout_roots"] = roots
        if "zk_consumers" in zk:
            fields["zk_consumers"] = zk["zk_consumers"].boolean()
    if "storm_ui_url" in keys:
        url = keys["storm_ui_url"].string(optional=True, max_length=MAX_URL)
        if url is not None and not url.startswith(("http://", "https://")):
            raise keys["storm_ui_url"].fail("expected an http:// or https:// URL")
        fields["storm_ui_url"] = url
    if "broker_metrics_urls" in keys:
        items = keys["broker_metrics_urls"].sequence()
        if len(items) > MAX_BROKER_METRICS_URLS:
            raise keys["broker_metrics_urls"].fail(f"at most {MAX_BROKER_METRICS_URLS} URLs")
        urls: list[str] = []
        for item in items:
            value = item.plain()
            if (problem := metrics_url_problem(value)) is not None:
                raise item.fail(problem)
            if value.strip() in urls:
                raise item.fail("listed twice")
            urls.append(value.strip())
        fields["broker_metrics_urls"] = urls
    if "retention_risk_s" in keys:
        fields["retention_risk_s"] = keys["retention_risk_s"].integer(0, 365 * 86400)
    if "evaluator" in keys:
        overrides = keys["evaluator"].plain()
        if (problem := evaluator_problem(overrides)) is not None:
            raise keys["evaluator"].fail(problem)
        fields["evaluator"] = dict(overrides or {})
    if "kafka" not in keys and "zookeeper" not in keys:
        raise reader.fail(f"cluster {name!r} has neither 'kafka' nor 'zookeeper'")
    return ClusterConfig(**fields)


def dump_config(clusters: list[ClusterConfig], secrets: SecretsMode = "env") -> str:
    return yaml.safe_dump(
        {"clusters": [c.as_file_entry(secrets) for c in clusters]},
        sort_keys=False,
        allow_unicode=True,
    )
