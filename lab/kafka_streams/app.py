"""The lab's Kafka Streams application run as a child JVM: a streams group (KIP-1071) whose
members, tasks and commits the lab tests read with the product and with Kafka's own
``kafka-streams-groups.sh``. Not part of the product.

One ``StreamsApp`` is one Kafka Streams instance (one process id) of ``LabWordCount``
(``app/LabWordCount.java``): lines from ``input_topic`` split into words, counted through a
repartition topic into a state store, counts written to ``output_topic``. It is driven through
its standard input: ``pause`` stops processing while the member stays in its group (a stalled
application: its commits stand still, its lag grows), ``resume`` goes on, and closing it (or
this process dying) stops the JVM.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from lab.kafka_streams import dist

__all__ = ["StreamsApp"]

# A small JVM on the serial collector and the C1 JIT, like the lab's other client JVMs.
_JAVA_OPTS = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
              "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"]  # fmt: skip
_STOP_GRACE_S = 30.0


class StreamsApp:
    """One instance of the lab's word count; ``log`` holds its output."""

    def __init__(
        self,
        bootstrap: str,
        application_id: str,
        input_topic: str,
        output_topic: str,
        run_dir: Path,
        *,
        client_id: str | None = None,
        threads: int = 1,
        commit_ms: int = 500,
    ) -> None:
        self.application_id = application_id
        self.run_dir = run_dir
        self.log = run_dir / "app.log"
        self._argv = [
            "-cp", dist.class_path(), dist.APP_CLASS,
            "--bootstrap", bootstrap, "--application-id", application_id,
            "--input", input_topic, "--output", output_topic,
            "--state-dir", str(run_dir / "state"), "--threads", str(threads),
            "--commit-ms", str(commit_ms), "--client-id", client_id or application_id,
        ]  # fmt: skip
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None

    def start(self) -> None:
        from lab.services import java

        dist.installed()  # a clear error before anything starts when the cache is not filled
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._log_file = self.log.open("ab")
        self._proc = subprocess.Popen(
            [java(), *_JAVA_OPTS, *self._argv],
            stdin=subprocess.PIPE, stdout=self._log_file, stderr=subprocess.STDOUT,
        )  # fmt: skip

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _say(self, command: str) -> None:
        if self._proc is None or self._proc.stdin is None or not self.running:
            raise RuntimeError(f"{self.application_id} is not running; its log: {self.log}")
        self._proc.stdin.write(f"{command}\n".encode())
        self._proc.stdin.flush()

    def pause(self) -> None:
        """Processing stops; the member stays in its group (a stalled application)."""
        self._say("pause")

    def resume(self) -> None:
        self._say("resume")

    def stop(self) -> None:
        """Close its standard input (it closes its Kafka Streams and leaves the group), then
        SIGTERM, then SIGKILL, each after a grace period."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                proc.wait(_STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(_STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
