"""Nothing lost while the sample log's object store is away: a local spool in front of it.

A collector writes each cycle's micro-batch to the store. When the store does not answer
(:class:`ObjectStoreUnreachable`: refused connections, timeouts; not refused credentials,
which waiting cannot fix), the batch is written to a local folder instead, in the log's own
layout and under the same name, footer and version, and the outage is noted there
(``_outage.json``). Every later write first sends what the spool holds, oldest hour first,
each file deleted locally once the store has it; sending a batch twice is harmless (the same
name replaces the same object, and the footer's version decides between copies, ``dedup``).
While the outage is recent (``retry_after_s``), writes go straight to the spool without
waiting on the store's timeouts again, so a store that drops packets does not stretch every
cycle to its connect timeout.

The spool's state is the sample log's health as the collector sees it
(:meth:`SpooledLog.source_outcome`), recorded with the cycle beside the sources' (the sources
page and ``/health/`` show it); batches held are named there too. Spark reads the store only,
so a status run during an outage sees the samples up to it, then the rest once sent.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.fs as pafs

from collectors.outcome import SourceOutcome
from collectors.records import Source
from collectors.sample_log.object_store import ObjectStoreUnreachable, S3Options, translated
from collectors.sample_log.store import SampleLog

__all__ = ["SpooledLog"]

log = logging.getLogger(__name__)

OUTAGE_FILE: Final = "_outage.json"


class SpooledLog:
    """``write_batch`` of a store-backed :class:`SampleLog`, with a local spool behind it."""

    def __init__(self, log: SampleLog, spool_dir: str | Path, retry_after_s: float = 10.0) -> None:
        self.log = log
        self.spool = SampleLog(spool_dir)
        self.retry_after_s = retry_after_s
        self._outage_path = Path(self.spool.base) / OUTAGE_FILE

    # -- what the cycle calls --------------------------------------------------------------

    def write_batch(
        self, cluster: str, cycle_id: str | int, rows: pa.Table | Sequence[Mapping[str, Any]]
    ) -> list[str]:
        outage = self.outage()
        if outage and time.time() - outage["last_try_s"] < self.retry_after_s:
            return self._spooled(cluster, cycle_id, rows, None)
        try:
            self.flush()
            written = self.log.write_batch(cluster, cycle_id, rows)
        except ObjectStoreUnreachable as exc:
            return self._spooled(cluster, cycle_id, rows, exc)
        if outage:
            self._outage_path.unlink(missing_ok=True)
            log.warning("sample log store answers again: the spool is sent")
        return written

    def source_outcome(self, now_ms: int) -> SourceOutcome:
        """The log's store as a source of the cycle: unreachable while an outage is noted."""
        outage = self.outage()
        if not outage:
            return SourceOutcome(Source.SAMPLE_LOG, True, now_ms, now_ms)
        held = self.pending()
        error = f"{outage['error']} ({held} batch file(s) held locally, sent when it answers)"
        return SourceOutcome(Source.SAMPLE_LOG, False, outage["since_ms"], now_ms, error)

    # -- the spool ---------------------------------------------------------------------------

    def outage(self) -> dict[str, Any] | None:
        try:
            return json.loads(self._outage_path.read_text())
        except (FileNotFoundError, ValueError):
            return None

    def pending(self) -> int:
        """Batch files the spool holds."""
        return sum(1 for _ in Path(self.spool.base).rglob("*.parquet"))

    def flush(self) -> int:
        """Send every spooled file to the store (oldest hour first), deleting each once sent;
        returns how many. Raises :class:`ObjectStoreUnreachable` at the first that fails."""
        if not Path(self.spool.base).is_dir():
            return 0
        sent = 0
        for partition in self.spool.hours():
            relative = partition.path[len(self.spool.base) :]
            for info in self.spool.fs.get_file_info(pafs.FileSelector(partition.path)):
                if info.type != pafs.FileType.File or not info.base_name.endswith(".parquet"):
                    continue
                try:
                    self._send(info.path, f"{self.log.base}{relative}/{info.base_name}")
                except FileNotFoundError:
                    continue  # another thread of this collector sent it meanwhile
                Path(info.path).unlink(missing_ok=True)
                sent += 1
        if sent:
            self._prune_empty_folders()
            log.info("sample log spool sent to the store", extra={"files": sent})
        return sent

    # -- internals -------------------------------------------------------------------------

    def _prune_empty_folders(self) -> None:
        """The spool's emptied hour, date and cluster folders; never a file, so a batch another
        thread spools meanwhile stays (its folder is then not empty)."""
        for folder in sorted(Path(self.spool.base).rglob("*"), key=lambda p: -len(p.parts)):
            if folder.is_dir():
                with contextlib.suppress(OSError):
                    folder.rmdir()

    @property
    def store(self) -> S3Options | None:
        return self.log.store

    @translated
    def _send(self, local: str, remote: str) -> None:
        """One spooled file to its place in the store, byte for byte (footer and all)."""
        data = Path(local).read_bytes()
        self.log.fs.create_dir(remote.rsplit("/", 1)[0], recursive=True)
        with self.log.fs.open_output_stream(remote) as out:
            out.write(data)

    def _spooled(
        self,
        cluster: str,
        cycle_id: str | int,
        rows: pa.Table | Sequence[Mapping[str, Any]],
        error: ObjectStoreUnreachable | None,
    ) -> list[str]:
        written = self.spool.write_batch(cluster, cycle_id, rows)
        now = time.time()
        outage = self.outage() or {"since_ms": int(now * 1000), "error": str(error)}
        if error is not None:
            outage["error"] = error.reading or str(error)  # the reading, not the SDK's text
            log.warning("sample log store unreachable: batch spooled locally",
                        extra={"cluster": cluster, "error": outage["error"]})  # fmt: skip
        outage["last_try_s"] = outage.get("last_try_s", now) if error is None else now
        self._outage_path.parent.mkdir(parents=True, exist_ok=True)
        temp = self._outage_path.with_suffix(".tmp")
        temp.write_text(json.dumps(outage))
        os.replace(temp, self._outage_path)
        return written
