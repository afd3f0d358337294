"""An S3 filesystem for the object store, from an `s3://bucket[/prefix]?...` location.

The location's query carries the settings the config's `storage_config.aws` /
`common.storage.s3` sections name (see config/paths.py). Everything is set so S3 is used
as an object store, not a filesystem: single PUTs for small objects (no multipart
round trips), retries with backoff on 5xx, throttling and dropped connections, and
path-style or virtual-hosted addressing as configured.
"""

from __future__ import annotations

import urllib.parse

import pyarrow.fs as pafs

DEFAULT_ATTEMPTS = 3  # the AWS SDK's standard mode; `backoff_config.max_retries` sets it
_SECRET_PARAMS = ("secret_key", "session_token")


def _flag(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


def open_s3(uri: str) -> tuple[pafs.FileSystem, str]:
    """(S3FileSystem, root path `bucket[/prefix]`) for an s3:// location."""
    parts = urllib.parse.urlsplit(uri)
    bucket = parts.netloc.rsplit("@", 1)[-1]
    if not bucket:
        raise ValueError(f"object store location {redact(uri)!r} names no bucket")
    params = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    endpoint = params.pop("endpoint_override", "")
    path_style = _flag(params.pop("path_style", "false"))
    attempts = max(1, int(params.pop("max_attempts", DEFAULT_ATTEMPTS)))
    options: dict = {
        "scheme": params.pop("scheme", "https"),
        "connect_timeout": float(params.pop("connect_timeout", "2")),
        # Without it every object, however small, is a multipart upload (3 requests instead of 1).
        "allow_delayed_open": True,
        # Standard mode: exponential backoff with jitter on 5xx, throttling and connection errors.
        "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=attempts),
    }
    if endpoint:
        options["endpoint_override"] = endpoint
        # pyarrow addresses a custom endpoint path-style unless told otherwise; the reference
        # (s3forcepathstyle: false) uses virtual-hosted buckets there too.
        options["force_virtual_addressing"] = not path_style
    region = params.pop("region", "")
    if region:  # else the SDK's: AWS_REGION, the profile, instance metadata, or us-east-1
        options["region"] = region
    access_key = params.pop("access_key", "")
    secret_key = params.pop("secret_key", "")
    session_token = params.pop("session_token", "")
    if access_key:  # else the SDK's credential chain: env vars, profile, IAM role
        options.update(access_key=access_key, secret_key=secret_key, session_token=session_token)
    if params:
        raise ValueError(f"unknown S3 location setting(s): {', '.join(sorted(params))}")
    root = bucket + parts.path.rstrip("/")
    return pafs.S3FileSystem(**options), root


def redact(uri: str) -> str:
    """The location with its secrets blanked, for messages and logs."""
    parts = urllib.parse.urlsplit(uri)
    if not parts.query:
        return uri
    params = [
        (k, "***" if k in _SECRET_PARAMS else v) for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    ]
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(params)))
