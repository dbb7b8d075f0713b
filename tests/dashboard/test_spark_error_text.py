"""A failed Spark run's error as the jobs page shows it: the JVM's stack frames dropped, and a
run that failed on the sample log's object store led by what to check."""

from __future__ import annotations

from typing import Any

import pytest

from collectors.sample_log.object_store import S3Options
from dashboard.status.runs import error_text

FRAMES = "\n\tat org.apache.hadoop.fs.s3a.Invoker.once(Invoker.java:124)\n\t... 42 more"
CASES = [
    ('Py4JJavaError: An error occurred while calling o51.parquet.\n: '
     'org.apache.hadoop.fs.UnsupportedFileSystemException: No FileSystem for scheme "s3a"',
     "Spark has no s3a connector: set LAGWATCH_SPARK_JARS"),
    ("java.nio.file.AccessDeniedException: s3a://lagwatch/samples: getFileStatus on "
     "s3a://lagwatch/samples: software.amazon.awssdk.services.s3.model.S3Exception: null "
     "(Service: S3, Status Code: 403, Request ID: 1)",
     "the sample log's object store (http://store:8333) refused the credentials: check "
     "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
    ("org.apache.hadoop.fs.s3a.AWSClientIOException: getFileStatus on s3a://lagwatch/samples: "
     "software.amazon.awssdk.core.exception.SdkClientException: Unable to execute HTTP request: "
     "Connect to store:8333 failed: Connection refused",
     "the sample log's object store (http://store:8333) does not answer: check "
     "LAGWATCH_S3_ENDPOINT"),
    ("Spark master spark://127.0.0.1:7077 does not answer (127.0.0.1:7077: Connection refused)",
     None),  # not the store: no reading in front
]  # fmt: skip


@pytest.mark.parametrize(("message", "first_line"), CASES)
def test_a_store_failure_is_read_for_the_user(
    message: str, first_line: str | None, settings: Any
) -> None:
    settings.LAGWATCH_S3 = S3Options(endpoint="http://store:8333", path_style=True)
    text = error_text(RuntimeError(message + FRAMES))
    assert "\tat " not in text and "42 more" not in text
    if first_line is None:
        assert text.startswith("RuntimeError: Spark master")
    else:
        assert text.splitlines()[0].startswith(first_line)
        assert "RuntimeError: " in text  # the JVM's own words follow
