"""A secured Apache Kafka broker for the lab: TLS with a private CA, SASL and mTLS listeners,
and ACLs that give the monitor exactly what docs/SECURITY.md says it needs.

One KRaft broker (broker and controller in one process, as the lab's plain one) with:

* ``SASL_SSL`` (SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN) and ``SASL_PLAINTEXT`` (the same);
* ``MTLS``, an SSL listener with ``ssl.client.auth=required``: the client certificate's CN is
  the principal (``ssl.principal.mapping.rules``), so ``CN=lagwatch`` is ``User:lagwatch`` as
  over SASL, and one set of ACLs serves every listener;
* ``OAUTH`` (``SASL_SSL``, OAUTHBEARER): the broker validates JWTs against the lab's OIDC
  issuer's JWKS (lab/oidc_issuer.py, a service this one requires) with Kafka's
  ``OAuthBearerValidatorCallbackHandler``, expecting the audience ``kafka``; the token's
  ``sub``, the issuer's machine client ``lagwatch-kafka``, is the principal, granted the same
  ACLs. Kafka 4 fetches only URLs named in ``org.apache.kafka.sasl.oauthbearer.allowed.urls``
  (a system property): the JWKS URL is;
* ``PLAINTEXT`` for the controller and inter-broker traffic, and for the lab itself (topics,
  producers, consumers, the ACLs): its principal, ``User:ANONYMOUS``, is the broker's own and
  a super user. It listens on loopback only; a production broker would secure it too.

``StandardAuthorizer`` with no ACL means no access: the monitor's principal ``lagwatch`` is
granted Describe on the cluster, Describe and DescribeConfigs on topics and on groups, and
Read on ``__consumer_offsets`` and ``__share_group_state`` (``MONITOR_ACLS``, granted by
Kafka's own ``AclCommand``, the class ``kafka-acls.sh`` runs, with the very arguments
docs/SECURITY.md shows), nothing that writes. The plain lab broker's settings come along
(``services._KAFKA_SETTINGS``), the share coordinator's one-replica state topic among them,
so share groups (KIP-932) deliver here too. ``connections.max.reauth.ms`` is short
(``REAUTH_MS``), so every client re-authenticates (KIP-368) within a test.

The CA, the broker's certificate (SAN ``IP:127.0.0.1``) and the monitor's client
certificate are made with ``openssl`` at the first start of a stack, the keystore and
truststore as PKCS12 (``openssl pkcs12``, ``keytool``); SCRAM users are created when the
storage is formatted (``--add-scram``), PLAIN users in the listener's JAAS configuration.
Passwords are the run directory's secrets (``services.run_secret``). Optional: started only
when named (``python -m lab up --services kafka-secured``) or by the tests marked
``secured`` (``scripts/test-secured``).
"""

from __future__ import annotations

import base64
import secrets
import subprocess
from pathlib import Path
from typing import Any

from lab import oidc_issuer
from lab.ports import LOOPBACK
from lab.services import LOG4J2, Context, ServiceSpec, run_secret

__all__ = [
    "LISTENERS",
    "MONITOR",
    "MONITOR_ACLS",
    "OAUTH_MONITOR",
    "REAUTH_MS",
    "SHARE_STATE_TOPIC",
    "SECURED_SERVICES",
    "admin_bootstrap",
    "client_config",
]

NAME = "kafka-secured"
MONITOR = "lagwatch"  # the monitor's principal, as docs/SECURITY.md names it
OAUTH_MONITOR = "lagwatch-kafka"  # the issuer's machine client: the tokens' sub
# Listener name -> (security protocol, port name).
LISTENERS: dict[str, tuple[str, str]] = {
    "PLAINTEXT": ("PLAINTEXT", "secured_plaintext"),
    "CONTROLLER": ("PLAINTEXT", "secured_controller"),
    "SASL_SSL": ("SASL_SSL", "secured_sasl_ssl"),
    "SASL_PLAINTEXT": ("SASL_PLAINTEXT", "secured_sasl_plaintext"),
    "MTLS": ("SSL", "secured_mtls"),
    "OAUTH": ("SASL_SSL", "secured_oauth"),
}
_SASL_MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN")
REAUTH_MS = 15_000
SHARE_STATE_TOPIC = "__share_group_state"


# The monitor's grants: each is one kafka-acls.sh run (AclCommand's arguments after the
# connection options), as docs/SECURITY.md lists them.
def monitor_acls(*principals: str) -> tuple[tuple[str, ...], ...]:
    """The four kafka-acls.sh runs that grant ``principals`` (``User:NAME``) what the
    monitor needs: Describe on the cluster, every topic and every group; DescribeConfigs on
    every topic and every group (a share group's delivery count limit); Read on
    ``__consumer_offsets`` and on ``__share_group_state`` (the share groups' deliveries)."""
    allow = [arg for p in principals for arg in ("--allow-principal", p)]
    return (
        ("--add", *allow, "--operation", "Describe", "--cluster", "--topic", "*", "--group", "*"),
        ("--add", *allow, "--operation", "DescribeConfigs", "--topic", "*", "--group", "*"),
        ("--add", *allow, "--operation", "Read", "--topic", "__consumer_offsets"),
        ("--add", *allow, "--operation", "Read", "--topic", SHARE_STATE_TOPIC),
    )


MONITOR_ACLS = monitor_acls(f"User:{MONITOR}", f"User:{OAUTH_MONITOR}")
ACL_COMMAND = "org.apache.kafka.tools.AclCommand"


def _dir(ctx: Context) -> Path:
    return ctx.run_dir / NAME


def _password(ctx: Context, what: str) -> str:
    return run_secret(ctx, f"{NAME}-{what}-password", nbytes=18)


def admin_bootstrap(ctx: Context) -> str:
    """The PLAINTEXT listener: the broker's own, a super user (the lab's clients use it)."""
    return ctx.addr(LISTENERS["PLAINTEXT"][1])


def client_config(ctx: Context, listener: str, mechanism: str | None = None) -> dict[str, Any]:
    """The monitor's librdkafka-style settings for one listener (``bootstrap.servers``
    included): what a cluster's ``kafka.config`` holds to reach it."""
    protocol, port = LISTENERS[listener]
    tls = _dir(ctx) / "tls"
    config: dict[str, Any] = {
        "bootstrap.servers": ctx.addr(port),
        "security.protocol": protocol,
    }
    if protocol in ("SSL", "SASL_SSL"):
        config["ssl.ca.location"] = str(tls / "ca.pem")
    if protocol == "SSL":
        config["ssl.certificate.location"] = str(tls / "client.pem")
        config["ssl.key.location"] = str(tls / "client.key")
        config["ssl.key.password"] = _password(ctx, "client-key")
    if listener == "OAUTH":
        config.update({
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.token.endpoint.url": oidc_issuer.token_url(ctx),
            "sasl.oauthbearer.client.id": oidc_issuer.MACHINE_CLIENT_ID,
            "sasl.oauthbearer.client.secret": oidc_issuer.machine_client_secret(ctx),
            "sasl.oauthbearer.scope": oidc_issuer.AUDIENCE,
        })  # fmt: skip
    elif protocol.startswith("SASL"):
        config["sasl.mechanism"] = mechanism or _SASL_MECHANISMS[0]
        config["sasl.username"] = MONITOR
        config["sasl.password"] = _password(ctx, MONITOR)
    return config


def _openssl(tls: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=tls, check=True, capture_output=True, timeout=60)


def _certificates(ctx: Context) -> None:
    """A private CA, the broker's certificate for 127.0.0.1 and the monitor's client
    certificate (its key encrypted), made once per run directory."""
    tls = _dir(ctx) / "tls"
    if (tls / "truststore.p12").exists():
        return
    tls.mkdir(parents=True, exist_ok=True)
    store, key = _password(ctx, "store"), _password(ctx, "client-key")
    _openssl(tls, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
             "-out", "ca.pem", "-days", "7", "-subj", "/CN=lagwatch-lab-ca")  # fmt: skip
    (tls / "san.ext").write_text(f"subjectAltName=IP:{LOOPBACK}\n")
    for name, subject, extra in (
        ("broker", f"/CN={LOOPBACK}", ["-extfile", "san.ext"]),
        ("client", f"/CN={MONITOR}", []),
    ):
        _openssl(tls, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.raw.key",
                 "-out", f"{name}.csr", "-subj", subject)  # fmt: skip
        _openssl(tls, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-out", f"{name}.pem", "-days", "7", *extra)  # fmt: skip
    _openssl(tls, "pkcs12", "-export", "-in", "broker.pem", "-inkey", "broker.raw.key",
             "-certfile", "ca.pem", "-name", "broker", "-out", "keystore.p12",
             "-passout", f"pass:{store}")  # fmt: skip
    _openssl(tls, "pkey", "-in", "client.raw.key", "-aes256", "-out", "client.key",
             "-passout", f"pass:{key}")  # fmt: skip
    subprocess.run(
        ["keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem",
         "-keystore", "truststore.p12", "-storetype", "PKCS12", "-storepass", store],
        cwd=tls, check=True, capture_output=True, timeout=60,
    )  # fmt: skip


def _jaas(ctx: Context, mechanism: str) -> str:
    if mechanism == "PLAIN":
        return (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'user_{MONITOR}="{_password(ctx, MONITOR)}";'
        )
    return "org.apache.kafka.common.security.scram.ScramLoginModule required;"


def secured_properties(ctx: Context) -> str:
    """``server.properties`` of the secured broker on the stack's ports."""
    from lab.services import _KAFKA_SETTINGS  # the lab broker's, for one broker in KRaft

    tls = _dir(ctx) / "tls"
    store = _password(ctx, "store")
    addresses = {name: ctx.addr(port) for name, (_, port) in LISTENERS.items()}
    settings = {
        **_KAFKA_SETTINGS,
        "controller.quorum.voters": f"1@{addresses['CONTROLLER']}",
        "listeners": ",".join(f"{name}://{addr}" for name, addr in addresses.items()),
        "advertised.listeners": ",".join(
            f"{name}://{addr}" for name, addr in addresses.items() if name != "CONTROLLER"
        ),
        "listener.security.protocol.map": ",".join(
            f"{name}:{protocol}" for name, (protocol, _) in LISTENERS.items()
        ),
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(_dir(ctx) / "data"),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS",
        "allow.everyone.if.no.acl.found": "false",
        "connections.max.reauth.ms": str(REAUTH_MS),
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(tls / "keystore.p12"),
        "ssl.keystore.password": store,
        "ssl.key.password": store,
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(tls / "truststore.p12"),
        "ssl.truststore.password": store,
        "listener.name.mtls.ssl.client.auth": "required",
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]+)$/$1/,DEFAULT",
    }
    for listener in ("sasl_ssl", "sasl_plaintext"):
        settings[f"listener.name.{listener}.sasl.enabled.mechanisms"] = ",".join(_SASL_MECHANISMS)
        for mechanism in _SASL_MECHANISMS:
            settings[f"listener.name.{listener}.{mechanism.lower()}.sasl.jaas.config"] = _jaas(
                ctx, mechanism
            )
    oauth = "listener.name.oauth.oauthbearer."
    settings.update({
        "listener.name.oauth.sasl.enabled.mechanisms": "OAUTHBEARER",
        f"{oauth}sasl.jaas.config":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
        f"{oauth}sasl.server.callback.handler.class":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        "sasl.oauthbearer.jwks.endpoint.url": oidc_issuer.jwks_url(ctx),
        "sasl.oauthbearer.expected.audience": oidc_issuer.AUDIENCE,
        "sasl.oauthbearer.expected.issuer": oidc_issuer.issuer_url(ctx),
    })  # fmt: skip
    settings["sasl.enabled.mechanisms"] = ",".join((*_SASL_MECHANISMS, "OAUTHBEARER"))
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def _java(ctx: Context) -> list[str]:
    from lab.kafka_dist import broker_libs
    from lab.services import _kafka_java

    options = _kafka_java(ctx)
    # The plain broker's options, with this broker's own log4j file, and the one URL its
    # OAUTHBEARER validator may fetch.
    log4j = f"-Dlog4j2.configurationFile={_dir(ctx) / 'log4j2.properties'}"
    return [log4j if o.startswith("-Dlog4j2.configurationFile=") else o for o in options[:-2]] + [
        f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={oidc_issuer.jwks_url(ctx)}",
        "-cp", f"{broker_libs()}/*",
    ]  # fmt: skip


def _reset(ctx: Context) -> None:
    import shutil

    shutil.rmtree(_dir(ctx) / "data", ignore_errors=True)
    (_dir(ctx) / "acls-granted").unlink(missing_ok=True)


def _prepare(ctx: Context, env: dict[str, str], log: Path) -> None:
    """Certificates once; the configuration for this stack's ports; the storage formatted
    once, with the monitor's SCRAM credentials for both SCRAM mechanisms."""
    _certificates(ctx)
    home = _dir(ctx)
    (home / "server.properties").write_text(secured_properties(ctx))
    (home / "log4j2.properties").write_text(LOG4J2)
    if (home / "data" / "meta.properties").exists():
        return
    cluster_id = base64.urlsafe_b64encode(secrets.token_bytes(16)).rstrip(b"=").decode()
    password = _password(ctx, MONITOR)
    scram = [
        arg for mechanism in _SASL_MECHANISMS if mechanism.startswith("SCRAM")
        for arg in ("--add-scram", f"{mechanism}=[name={MONITOR},password={password}]")
    ]  # fmt: skip
    with open(log, "ab") as out:
        subprocess.run(
            [*_java(ctx), "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}",
             "-c", str(home / "server.properties"), *scram],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            timeout=120, check=True,
        )  # fmt: skip


def _argv(ctx: Context) -> list[str]:
    return [*_java(ctx), "kafka.Kafka", str(_dir(ctx) / "server.properties")]


def grant_monitor_acls(ctx: Context) -> None:
    """The monitor's ACLs (``MONITOR_ACLS``) by Kafka's ``AclCommand``, once per cluster."""
    from lab.kafka_tools import run_tool

    marker = _dir(ctx) / "acls-granted"
    if marker.exists():
        return
    for args in MONITOR_ACLS:
        run_tool(ACL_COMMAND, ["--bootstrap-server", admin_bootstrap(ctx), *args])
    marker.write_text("granted\n")


def _ready(ctx: Context, log: str) -> bool:
    """Started, the monitor's ACLs granted, and the monitor (over SASL_SSL, SCRAM-SHA-512)
    gets an answer from a loaded group coordinator: ready for the product."""
    if "Kafka Server started" not in log:
        return False
    grant_monitor_acls(ctx)
    from collectors.kafka_wire import GroupClient

    config = client_config(ctx, "SASL_SSL")
    with GroupClient(config["bootstrap.servers"], config) as client:
        answer = client.describe(["lagwatch-lab-ready"], timeout_s=5)["lagwatch-lab-ready"]
    return answer.error_name in {"GROUP_ID_NOT_FOUND", "NONE"}


SECURED_SERVICES = (
    ServiceSpec(
        name=NAME,
        ports=tuple(port for _, port in LISTENERS.values()),
        requires=("oidc",),
        reset=_reset,
        prepare=_prepare,
        argv=_argv,
        ready=_ready,
        endpoints=lambda ctx: {port: ctx.addr(port) for _, port in LISTENERS.values()},
        ready_timeout_s=120.0,
        stop_grace_s=30.0,
        optional=True,
    ),
)
