"""Shared fixtures. The `svc` fixture starts ONE Ray cluster and svclog topology per test session."""

from __future__ import annotations

import os
import re
import shutil
import socket
import time
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Service:
    def __init__(self, url: str, cfg, handles: dict):
        self.url = url
        self.cfg = cfg
        self.handles = handles

    def ingester_pid(self, index: int = 0) -> int:
        import ray

        return ray.get(self.handles["ingesters"][index].pid.remote(), timeout=60)


class StartPoller:
    """Polls /ready and a push every 50 ms from before the start until stopped: the statuses seen."""

    def __init__(self, url: str):
        import collections
        import threading

        self.url, self.seen, self.done = url, collections.Counter(), threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        import httpx

        body = '{"streams": [{"stream": {"app": "start-poller"}, "values": [["%d", "x"]]}]}'
        with httpx.Client(timeout=5, headers={"X-Scope-OrgID": "start-poller"}) as client:
            while not self.done.is_set():
                for method, path, content in (
                    ("GET", "/ready", None),
                    ("POST", "/loki/api/v1/push", body % time.time_ns()),
                ):
                    try:
                        status = client.request(
                            method, self.url + path, content=content, headers={"Content-Type": "application/json"}
                        ).status_code
                    except httpx.HTTPError:
                        status = "refused"
                    self.seen[(path, status)] += 1
                time.sleep(0.05)

    def stop(self):
        self.done.set()
        self.thread.join(10)
        return dict(self.seen)


class Receiver:
    """A real HTTP endpoint recording POSTs: stands in for Alertmanager and a remote-write target."""

    def __init__(self):
        import http.server
        import threading

        self.requests: list[tuple[str, dict, bytes]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                outer.requests.append((self.path, dict(self.headers), body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def posted(self, path_prefix: str) -> list[tuple[str, dict, bytes]]:
        return [r for r in list(self.requests) if r[0].startswith(path_prefix)]


@pytest.fixture(scope="session")
def receiver():
    rec = Receiver()
    yield rec
    rec.server.shutdown()


@pytest.fixture(scope="session")
def svc(tmp_path_factory, receiver):
    """A running svclog (local Ray, real Serve HTTP) shared by every end-to-end test."""
    import httpx

    from svclog import launch as topology
    from svclog.config import load_config

    data = tmp_path_factory.mktemp("svclog-data")
    overrides = data / "overrides.yaml"  # per-tenant limits; tests add their own tenants (test_limits.py)
    overrides.write_text("overrides: {}\n")
    port = _free_port()
    cfg = load_config(
        None,
        [
            f"-common.path-prefix={data}",
            f"-server.http-listen-port={port}",
            "-querier.query-ingesters-within=0",
            "-querier.multi-tenant-queries-enabled=true",
            "-ray.num-ingesters=2",
            "-ray.num-queriers=2",
            "-limits.reject-old-samples=false",
            "-ingester.flush-check-period=1s",
            "-limits.max-entries-limit-per-query=100000",
            f"-runtime-config.file={overrides}",
            "-runtime-config.reload-period=1s",
            # ruler and compactor fast enough for end-to-end tests, reporting to the test receiver
            "-ruler.enable-api=true",
            f"-ruler.alertmanager-url={receiver.url}/alertmanager",
            "-ruler.evaluation-interval=1s",
            "-ruler.poll-interval=1s",
            "-ruler.remote-write.enabled=true",
            f"-ruler.remote-write.client.url={receiver.url}/api/v1/write",
            "-compactor.retention-enabled=true",
            "-compactor.compaction-interval=2s",
            "-compactor.delete-request-cancel-period=1s",
            "-compactor.retention-delete-delay=5s",
            "-ray.num-rulers=2",  # sweeps within a test; sharded rulers
            "-pattern-ingester.enabled=true",  # push -> tee -> pattern actor -> /patterns (e2e/test_patterns.py)
            # e2e answers are compared without the detected_level metadata (unit tests cover discovery)
            "-validation.discover-log-levels=false",
        ],
    )
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    url = f"http://127.0.0.1:{port}"
    poller = StartPoller(url)  # what a shipper would see during the start (tests/e2e/test_start_window.py)
    handles = topology.start(cfg)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if httpx.get(url + "/ready", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    else:
        pytest.fail("svclog did not become ready within 120 s")
    service = Service(url, cfg, handles)
    service.start_statuses = poller.stop()
    yield service
    import ray
    from ray import serve

    topology.stop(handles)
    serve.shutdown()
    ray.shutdown()


# ---------------------------------------------------------------- no silent skips in CI


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


README = Path(__file__).resolve().parents[1] / "README.md"


def optional_binaries() -> set[str]:
    """The binaries the README names as optional (its "Optional binaries:" line, each in backticks)."""
    for line in README.read_text().splitlines():
        if line.startswith("Optional binaries:"):
            return set(re.findall(r"`([^`]+)`", line))
    return set()


def skip_allowed_in_ci(item: pytest.Item) -> bool:
    """A test marked `requires_binary(...)` may skip under CI=true when one of its binaries, each an
    optional binary the README names, is missing from the machine."""
    marker = item.get_closest_marker("requires_binary")
    if marker is None:
        return False
    names = set(marker.args)
    return bool(names) and names <= optional_binaries() and any(shutil.which(n) is None for n in names)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI=true a skipped test is a failed one: a missing prerequisite (the shared conformance
    cases, a tool the test extra installs, a route the service should serve) must be fixed, not
    hidden behind a skip. The one exception: a missing optional binary (see skip_allowed_in_ci)."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and in_ci() and not hasattr(report, "wasxfail") and not skip_allowed_in_ci(item):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, which is not allowed: {reason}"
