"""The object store's settings, its errors as a user reads them, and the Spark side's jars:
pure logic, case by case (the store itself: tests/lab/test_object_store.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from collectors.sample_log import SampleLog
from collectors.sample_log.object_store import (
    ObjectStoreRefused,
    ObjectStoreUnreachable,
    S3Options,
    classify,
    explain,
    s3_filesystem,
)
from lab.spark_jars import hadoop_version
from spark_jobs.session import jar_paths

ENV_CASES = [
    ({}, S3Options()),
    ({"LAGWATCH_S3_ENDPOINT": "http://127.0.0.1:8333/"},
     S3Options(endpoint="http://127.0.0.1:8333", path_style=True)),
    ({"LAGWATCH_S3_ENDPOINT": "https://s3.example", "LAGWATCH_S3_PATH_STYLE": "0"},
     S3Options(endpoint="https://s3.example", path_style=False)),
    ({"LAGWATCH_S3_PATH_STYLE": "true"}, S3Options(path_style=True)),
    ({"LAGWATCH_S3_REGION": "eu-west-3"}, S3Options(region="eu-west-3")),
    ({"LAGWATCH_S3_REGION": "  "}, S3Options()),
    ({"LAGWATCH_S3_CONNECT_TIMEOUT_S": "1.5", "LAGWATCH_S3_REQUEST_TIMEOUT_S": "9"},
     S3Options(connect_timeout_s=1.5, request_timeout_s=9.0)),
    ({"LAGWATCH_S3_RETRIES": "7"}, S3Options(retries=7)),
]  # fmt: skip


@pytest.mark.parametrize(("environ", "expected"), ENV_CASES)
def test_options_from_the_environment(environ: dict[str, str], expected: S3Options) -> None:
    assert S3Options.from_environ(environ) == expected


BAD_ENV = [
    ({"LAGWATCH_S3_ENDPOINT": "127.0.0.1:8333"}, "LAGWATCH_S3_ENDPOINT"),
    ({"LAGWATCH_S3_ENDPOINT": "ftp://host"}, "LAGWATCH_S3_ENDPOINT"),
    ({"LAGWATCH_S3_ENDPOINT": "http://key:secret@host:1"}, "must not hold credentials"),
    ({"LAGWATCH_S3_PATH_STYLE": "maybe"}, "LAGWATCH_S3_PATH_STYLE"),
    ({"LAGWATCH_S3_CONNECT_TIMEOUT_S": "soon"}, "LAGWATCH_S3_CONNECT_TIMEOUT_S"),
    ({"LAGWATCH_S3_REQUEST_TIMEOUT_S": "0"}, "LAGWATCH_S3_REQUEST_TIMEOUT_S"),
    ({"LAGWATCH_S3_RETRIES": "2.5"}, "LAGWATCH_S3_RETRIES"),
]


@pytest.mark.parametrize(("environ", "named"), BAD_ENV)
def test_a_bad_setting_is_refused_by_name(environ: dict[str, str], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        S3Options.from_environ(environ)


def test_hadoop_conf_says_what_pyarrow_is_told() -> None:
    conf = S3Options(endpoint="http://127.0.0.1:9", region="r-1", path_style=True,
                     connect_timeout_s=2, request_timeout_s=7.5, retries=4).hadoop_conf()  # fmt: skip
    assert conf == {
        "fs.s3a.endpoint": "http://127.0.0.1:9",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.endpoint.region": "r-1",
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.establish.timeout": "2000ms",
        "fs.s3a.connection.timeout": "7500ms",
        "fs.s3a.attempts.maximum": "4",
        "fs.s3a.retry.limit": "4",
    }
    aws = S3Options().hadoop_conf()
    assert "fs.s3a.endpoint" not in aws and aws["fs.s3a.path.style.access"] == "false"
    assert not any("key" in k or "secret" in k for k in conf)  # credentials stay in the env


ERROR_TEXTS = [
    # pyarrow (the AWS C++ SDK)
    ("When initiating multiple part upload for key 'x' in bucket 'b': AWS Error "
     "ACCESS_DENIED during CreateMultipartUpload operation: Access Denied", ObjectStoreRefused),
    ("AWS Error UNKNOWN (HTTP status code 403) during HeadObject operation", ObjectStoreRefused),
    ("AWS Error [code 23]: The AWS Access Key Id you provided does not exist "
     "(InvalidAccessKeyId)", ObjectStoreRefused),
    ("When listing objects under key 'samples/' in bucket 'lagwatch': AWS Error "
     "INVALID_ACCESS_KEY_ID during ListObjectsV2 operation: The access key ID you provided does "
     "not exist in our records.", ObjectStoreRefused),
    ("AWS Error SIGNATURE_DOES_NOT_MATCH during PutObject operation", ObjectStoreRefused),
    ("AWS Error NETWORK_CONNECTION during PutObject operation: curlCode: 7, Couldn't connect "
     "to server", ObjectStoreUnreachable),
    ("curlCode: 28, Timeout was reached", ObjectStoreUnreachable),
    # hadoop-aws (the AWS Java SDK)
    ("java.nio.file.AccessDeniedException: s3a://b/samples: getFileStatus on s3a://b/samples: "
     "software.amazon.awssdk.services.s3.model.S3Exception: (Service: S3, Status Code: 403, "
     "Request ID: x)", ObjectStoreRefused),
    ("org.apache.hadoop.fs.s3a.AWSClientIOException: getFileStatus on s3a://b/x: "
     "software.amazon.awssdk.core.exception.SdkClientException: Unable to execute HTTP request: "
     "Connect to 127.0.0.1:8333 failed: Connection refused", ObjectStoreUnreachable),
    ("SignatureDoesNotMatch: The request signature we calculated does not match",
     ObjectStoreRefused),
    # neither
    ("AWS Error NO_SUCH_BUCKET during ListObjectsV2 operation", None),
    ("Parquet magic bytes not found in footer", None),
    ("", None),
]  # fmt: skip


@pytest.mark.parametrize(("text", "kind"), ERROR_TEXTS)
def test_errors_are_told_apart(text: str, kind: type | None) -> None:
    assert classify(text) is kind
    reading = explain(text, "http://127.0.0.1:8333")
    if kind is None:
        assert reading is None
    elif kind is ObjectStoreRefused:
        assert "AWS_ACCESS_KEY_ID" in reading and "AWS_SECRET_ACCESS_KEY" in reading
    else:
        assert "LAGWATCH_S3_ENDPOINT" in reading and "http://127.0.0.1:8333" in reading


@pytest.mark.parametrize(
    "url", ["s3a://key:secret@bucket/samples", "s3a://key@bucket/samples", "s3a:///samples"]
)
def test_a_url_with_credentials_or_no_bucket_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="LAGWATCH_SAMPLE_LOG_URL") as caught:
        s3_filesystem(url, S3Options(endpoint="http://127.0.0.1:1"))
    assert "secret" not in str(caught.value)


@pytest.mark.parametrize("scheme", ["s3a", "s3n", "s3"])
def test_s3_urls_open_the_bucket_and_prefix(scheme: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    options = S3Options(endpoint="http://127.0.0.1:1", path_style=True)
    log = SampleLog.from_url(f"{scheme}://bucket/a/samples/", options)
    assert log.base == "bucket/a/samples" and log.store == options
    assert log.fs.type_name == "s3"


def test_jar_paths_expand_folders_and_refuse_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "b.jar").write_bytes(b"")
    (tmp_path / "a.jar").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("")
    one = tmp_path / "one.jar"
    one.write_bytes(b"")
    assert jar_paths("") == []
    assert jar_paths(f"{tmp_path}, {one}") == [str(tmp_path / "a.jar"), str(tmp_path / "b.jar"),
                                                 str(tmp_path / "one.jar"), str(one)]  # fmt: skip
    with pytest.raises(FileNotFoundError, match="LAGWATCH_SPARK_JARS"):
        jar_paths(str(tmp_path / "missing.jar"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="no \\*.jar"):
        jar_paths(str(empty))


def test_hadoop_aws_matches_pysparks_hadoop() -> None:
    """hadoop-aws must be the very version of the Hadoop client pyspark ships: classes of
    two Hadoop versions on one classpath fail at the first s3a:// call."""
    spec = importlib.util.find_spec("pyspark")
    assert spec is not None and spec.submodule_search_locations
    jars = Path(next(iter(spec.submodule_search_locations))) / "jars"
    (client,) = jars.glob("hadoop-client-api-*.jar")
    assert client.name == f"hadoop-client-api-{hadoop_version()}.jar"
