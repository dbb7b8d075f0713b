"""The Parquet sample log: every sample ever collected, the Spark jobs' input (SPEC §5, §6).

``SampleLog`` (``store``) writes a cycle's samples, compacts closed hours and reads windows
back; ``schema`` says what a sample is and how it is stored, ``layout`` where it lives,
``dedup`` which of two copies of a sample wins; ``object_store`` how to reach a log on an S3
store, and ``spool`` what a collector does while that store does not answer. The names below
are the log's public face, shared by the collector, Celery tasks, the reports, the Spark jobs
and the benchmarks.

Pure package: pyarrow only, no Django, so Spark jobs, Celery tasks and the benchmark share it.
"""

from collectors.sample_log.layout import HOUR_MS, HourPartition
from collectors.sample_log.schema import (
    COLUMNS,
    KEY_COLUMNS,
    PARTITION_COLUMNS,
    SAMPLE_SCHEMA,
    SORT_COLUMNS,
    SOURCES,
)
from collectors.sample_log.store import CompactResult, SampleLog

__all__ = [
    "COLUMNS",
    "HOUR_MS",
    "KEY_COLUMNS",
    "PARTITION_COLUMNS",
    "SAMPLE_SCHEMA",
    "SORT_COLUMNS",
    "SOURCES",
    "CompactResult",
    "HourPartition",
    "SampleLog",
]
