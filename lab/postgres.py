"""A private PostgreSQL server for the lab and the tests, so that the production database is
talked to in the lab as in production.

Debian's ``postgresql`` package gives the binaries (``scripts/setup`` installs it); the lab
runs its own cluster, not the package's ``main`` one: initialised on first start, on a free
port, listening on loopback only, a password-protected ``lagwatch`` role owning a ``lagwatch``
database. The server refuses to run as root, so it runs as the package's ``postgres`` user
(``setpriv``, which execs: the lab still owns the server's own process), and its data
directory lives where that user can reach it: a directory of its own under the system's
temporary directory, named after the run directory, removed by ``python -m lab down``.

Durability is traded for speed (``fsync=off``, no synchronous commit): a lab or test
database is thrown away with its stack. ``SIGINT`` asks for PostgreSQL's fast shutdown
(``SIGTERM`` would wait for every client to disconnect).

The service is optional: ``python -m lab up --services postgres,...`` starts it, and the
product's processes of that stack then get ``DATABASE_URL`` (``services.django_env``).
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from lab.ports import LOOPBACK
from lab.services import Context, ServiceSpec, run_secret

OS_USER = "postgres"  # Debian's package creates it
ROLE = DATABASE = "lagwatch"


def pg_bin() -> Path:
    """The newest installed server's ``bin`` (``$LAGWATCH_PG_BIN`` wins)."""
    if configured := os.environ.get("LAGWATCH_PG_BIN"):
        return Path(configured)
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/postgres"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if not versions:
        raise FileNotFoundError(
            "no PostgreSQL server under /usr/lib/postgresql (apt-get install -y postgresql)"
        )
    return versions[-1].parent


def data_dir(ctx: Context) -> Path:
    digest = hashlib.sha1(str(ctx.run_dir.resolve()).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"lagwatch-pg-{digest}"


def password(ctx: Context) -> str:
    return run_secret(ctx, "postgres-password")


def database_url(ctx: Context, *, database: str = DATABASE) -> str:
    """What the product reads as ``DATABASE_URL`` (the password is URL-safe base64)."""
    return f"postgres://{ROLE}:{password(ctx)}@{LOOPBACK}:{ctx.ports['postgres']}/{database}"


def stack_database_url(run_dir: Path, endpoint: str) -> str:
    """``DATABASE_URL`` of a running stack, from its endpoint (printed without the password)
    and the password kept in its run directory."""
    secret = (run_dir / "postgres-password").read_text().strip()
    return endpoint.replace(f"//{ROLE}@", f"//{ROLE}:{secret}@", 1)


def _as_postgres(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv  # already an ordinary user: the server runs as that user
    return ["setpriv", f"--reuid={OS_USER}", f"--regid={OS_USER}", "--init-groups", "--", *argv]


def _owner() -> tuple[int, int]:
    if os.geteuid() != 0:
        return os.geteuid(), os.getegid()
    entry = pwd.getpwnam(OS_USER)
    return entry.pw_uid, entry.pw_gid


def _initdb(ctx: Context, log: Path) -> None:
    """A new cluster with the ``lagwatch`` role (password from the run directory) and its
    database; created through the single-user backend, so no server runs yet."""
    directory = data_dir(ctx)
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(mode=0o700)
    uid, gid = _owner()
    os.chown(directory, uid, gid)
    pwfile = directory / ".pw"
    pwfile.write_text(password(ctx) + "\n")
    os.chown(pwfile, uid, gid)
    bin_dir = pg_bin()
    with open(log, "ab") as out:
        run = {"stdout": out, "stderr": subprocess.STDOUT, "check": True, "cwd": directory}
        subprocess.run(
            _as_postgres([
                str(bin_dir / "initdb"), "-D", str(directory / "data"), "-U", ROLE,
                f"--pwfile={pwfile}", "--auth=scram-sha-256", "--encoding=UTF8",
                "--locale=C.UTF-8", "--no-sync",
            ]),
            stdin=subprocess.DEVNULL, **run,
        )  # fmt: skip
        subprocess.run(
            _as_postgres([str(bin_dir / "postgres"), "--single", "-D", str(directory / "data"),
                          "-F", "postgres"]),
            input=f"CREATE DATABASE {DATABASE} OWNER {ROLE}\n".encode(), **run,
        )  # fmt: skip
    pwfile.unlink()


def _prepare(ctx: Context, env: dict[str, str], log: Path) -> None:
    if not (data_dir(ctx) / "data" / "PG_VERSION").exists():
        _initdb(ctx, log)


def _reset(ctx: Context) -> None:
    shutil.rmtree(data_dir(ctx), ignore_errors=True)


def _argv(ctx: Context) -> list[str]:
    directory = data_dir(ctx)
    return _as_postgres([
        str(pg_bin() / "postgres"), "-D", str(directory / "data"),
        "-p", str(ctx.ports["postgres"]), "-h", LOOPBACK, "-k", str(directory),
        "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
        "-c", "max_connections=200",
    ])  # fmt: skip


def _ready(ctx: Context, log: str) -> bool:
    import psycopg

    with psycopg.connect(database_url(ctx), connect_timeout=2) as conn:
        conn.execute("SELECT 1")
    return True


POSTGRES_SERVICES: tuple[ServiceSpec, ...] = (
    ServiceSpec(
        name="postgres",
        ports=("postgres",),
        reset=_reset,
        prepare=_prepare,
        argv=_argv,
        ready=_ready,
        endpoints=lambda ctx: {
            "postgres": f"postgres://{ROLE}@{LOOPBACK}:{ctx.ports['postgres']}/{DATABASE}"
        },
        ready_timeout_s=60.0,
        stop_signal=signal.SIGINT,
        cleanup=_reset,
        optional=True,
    ),
)
