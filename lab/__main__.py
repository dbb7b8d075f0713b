"""``python -m lab``: bring the local stack up, down, show it, and drive workload scenarios.

Every command finds the stack through its run directory (``--run-dir``, else
``$LAGWATCH_LAB_DIR``, else ``<repo>/var/lab``), so they work from any shell.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lab.postgres import ROLE
from lab.services import SECRET_KEY_FILE
from lab.stack import Stack, StackError, default_run_dir

REPO = Path(__file__).resolve().parents[1]


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="lab: %(message)s", stream=sys.stderr)
    try:
        return args.func(args)
    except StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: what had started was stopped again", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--run-dir",
        type=Path,
        default=argparse.SUPPRESS,  # so a subcommand's default cannot hide the parent's value
        help="where the stack keeps state, logs and data (default: $LAGWATCH_LAB_DIR or var/lab)",
    )
    parser = argparse.ArgumentParser(prog="python -m lab", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    up = commands.add_parser("up", parents=[common], help="start the stack and wait until ready")
    up.add_argument("--services", help="comma-separated subset (requirements are added)")
    up.add_argument("--redis-url", help="reuse this Redis instead of starting a private one")
    up.add_argument(
        "--foreground", action="store_true", help="stay, and tear down on Ctrl-C or SIGTERM"
    )
    up.add_argument(
        "--production",
        action="store_true",
        help="run the product as docker-compose.yml does: production settings, gunicorn, "
        "PostgreSQL (added to the services); docs/LAB.md",
    )
    up.set_defaults(func=_cmd_up)

    demo = commands.add_parser(
        "demo", parents=[common], help="up --foreground with every service and the demo workload"
    )
    demo.add_argument("--redis-url", help="reuse this Redis instead of starting a private one")
    demo.add_argument(
        "--without-storm",
        action="store_true",
        help="leave out the real Apache Storm (its Kafka 3.9 broker, Nimbus, supervisor, UI)",
    )
    demo.set_defaults(func=_cmd_up, services=None, foreground=True, demo=True, production=False)

    down = commands.add_parser("down", parents=[common], help="stop what up started")
    down.set_defaults(func=_cmd_down)

    status = commands.add_parser("status", parents=[common], help="show each service")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(func=_cmd_status)

    env = commands.add_parser(
        "env",
        parents=[common],
        help='export line for manage.py and celery to use this stack: eval "$(python -m lab env)"',
    )
    env.set_defaults(func=_cmd_env)

    for verb, func in (("stop", _cmd_stop), ("start", _cmd_start)):
        one = commands.add_parser(
            verb, parents=[common], help=f"{verb} one service (same port: outage drills)"
        )
        one.add_argument("service")
        if verb == "start":
            one.add_argument(
                "--fresh", action="store_true",
                help="from empty storage: a broker rebuilt under the same name, a wiped ZooKeeper",
            )  # fmt: skip
        one.set_defaults(func=func)

    scenario = commands.add_parser("scenario", parents=[common], help="workload scenarios")
    scenario.add_argument("--control-url", help="workload control URL (default: from the stack)")
    scenario.add_argument(
        "--storm",
        action="store_true",
        help="the real Storm's scenarios (the storm service), not the simulated workload's",
    )
    scenario.set_defaults(func=_cmd_scenario)
    actions = scenario.add_subparsers(dest="action", required=True)
    actions.add_parser("list", parents=[common])
    start = actions.add_parser("start", parents=[common])
    start.add_argument("name")
    start.add_argument(
        "--param", action="append", default=[], metavar="K=V", help="scenario parameter"
    )
    stop = actions.add_parser("stop", parents=[common])
    stop.add_argument("name")
    return parser


def _run_dir(args: argparse.Namespace) -> Path:
    return getattr(args, "run_dir", None) or default_run_dir()


def _cmd_up(args: argparse.Namespace) -> int:
    stack = Stack(_run_dir(args), redis_url=args.redis_url)
    services = [s.strip() for s in args.services.split(",") if s.strip()] if args.services else None
    if getattr(args, "demo", False) and services is None:
        # The demo shows both halves: the simulated world and a real Storm cluster; and a real
        # Kafka Streams application's streams group (KIP-1071).
        storm = [] if args.without_storm else ["storm"]
        services = [name for name, spec in stack.specs.items() if not spec.optional]
        services += [*storm, "streams-app"]
    production = bool(getattr(args, "production", False))
    if not args.foreground:
        endpoints = stack.up(services, production=production)
        _print_endpoints(stack, endpoints)
        print(f"stop with: python -m lab down --run-dir {stack.run_dir}")
        return 0
    signal.signal(signal.SIGTERM, _interrupt)  # during up, like Ctrl-C: up undoes its work
    # If this fails, there is nothing of ours to tear down.
    endpoints = stack.up(services, production=production)
    ours = stack.recorded_id()
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        _print_endpoints(stack, endpoints)
        if getattr(args, "demo", False) and "web" in endpoints:
            _print_demo_login(stack)
        print("running in the foreground: Ctrl-C stops everything", flush=True)
        # Also return when someone ran `down` (and maybe a new `up`) from another shell.
        while not stop.wait(1.0) and stack.recorded_id() == ours:
            pass
    finally:
        stack.down(only_id=ours)
    return 0


def _print_demo_login(stack: Stack) -> None:
    """A fresh staff login for this demo run; the dashboard requires one on every page."""
    env = dict(os.environ, LAGWATCH_DATA_DIR=str(stack.run_dir / "data"))
    result = subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "demo_user", "demo"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    password = result.stdout.strip().splitlines()[-1]
    print(f"login      demo / {password}", flush=True)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


# What ``manage.py`` (``lagwatch_status``, ``collect``, ``lag_report``…) and Celery need to
# read and drive this stack rather than the checkout's default database (without them, in
# another terminal they read an empty ``var/data`` while the demo wrote ``var/lab/data``). Not the
# ingest token: a secret, and no command needs it.
MANAGE_VARS = (
    "DJANGO_SETTINGS_MODULE", "LAGWATCH_DATA_DIR", "REDIS_URL", "SPARK_MASTER", "PYSPARK_PYTHON",
    "LAGWATCH_SAMPLE_LOG_URL", "LAGWATCH_S3_ENDPOINT", "LAGWATCH_S3_REGION",
    "LAGWATCH_S3_PATH_STYLE", "LAGWATCH_SPARK_JARS",
)  # fmt: skip


def manage_exports(stack: Stack) -> str:
    """``export LAGWATCH_DATA_DIR=… REDIS_URL=…`` for a shell, quoted.

    With PostgreSQL (and, in the production mode, the secret key; with the object store, its
    credentials) the line reads the secrets from their files in the run directory when the
    shell runs it (``$(cat …)``): they are never printed.
    """
    env = stack.django_env()
    parts = [f"{k}={shlex.quote(env[k])}" for k in MANAGE_VARS if k in env]
    secret_file = stack.run_dir / SECRET_KEY_FILE
    if "DJANGO_SECRET_KEY" in env and secret_file.exists():
        parts.append(f'DJANGO_SECRET_KEY="$(cat {shlex.quote(str(secret_file))})"')
    if "AWS_SECRET_ACCESS_KEY" in env:  # the object store's credentials (lab/object_store.py)
        for var, name in (("AWS_ACCESS_KEY_ID", "s3-access-key"),
                          ("AWS_SECRET_ACCESS_KEY", "s3-secret-key")):  # fmt: skip
            parts.append(f'{var}="$(cat {shlex.quote(str(stack.run_dir / name))})"')
    endpoint = stack.endpoints().get("postgres")
    if endpoint and "DATABASE_URL" in env:
        password_file = shlex.quote(str(stack.run_dir / "postgres-password"))
        url = endpoint.replace(f"//{ROLE}@", f"//{ROLE}:$(cat {password_file})@", 1)
        parts.append(f'DATABASE_URL="{url}"')
    return "export " + " ".join(parts)


def _cmd_env(args: argparse.Namespace) -> int:
    print(manage_exports(Stack.load(_run_dir(args))))
    return 0


def _print_endpoints(stack: Stack, endpoints: dict[str, str]) -> None:
    for role, address in endpoints.items():
        print(f"{role:<10} {address}")
    if "web" in endpoints:
        print(f"dashboard  {endpoints['web']}")
    print(f"run dir    {stack.run_dir}")
    print("commands   in another terminal, before manage.py or celery, paste:")
    print(f"           {manage_exports(stack)}")


def _cmd_down(args: argparse.Namespace) -> int:
    stack = Stack(_run_dir(args))
    outcomes = stack.down()
    if not outcomes:
        print(f"no lab stack recorded in {stack.run_dir}")
    for name, outcome in outcomes.items():
        print(f"{name:<10} {outcome}")
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    report = Stack(_run_dir(args)).status()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    if not report["services"]:
        print(f"no lab stack recorded in {report['run_dir']}")
        return 0
    if report["production"]:
        print("production mode: gunicorn, production settings, PostgreSQL (docs/LAB.md)")
    print(f"{'SERVICE':<10} {'STATE':<8} {'PID':>7} {'PORT':>6} {'UPTIME':>8}  ENDPOINT / LOG")
    for name, svc in report["services"].items():
        uptime = f"{svc['uptime_s']:.0f}s" if svc["uptime_s"] is not None else "-"
        where = svc["endpoint"] or svc["log"]
        if svc["reused"]:
            where += " (reused)"
        pid = svc["pid"] or "-"
        print(f"{name:<10} {svc['state']:<8} {pid:>7} {svc['port'] or '-':>6} {uptime:>8}  {where}")
    dead = [n for n, s in report["services"].items() if s["state"] == "dead"]
    if dead:
        print(f"dead: {', '.join(dead)}; see their logs, then `python -m lab down` and `up` again")
    return 0


def _cmd_stop(args: argparse.Namespace) -> int:
    print(f"{args.service}: {Stack.load(_run_dir(args)).stop_service(args.service)}")
    return 0


def _cmd_start(args: argparse.Namespace) -> int:
    Stack.load(_run_dir(args)).start_service(args.service, fresh=args.fresh)
    print(f"{args.service}: running{' (fresh)' if args.fresh else ''}")
    return 0


def _control_url(args: argparse.Namespace) -> str:
    if args.control_url:
        return args.control_url
    if args.storm:
        url = Stack.load(_run_dir(args)).endpoints().get("real_storm_control")
        if not url:
            raise StackError("the stack has no storm service: `up --services ...,storm`")
        return url
    url = Stack.load(_run_dir(args)).endpoints().get("control")
    if not url:
        raise StackError("the stack has no workload service: start it with `up` (all services)")
    return url


def _parse_param(text: str) -> tuple[str, Any]:
    """``k=v``; v is read as JSON when it parses (numbers, booleans), else kept as a string."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise StackError(f"--param wants K=V, got {text!r}")
    try:
        return key, json.loads(raw)
    except json.JSONDecodeError:
        return key, raw


def _cmd_scenario(args: argparse.Namespace) -> int:
    from lab.workload import control  # its author's module; only scenario commands need it

    url = _control_url(args)
    try:
        if args.action == "list":
            answer: Any = control.list_scenarios(url)
        elif args.action == "start":
            params = dict(_parse_param(p) for p in args.param)
            answer = control.start_scenario(url, args.name, **params)
        else:
            answer = control.stop_scenario(url, args.name)
    except control.ControlError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(answer, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
