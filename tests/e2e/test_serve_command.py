"""The README's first command as a user runs it: `svclog serve` in a process of its own (its local
Ray, the gateway serving HTTP from that process), a push and a query over real HTTP, Ctrl-C, and a
second start on the same data directory that still answers with what the first one acknowledged.

The session fixture starts svclog as a library (the gateway in an actor of its own); this is the
only test of the layout `svclog serve` runs. Its own RAY_TMPDIR keeps its cluster apart from the
session's, and every process naming that directory is killed at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.multinode_cluster import free_port, kill_processes_under, wait_ready

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 120  # a loaded 2-core machine; the product target (15 s) is measured by the bench
STOP_TIMEOUT_S = 30  # the product target is 5 s; this only catches a hang
TENANT = "readme"
# the console script the README's install puts on PATH, beside this interpreter
SVCLOG = shutil.which("svclog", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))


@pytest.fixture
def serve_command(tmp_path):
    assert SVCLOG, "the svclog console script is not installed (pip install -e .)"
    ray_tmp = tempfile.mkdtemp(prefix="svsc", dir="/tmp")  # short: Ray's socket paths have a length limit
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAY_TMPDIR=ray_tmp, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
    port = free_port()
    procs: list[subprocess.Popen] = []

    def start(*flags: str) -> subprocess.Popen:
        proc = subprocess.Popen(
            [
                SVCLOG,
                "serve",
                f"-config.file={REPO / 'examples' / 'conformance.yaml'}",
                f"-server.http-listen-port={port}",
                f"-common.path-prefix={tmp_path / 'data'}",
                *flags,
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        procs.append(proc)
        wait_ready(f"http://127.0.0.1:{port}", time.time() + START_TIMEOUT_S)
        return proc

    yield start, f"http://127.0.0.1:{port}"
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    kill_processes_under(ray_tmp)
    shutil.rmtree(ray_tmp, ignore_errors=True)


def stop_with_ctrl_c(proc: subprocess.Popen) -> tuple[int, float, str]:
    began = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        raise AssertionError(f"svclog serve did not stop within {STOP_TIMEOUT_S}s:\n{out[-3000:]}") from None
    return proc.returncode, time.monotonic() - began, out


def query_lines(url: str) -> list[str]:
    now = time.time_ns()
    resp = httpx.get(
        url + "/loki/api/v1/query_range",
        params={"query": '{app="readme"}', "start": str(now - 3600 * 10**9), "end": str(now), "direction": "forward"},
        headers={"X-Scope-OrgID": TENANT},
        timeout=30,
    )
    assert resp.status_code == 200, resp.text
    return [line for stream in resp.json()["data"]["result"] for _, line in stream["values"]]


def test_svclog_serve_answers_stops_on_ctrl_c_and_keeps_what_it_acknowledged(serve_command):
    start, url = serve_command
    first = start()
    now = time.time_ns()
    sent = [f"line {i} of the readme test" for i in range(50)]
    body = {"streams": [{"stream": {"app": "readme"}, "values": [[str(now + i), line] for i, line in enumerate(sent)]}]}
    resp = httpx.post(
        url + "/loki/api/v1/push",
        content=json.dumps(body),
        headers={"X-Scope-OrgID": TENANT, "Content-Type": "application/json"},
        timeout=30,
    )
    assert resp.status_code == 204, resp.text
    assert query_lines(url) == sent
    assert httpx.get(url + "/svc/api/v1/labels", headers={"X-Scope-OrgID": TENANT}, timeout=30).json()["data"] == [
        "app"
    ]
    assert httpx.get(url + "/nope", timeout=30).text.strip() == "404 page not found"

    code, took, out = stop_with_ctrl_c(first)
    assert code == 0, out[-3000:]
    print(f"\nCtrl-C to exit: {took:.1f}s")

    start()  # same data directory: what was acknowledged is found again (flushed at stop, or in the WAL)
    assert query_lines(url) == sent


def _descendant_named(root: int, title: str) -> int:
    """The pid of the process under `root` whose command line starts with `title` (Ray's process titles)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    todo = [root]
    while todo:
        pid = todo.pop()
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(title.encode()):
                return pid
        except OSError:
            pass
        todo += children.get(pid, [])
    raise AssertionError(f"no {title} process under {root}")


def _pushed_lines(url: str, tenant: str) -> set[int]:
    """Every `line N` of the tenant's app=crash stream, paging forward past the query limit."""
    now, found = time.time_ns(), set()
    start = now - 3600 * 10**9
    while True:
        resp = httpx.get(
            url + "/loki/api/v1/query_range",
            params={
                "query": '{app="crash"}',
                "start": str(start),
                "end": str(now),
                "limit": "5000",
                "direction": "forward",
            },
            headers={"X-Scope-OrgID": tenant},
            timeout=60,
        )
        assert resp.status_code == 200, resp.text
        values = [(int(ts), line) for stream in resp.json()["data"]["result"] for ts, line in stream["values"]]
        found.update(int(line.split()[1]) for _, line in values)
        if len(values) < 5000:
            return found
        start = max(ts for ts, _ in values) + 1


@pytest.mark.parametrize("flags", [(), ("-ray.ingester-querier=true",)], ids=["default", "ingester-querier"])
def test_killing_the_ingester_and_then_the_backend_host_loses_no_acknowledged_push(serve_command, flags):
    """The default layout: kill -9 the ingester's process mid-push (Ray restarts it, it replays its WAL),
    then the backend host's, which runs the querier, scheduler, ring, compactor, ruler and pattern
    ingester (Ray restarts them all): every acknowledged entry is found, and queries answer again.
    With `ray.ingester_querier` the ingester's process pulls sub-queries too, and restarts with them."""
    start, url = serve_command
    proc = start(*flags)
    acked: list[int] = []
    stop = threading.Event()

    def push() -> None:
        sent = 0
        with httpx.Client(timeout=30) as client:
            while not stop.is_set():
                now = time.time_ns()
                values = [[str(now + k), f"line {sent + k}"] for k in range(100)]
                body = json.dumps({"streams": [{"stream": {"app": "crash"}, "values": values}]})
                try:
                    resp = client.post(
                        url + "/loki/api/v1/push",
                        content=body,
                        headers={"X-Scope-OrgID": "crash", "Content-Type": "application/json"},
                    )
                    if resp.status_code == 204:
                        acked.extend(range(sent, sent + 100))
                except httpx.HTTPError:
                    pass  # the service is restarting a component: not acknowledged
                sent += 100

    pusher = threading.Thread(target=push, daemon=True)
    pusher.start()
    victims = []
    for title in ("ray::IngesterActor", "ray::BackendHost"):
        time.sleep(1.5)
        victims.append(_descendant_named(proc.pid, title))
        os.kill(victims[-1], signal.SIGKILL)
    time.sleep(2)
    stop.set()
    pusher.join(60)
    wait_ready(url, time.time() + START_TIMEOUT_S)
    assert acked, "nothing was acknowledged"
    deadline = time.time() + 60
    found: set[int] = set()
    while time.time() < deadline and not set(acked) <= found:  # restarted parts rejoin, queriers pull again
        try:
            found = _pushed_lines(url, "crash")
        except (AssertionError, httpx.HTTPError):
            time.sleep(1)
    print(f"\nacknowledged {len(acked)}, found {len(found)}")
    assert set(acked) <= found, f"{len(set(acked) - found)} acknowledged entries lost"
    survivors = [_descendant_named(proc.pid, title) for title in ("ray::IngesterActor", "ray::BackendHost")]
    assert not set(survivors) & set(victims)  # new processes answered
