"""Real JavaScript shippers from npm against the running service, each read back exactly.

winston-loki (protobuf + snappy), pino-loki (JSON) and the OpenTelemetry JS logs exporters
(OTLP JSON and OTLP protobuf over HTTP) run in node via tests/e2e/js/ship.js, installed from
tests/e2e/js/package-lock.json with `npm ci` into a cache directory once per lock file.
Shippers stamp entries with millisecond clocks, so lines logged together share a timestamp:
they must come back in the order they were logged. Without node and npm the tests skip,
except under CI (CI=true), where they fail.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from svclog.client import Client
from tests.e2e.test_real_clients import _read_back as read_back

pytestmark = [pytest.mark.ray, pytest.mark.requires_binary("node", "npm")]  # optional: see README
NS = 1_000_000_000
TENANT = "js-clients"
JS_DIR = Path(__file__).resolve().parent / "js"
INSTALL_FILES = ("package.json", "package-lock.json")
Shipper = Callable[[str, str, list[str]], dict]


def _cache_root() -> Path:
    base = os.environ.get("SVCLOG_JS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "svclog-e2e-js"
    )
    return Path(base)


def _install(node: str, npm: str) -> Path:
    """`npm ci` of the lock file into a directory named by its hash (done once, then reused)."""
    digest = hashlib.sha256(b"".join((JS_DIR / name).read_bytes() for name in INSTALL_FILES)).hexdigest()[:16]
    target = _cache_root() / digest
    marker = target / "node_modules" / ".svclog-installed"
    if not marker.exists():
        target.mkdir(parents=True, exist_ok=True)
        for name in INSTALL_FILES:
            shutil.copyfile(JS_DIR / name, target / name)
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=target, capture_output=True, text=True, timeout=600, check=False
        )
        if done.returncode != 0:
            pytest.fail(f"npm ci failed in {target}:\n{done.stdout}\n{done.stderr}")
        marker.write_text(digest)
    shutil.copyfile(JS_DIR / "ship.js", target / "ship.js")  # beside node_modules, so require() finds them
    return target


@pytest.fixture(scope="session")
def ship(svc) -> Shipper:
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip(f"node and npm are needed for the JavaScript shippers (node={node}, npm={npm})")
    workdir = _install(node, npm)

    def run(client: str, run_id: str, lines: list[str]) -> dict:
        config = {"client": client, "url": svc.url, "tenant": TENANT, "run": run_id, "lines": lines}
        done = subprocess.run(
            [node, "ship.js", json.dumps(config)], cwd=workdir, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0 and not done.stderr.strip(), f"{client}: {done.stderr}"
        return json.loads(done.stdout.strip().splitlines()[-1])

    return run


def _lines_for(run_id: str) -> list[str]:
    # each line names its run; the words after it are out of text order, so a sort would show
    words = ["zulu checkout started", "alpha payment authorised", "mike order shipped ✓", "bravo ünïcode done"]
    return [f"{run_id} {word}" for word in words]


def _read_back(svc, query: str, start: int, want: int, timeout: float = 15.0) -> list[dict]:
    """Streams of `query` read forward, once `want` entries are there."""
    return read_back(Client(svc.url, tenant=TENANT, timeout=60), query, start, want, timeout)


def _one_stream(streams: list[dict]) -> tuple[dict, list[str]]:
    assert len(streams) == 1, streams
    return streams[0]["stream"], [line for _, line in streams[0]["values"]]


def test_winston_loki_protobuf_snappy(svc, ship):
    run_id, start = uuid.uuid4().hex[:10], time.time_ns() - NS
    lines = _lines_for(run_id)
    assert ship("winston-loki", run_id, lines)["contentType"] == "application/x-protobuf"  # snappy loaded
    labels, got = _one_stream(_read_back(svc, f'{{app="winston-loki", run="{run_id}"}}', start, len(lines)))
    assert labels == {"app": "winston-loki", "run": run_id, "level": "info"}
    assert got == [f'{line} {{"level":"info"}}' for line in lines]  # winston-loki appends the meta as JSON


def test_pino_loki(svc, ship):
    run_id, start = uuid.uuid4().hex[:10], time.time_ns() - NS
    lines = _lines_for(run_id)
    ship("pino-loki", run_id, lines)
    labels, got = _one_stream(_read_back(svc, f'{{app="pino-loki", run="{run_id}"}}', start, len(lines)))
    assert labels == {"app": "pino-loki", "run": run_id, "level": "info"}
    records = [json.loads(line) for line in got]  # pino's own JSON line, hostname and pid left out
    assert [(r["msg"], r["level"]) for r in records] == [(line, 30) for line in lines]
    assert all(set(r) == {"level", "time", "msg"} for r in records)


@pytest.mark.parametrize(
    "client, content_type", [("otel-json", "application/json"), ("otel-proto", "application/x-protobuf")]
)
def test_opentelemetry_js_otlp_exporter(svc, ship, client, content_type):
    run_id, start = uuid.uuid4().hex[:10], time.time_ns() - NS
    lines = _lines_for(run_id)
    assert ship(client, run_id, lines)["contentType"] == content_type
    # observed_timestamp is structured metadata that differs per record: drop it to see one stream
    query = f'{{service_name="{client}-{run_id}"}} | drop observed_timestamp'
    labels, got = _one_stream(_read_back(svc, query, start, len(lines)))
    assert labels == {
        "service_name": f"{client}-{run_id}",
        "run": run_id,
        "scope_name": "svclog-e2e",
        "severity_text": "INFO",
    }
    assert got == lines
