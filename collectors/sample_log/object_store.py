"""The sample log on an S3-compatible object store: how to reach it, and what its errors mean.

On more than one machine the log is where the pieces meet: collectors on one host write it,
Spark executors on others read it. ``LAGWATCH_SAMPLE_LOG_URL=s3a://bucket/prefix`` names it
(Hadoop's scheme, which Spark reads with ``hadoop-aws``; pyarrow writes the same objects); the
rest are settings, read from the environment by every process alike
(:meth:`S3Options.from_environ`):

- ``LAGWATCH_S3_ENDPOINT``: the store's address, ``http(s)://host:port`` (empty: AWS itself);
- ``LAGWATCH_S3_REGION`` (``us-east-1``): the region requests are signed for;
- ``LAGWATCH_S3_PATH_STYLE`` (``1`` with an endpoint, else ``0``): ``host/bucket/key`` rather
  than ``bucket.host/key``, which most self-hosted stores need;
- ``LAGWATCH_S3_CONNECT_TIMEOUT_S``, ``LAGWATCH_S3_REQUEST_TIMEOUT_S`` (5, 30) and
  ``LAGWATCH_S3_RETRIES`` (3): how long one request may take, and how often it is tried;
- the credentials are the AWS SDK's own variables, ``AWS_ACCESS_KEY_ID`` and
  ``AWS_SECRET_ACCESS_KEY`` (and ``AWS_SESSION_TOKEN``), never part of the URL, never logged.
  Without them the SDK's default chain applies (a profile, an instance role).

The same options configure Spark's ``s3a`` connector (``spark_jobs.session``), so both sides
address the same objects. Pure module: pyarrow only.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Concatenate, Final, ParamSpec, TypeVar
from urllib.parse import urlsplit

import pyarrow.fs as pafs

__all__ = [
    "ObjectStoreError",
    "ObjectStoreRefused",
    "ObjectStoreUnreachable",
    "S3Options",
    "classify",
    "explain",
    "s3_filesystem",
    "translated",
]

_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off"})
# What pyarrow (the AWS C++ SDK) and hadoop-aws (the AWS Java SDK) say when the store refuses
# the signature or the key, and when nothing answers at the address.
_REFUSED: Final = re.compile(
    r"InvalidAccessKeyId|INVALID_ACCESS_KEY_ID|SignatureDoesNotMatch|SIGNATURE_DOES_NOT_MATCH"
    r"|ACCESS_DENIED|AccessDenied|InvalidClientTokenId"
    r"|Status Code: 403|HTTP status code 403|response code 403",
    re.IGNORECASE,
)
_UNREACHABLE: Final = re.compile(
    r"NETWORK_CONNECTION|Couldn't connect|Connection refused|Connect to \S+ failed"
    r"|timed out|Timeout was reached|Could not resolve host|UnknownHost|Unable to execute HTTP",
    re.IGNORECASE,
)


class ObjectStoreError(OSError):
    """The sample log's object store failed a request; the message names the setting at fault.

    ``reading`` is that message without the SDK's own text, for a page or a health check."""

    reading: str = ""


class ObjectStoreRefused(ObjectStoreError):
    """The store answered, and refused the credentials: retrying will not help."""


class ObjectStoreUnreachable(ObjectStoreError):
    """Nothing answered at the endpoint in time: the same request may succeed later."""


def _flag(environ: Mapping[str, str], name: str, default: bool) -> bool:
    text = environ.get(name, "").strip().lower()
    if not text:
        return default
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"{name}={text!r}: expected 1 or 0")


def _number(environ: Mapping[str, str], name: str, default: float) -> float:
    text = environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{name}={text!r}: expected a number of seconds") from None
    if value <= 0:
        raise ValueError(f"{name}={text!r}: expected a positive number")
    return value


@dataclass(frozen=True, slots=True)
class S3Options:
    """How to reach the store; credentials are not held here (see :meth:`filesystem`)."""

    endpoint: str = ""
    region: str = "us-east-1"
    path_style: bool = False
    connect_timeout_s: float = 5.0
    request_timeout_s: float = 30.0
    retries: int = 3

    def __post_init__(self) -> None:
        if self.endpoint:
            parts = urlsplit(self.endpoint)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(
                    f"LAGWATCH_S3_ENDPOINT={self.endpoint!r}: expected http(s)://host:port"
                )
            if parts.username or parts.password:
                raise ValueError(
                    "LAGWATCH_S3_ENDPOINT must not hold credentials: set AWS_ACCESS_KEY_ID and "
                    "AWS_SECRET_ACCESS_KEY in the environment"
                )

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> S3Options:
        """The options the ``LAGWATCH_S3_*`` variables give (defaults for the unset ones)."""
        env = os.environ if environ is None else environ
        endpoint = env.get("LAGWATCH_S3_ENDPOINT", "").strip().rstrip("/")
        retries = _number(env, "LAGWATCH_S3_RETRIES", 3)
        if retries != int(retries):
            raise ValueError(f"LAGWATCH_S3_RETRIES={retries}: expected a whole number")
        return cls(
            endpoint=endpoint,
            region=env.get("LAGWATCH_S3_REGION", "").strip() or "us-east-1",
            path_style=_flag(env, "LAGWATCH_S3_PATH_STYLE", bool(endpoint)),
            connect_timeout_s=_number(env, "LAGWATCH_S3_CONNECT_TIMEOUT_S", 5.0),
            request_timeout_s=_number(env, "LAGWATCH_S3_REQUEST_TIMEOUT_S", 30.0),
            retries=int(retries),
        )

    @property
    def where(self) -> str:
        """The store as a message names it: its endpoint, or AWS's region."""
        return self.endpoint or f"AWS S3 ({self.region})"

    def filesystem(self) -> pafs.S3FileSystem:
        """A pyarrow filesystem on the store, with the credentials the environment holds now.

        Explicit credentials (not the SDK's chain) when both variables are set, so that what
        is used is exactly what a refusal names.
        """
        key = os.environ.get("AWS_ACCESS_KEY_ID")
        secret = os.environ.get("AWS_SECRET_ACCESS_KEY")
        credentials = {}
        if key and secret:
            credentials = {
                "access_key": key,
                "secret_key": secret,
                "session_token": os.environ.get("AWS_SESSION_TOKEN") or None,
            }
        endpoint = {}
        if self.endpoint:
            parts = urlsplit(self.endpoint)
            endpoint = {"endpoint_override": parts.netloc, "scheme": parts.scheme}
        return pafs.S3FileSystem(
            region=self.region,
            connect_timeout=self.connect_timeout_s,
            request_timeout=self.request_timeout_s,
            retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=self.retries),
            force_virtual_addressing=not self.path_style,
            **endpoint,
            **credentials,
        )

    def hadoop_conf(self) -> dict[str, str]:
        """The same options for Hadoop's ``s3a`` connector (``spark.hadoop.`` + key).

        No credentials here: Spark copies the driver's ``AWS_ACCESS_KEY_ID`` and
        ``AWS_SECRET_ACCESS_KEY`` into the job's Hadoop configuration itself, redacted in its
        UI and logs, and executors get them with each task, whatever their own environment.
        """
        conf = {
            "fs.s3a.endpoint.region": self.region,
            "fs.s3a.path.style.access": "true" if self.path_style else "false",
            "fs.s3a.connection.establish.timeout": f"{int(self.connect_timeout_s * 1000)}ms",
            "fs.s3a.connection.timeout": f"{int(self.request_timeout_s * 1000)}ms",
            "fs.s3a.attempts.maximum": str(self.retries),
            "fs.s3a.retry.limit": str(self.retries),
        }
        if self.endpoint:
            conf["fs.s3a.endpoint"] = self.endpoint
            conf["fs.s3a.connection.ssl.enabled"] = str(self.endpoint.startswith("https:")).lower()
        return conf


def classify(text: str) -> type[ObjectStoreError] | None:
    """Which failure an SDK's error text describes: refused credentials, no answer, or
    neither (None)."""
    if _REFUSED.search(text):
        return ObjectStoreRefused
    if _UNREACHABLE.search(text):
        return ObjectStoreUnreachable
    return None


def explain(text: str, where: str) -> str | None:
    """A user's reading of an SDK's error: what failed and the setting to look at, or None
    when the text is neither a refusal nor silence."""
    kind = classify(text)
    if kind is ObjectStoreRefused:
        return (
            f"the sample log's object store ({where}) refused the credentials: check "
            f"AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        )
    if kind is ObjectStoreUnreachable:
        return (
            f"the sample log's object store ({where}) does not answer: check "
            f"LAGWATCH_S3_ENDPOINT and that the store is running"
        )
    return None


def s3_filesystem(url: str, options: S3Options | None) -> tuple[pafs.FileSystem, str]:
    """The filesystem and base path of an ``s3a://``/``s3n://``/``s3://`` URL (the same
    objects: pyarrow says ``s3``, Hadoop ``s3a``). Credentials in the URL are refused: they
    would end up in logs and pages."""
    parts = urlsplit(url)
    if parts.username or parts.password or "@" in parts.netloc:
        raise ValueError(
            "LAGWATCH_SAMPLE_LOG_URL must not hold credentials: set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY in the environment"
        )
    if not parts.netloc:
        raise ValueError(f"LAGWATCH_SAMPLE_LOG_URL={url!r}: expected s3a://bucket/prefix")
    options = options if options is not None else S3Options.from_environ()
    return options.filesystem(), f"{parts.netloc}/{parts.path.strip('/')}".rstrip("/")


P = ParamSpec("P")
R = TypeVar("R")


def translated(method: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Any, P], R]:
    """A ``SampleLog`` method whose object-store failures are raised as
    :class:`ObjectStoreRefused` / :class:`ObjectStoreUnreachable`, naming the settings, with
    the SDK's own text after it (the caller decides to retry, spool or give up by the type)."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        except ObjectStoreError:
            raise
        except OSError as exc:
            store = getattr(self, "store", None)
            if store is None:
                raise
            text = str(exc)
            kind, reading = classify(text), explain(text, store.where)
            if kind is None or reading is None:
                raise
            error = kind(f"{reading} ({text.strip()[:500]})")
            error.reading = reading
            raise error from exc

    return wrapper
