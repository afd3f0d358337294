"""From the config's S3 sections to the S3 filesystem's settings (no server needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from svclog.config import load_config, object_store_uri
from svclog.storage.s3 import open_s3, redact

SCHEMA = """
schema_config:
  configs:
    - {from: 2020-10-24, store: tsdb, object_store: s3, schema: v13, index: {prefix: index_, period: 24h}}
"""


def _options(uri: str) -> tuple[dict, str]:
    fs, root = open_s3(uri)
    return fs.__reduce__()[1][0], root  # the settings the filesystem was built with


def _uri(tmp_path: Path, storage: str, *flags: str) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(storage + SCHEMA)
    return object_store_uri(load_config(None, [f"-config.file={path}", *flags]))


def test_storage_config_aws_with_env_expansion(tmp_path, monkeypatch):
    monkeypatch.setenv("S3_ENDPOINT", "minio.local:9000")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AK")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s/+cr=t")
    monkeypatch.delenv("S3_REGION", raising=False)
    uri = _uri(
        tmp_path,
        """
storage_config:
  aws:
    endpoint: ${S3_ENDPOINT}
    bucketnames: svclog-chunks,other
    access_key_id: ${AWS_ACCESS_KEY_ID}
    secret_access_key: ${AWS_SECRET_ACCESS_KEY}
    insecure: true
    s3forcepathstyle: true
    region: ${S3_REGION:-eu-west-1}
    backoff_config: {max_retries: 7}
""",
        "-config.expand-env=true",
    )
    options, root = _options(uri)
    assert root == "svclog-chunks"  # the first of the buckets
    assert (options["endpoint_override"], options["scheme"], options["region"]) == (
        "minio.local:9000",
        "http",
        "eu-west-1",
    )
    assert (options["access_key"], options["secret_key"]) == ("AK", "s/+cr=t")
    assert options["force_virtual_addressing"] is False  # path-style
    assert options["allow_delayed_open"] is True  # small objects go up in one PUT
    assert "max_attempts=7" in uri
    assert "cr%3Dt" not in redact(uri) and "secret_key=%2A%2A%2A" in redact(uri)


def test_without_expand_env_the_placeholders_stay(tmp_path, monkeypatch):
    monkeypatch.setenv("S3_ENDPOINT", "minio.local:9000")
    uri = _uri(tmp_path, "storage_config: {aws: {endpoint: '${S3_ENDPOINT}', bucketnames: b}}\n")
    assert _options(uri)[0]["endpoint_override"] == "${S3_ENDPOINT}"


def test_common_storage_s3_and_virtual_hosted_default(tmp_path):
    uri = _uri(tmp_path, "common: {storage: {s3: {endpoint: 'https://s3.example.com/', bucketnames: logs}}}\n")
    options, root = _options(uri)
    assert root == "logs"
    assert (options["endpoint_override"], options["scheme"]) == ("s3.example.com", "https")
    assert options["force_virtual_addressing"] is True  # s3forcepathstyle defaults to false, as the reference
    assert not options["access_key"]  # no keys configured: the SDK's credential chain (env, profile, IAM role)


def test_s3_url_form_with_keys_and_region_host(tmp_path):
    options, root = _options(_uri(tmp_path, "storage_config: {aws: {s3: 's3://AK:S%2FK@us-west-2/my-bucket'}}\n"))
    assert root == "my-bucket"
    assert (options["access_key"], options["secret_key"], options["region"]) == ("AK", "S/K", "us-west-2")
    assert not options["endpoint_override"]
    options, root = _options(_uri(tmp_path, "storage_config: {aws: {s3: 's3://minio.local:9000/b', insecure: true}}\n"))
    assert (root, options["endpoint_override"], options["scheme"]) == ("b", "minio.local:9000", "http")


def test_bad_locations_are_refused():
    with pytest.raises(ValueError, match="names no bucket"):
        open_s3("s3://?region=x")
    with pytest.raises(ValueError, match="unknown S3 location setting"):
        open_s3("s3://b?regoin=x")


def test_reference_s3_flags(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(SCHEMA)
    cfg = load_config(
        None,
        [
            f"-config.file={path}",
            "-s3.buckets=fb",
            "-s3.endpoint=127.0.0.1:9",
            "-s3.insecure=true",
            "-s3.force-path-style=true",
            "-s3.access-key-id=k",
            "-s3.secret-access-key=s",
            "-s3.region=r",
        ],
    )
    options, root = _options(object_store_uri(cfg))
    assert (root, options["endpoint_override"], options["scheme"], options["region"]) == (
        "fb",
        "127.0.0.1:9",
        "http",
        "r",
    )
    assert (options["access_key"], options["secret_key"], options["force_virtual_addressing"]) == ("k", "s", False)


def test_example_s3_config_puts_every_store_user_on_the_bucket(monkeypatch):
    from svclog.actors.ruler_actor import rule_store_uri
    from svclog.config import wal_dir

    example = Path(__file__).resolve().parents[2] / "examples" / "s3.yaml"
    monkeypatch.setenv("S3_ENDPOINT", "127.0.0.1:8333")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AK")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "SK")
    cfg = load_config(None, [f"-config.file={example}", "-config.expand-env=true"])
    chunks = object_store_uri(cfg)  # chunks, index, compactor (retention, deletes, sweep), delete requests
    assert chunks == rule_store_uri(cfg)  # rule groups too
    options, root = _options(chunks)
    assert root == "svclog-chunks"
    assert (options["endpoint_override"], options["scheme"], options["access_key"]) == ("127.0.0.1:8333", "http", "AK")
    assert options["force_virtual_addressing"] is False
    assert wal_dir(cfg).startswith("/")  # the WAL stays on local disk
