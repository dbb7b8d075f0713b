"""A real S3-compatible object store for the lab: SeaweedFS (``weed server -s3``), holding the
sample log the way a deployment on several machines would (``s3a://lagwatch/samples``).

One process runs SeaweedFS's master, a volume server, the filer and the S3 gateway, every
port on loopback and chosen by the lab, its data under the run directory; telemetry is off
and the Iceberg and Lance endpoints it would also open are not started. The S3 gateway knows
one identity, Lagwatch's, whose access key and secret are generated for the run directory
(``run_secret``: files of mode 0600, never printed or logged) and written to the gateway's
config file (mode 0600). The service is ready once the bucket exists: its readiness check
creates it (idempotently) with those credentials, as a user's first step would.

The service is optional: ``python -m lab up --services object-store,...`` starts it, and the
product's processes of that stack then write and read the sample log there
(:func:`store_env`, through ``services.django_env``). Stopping it (``python -m lab stop
object-store``) is the lab's store outage; the data stays on disk for the restart.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Final

import pyarrow.fs as pafs

from lab.ports import LOOPBACK
from lab.seaweedfs import weed_binary
from lab.services import Context, ServiceSpec, run_secret

BUCKET: Final = "lagwatch"
PREFIX: Final = "samples"
REGION: Final = "us-east-1"
ACCESS_KEY_FILE: Final = "s3-access-key"
SECRET_KEY_FILE: Final = "s3-secret-key"
PORTS: Final = (
    "s3", "s3_grpc", "weed_master", "weed_master_grpc", "weed_volume", "weed_volume_grpc",
    "weed_filer", "weed_filer_grpc",
)  # fmt: skip


def endpoint(ctx: Context) -> str:
    return f"http://{LOOPBACK}:{ctx.ports['s3']}"


def sample_log_url(ctx: Context) -> str:
    return f"s3a://{BUCKET}/{PREFIX}"


def credentials(ctx: Context) -> tuple[str, str]:
    """The run's access key id and secret (generated on first use, kept in the run dir)."""
    return run_secret(ctx, ACCESS_KEY_FILE, nbytes=12), run_secret(ctx, SECRET_KEY_FILE)


def store_env(ctx: Context) -> dict[str, str]:
    """What the product's processes need to use the store: the sample log's URL, the store's
    settings and the credentials, in the environment as a deployment gives them."""
    key, secret = credentials(ctx)
    env = {
        "LAGWATCH_SAMPLE_LOG_URL": sample_log_url(ctx),
        "LAGWATCH_S3_ENDPOINT": endpoint(ctx),
        "LAGWATCH_S3_REGION": REGION,
        "LAGWATCH_S3_PATH_STYLE": "1",
        "AWS_ACCESS_KEY_ID": key,
        "AWS_SECRET_ACCESS_KEY": secret,
    }
    from lab.spark_jars import spark_jars_dir  # noqa: PLC0415 - only with the store

    jars = spark_jars_dir()
    if jars is not None:
        env["LAGWATCH_SPARK_JARS"] = str(jars)
    return env


def client(ctx: Context) -> pafs.S3FileSystem:
    """A pyarrow filesystem on the store with the run's credentials (tests and readiness)."""
    key, secret = credentials(ctx)
    return pafs.S3FileSystem(
        access_key=key, secret_key=secret, region=REGION, scheme="http",
        endpoint_override=f"{LOOPBACK}:{ctx.ports['s3']}", allow_bucket_creation=True,
        connect_timeout=2, request_timeout=10,
        retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=1),
    )  # fmt: skip


def _data_dir(ctx: Context) -> Path:
    return ctx.run_dir / "seaweedfs"


def _config_path(ctx: Context) -> Path:
    return _data_dir(ctx) / "s3.json"


def _prepare(ctx: Context, env: dict[str, str], log: Path) -> None:
    """The data folder and the gateway's identities file, private to the run's user."""
    _data_dir(ctx).mkdir(parents=True, exist_ok=True)
    key, secret = credentials(ctx)
    config = {
        "identities": [
            {
                "name": "lagwatch",
                "credentials": [{"accessKey": key, "secretKey": secret}],
                "actions": ["Admin", "Read", "List", "Tagging", "Write"],
            }
        ]
    }
    path = _config_path(ctx)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(config, out)


def _argv(ctx: Context) -> list[str]:
    p = ctx.ports
    return [
        str(weed_binary()), "-logtostderr", "server",  # its log to the service's, not $TMPDIR
        f"-ip={LOOPBACK}", f"-ip.bind={LOOPBACK}", f"-dir={_data_dir(ctx)}",
        f"-master.port={p['weed_master']}", f"-master.port.grpc={p['weed_master_grpc']}",
        "-master.telemetry=false", "-master.volumeSizeLimitMB=256",
        f"-volume.port={p['weed_volume']}", f"-volume.port.grpc={p['weed_volume_grpc']}",
        "-volume.max=16",
        "-filer", f"-filer.port={p['weed_filer']}", f"-filer.port.grpc={p['weed_filer_grpc']}",
        "-s3", f"-s3.port={p['s3']}", f"-s3.port.grpc={p['s3_grpc']}",
        "-s3.port.iceberg=0", "-s3.port.lance=0", f"-s3.config={_config_path(ctx)}",
    ]  # fmt: skip


def _ready(ctx: Context, log: str) -> bool:
    """The gateway answers with the run's credentials and the bucket exists (made here)."""
    fs = client(ctx)
    if fs.get_file_info(BUCKET).type != pafs.FileType.Directory:
        fs.create_dir(BUCKET)
    return fs.get_file_info(BUCKET).type == pafs.FileType.Directory


OBJECT_STORE_SERVICES: tuple[ServiceSpec, ...] = (
    ServiceSpec(
        name="object-store",
        ports=PORTS,
        prepare=_prepare,
        argv=_argv,
        ready=_ready,
        endpoints=lambda ctx: {"object_store": endpoint(ctx)},
        ready_timeout_s=90.0,
        optional=True,
    ),
)
