"""Fixtures of the Spark test set: one local Spark session, and a private Redis for the jobs'
locks.

Spark: ``local[2]`` (the machine has two cores) and two shuffle partitions: the frames are tiny,
and every shuffle partition is a task to schedule. The session starts only when a test asks for
it (starting a JVM costs 4-9 s), so the evaluator's plain-Python tests never pay for it.

Redis: a real ``redis-server`` on a free loopback port, started once when a test first needs a
lock (the jobs' runs take ``lagwatch:spark:<job>``) and stopped at the end of the session.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from lab.services import redis_ping


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        return redis_ping(url, timeout=0.5)
    except redis.RedisError:
        return False


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = shutil.which("redis-server")
    assert server, "redis-server not found (apt-get install -y redis-server)"
    workdir: Path = tmp_path_factory.mktemp("redis")
    port = _free_port()
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--daemonize", "no", "--dir", str(workdir), "--logfile", str(workdir / "redis.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + 20
        while not _answers(url):
            assert proc.poll() is None, (workdir / "redis.log").read_text()
            assert time.monotonic() < deadline, "redis-server did not answer"
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
