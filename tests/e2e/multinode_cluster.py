"""Three Ray nodes that share only an S3 bucket, replication factor 3: lose a node under write load.

Run by tests/e2e/test_multinode.py in a subprocess (its own Ray cluster, apart from the session
fixture's local Ray). Stand-alone: `python tests/e2e/multinode_cluster.py`. Prints one
`RESULT {json}` line; exits 0 only when every acknowledged entry is found.

Share-nothing on one machine: each node's raylet (and so every worker it starts) runs in a
directory of its own, and `common.path_prefix` is relative, so the WAL, caches and working
directories of the actors on a node live in that node's directory, as they would on that
machine's own disk. The object store is a SeaweedFS S3 server (tests/storage/s3_server.py),
configured in the reference's shape with the keys from the environment.

Node loss is simulated the way a cloud node dies: the node's directory is deleted (its disk is
gone) and its raylet and workers are removed (`Cluster.remove_node`) while a writer keeps pushing.
The queriers read only the bucket here (the entries are older than `query_ingesters_within`), so
after the survivors flush, every acknowledged entry can only come from chunks the other nodes'
ingesters wrote to S3, and every querier, on every node, is asked directly.

Before the loss, three actor paths of one tenant run a long query each at once (hundreds of
sub-queries): the scheduler's hand-outs to each node's querier, while all three had work queued,
must split a third each per node (its turns are kept per node).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

TENANT = "multinode"
BASE = 1_793_491_200 * 10**9  # 2026-11-01T00:00:00Z: older than query_ingesters_within, so store-only reads
STREAMS = 12
ENTRIES_PER_PUSH = 25
PATH_PREFIX = "svclog-data"  # relative: under each node's own directory
S3_CONFIG = """
common:
  path_prefix: {path_prefix}
  replication_factor: 3
  storage:
    s3:
      endpoint: ${{S3_ENDPOINT}}
      bucketnames: svclog-chunks
      access_key_id: ${{AWS_ACCESS_KEY_ID}}
      secret_access_key: ${{AWS_SECRET_ACCESS_KEY}}
      insecure: true
      s3forcepathstyle: true
      region: us-east-1
schema_config:
  configs:
    - {{from: 2020-10-24, store: tsdb, object_store: s3, schema: v13, index: {{prefix: index_, period: 24h}}}}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def retry_until(send, status: int, deadline: float, pause: float) -> str:
    """Send until the answer has `status`; "" then, else (at the deadline) the last answer or error."""
    last = "no attempt"
    while time.time() < deadline:
        try:
            resp = send()
            if resp.status_code == status:
                return ""
            last = f"{resp.status_code} {resp.text[:200]}"
        except httpx.HTTPError as err:
            last = repr(err)
        time.sleep(pause)
    return last


def wait_ready(url: str, deadline: float) -> None:
    last = retry_until(lambda: httpx.get(url + "/ready", timeout=2), 200, deadline, 0.5)
    if last:
        raise TimeoutError(f"svclog did not become ready: {last}")


def agent_ports() -> dict:
    """Fixed ports for a node's agents: with none given, its raylet waits a fixed ~30 s for the agents
    to write theirs to a file and aborts past it, which a loaded 2-core machine can exceed (the
    agents spend that long importing); with a port given it only connects, retrying."""
    return {
        "metrics_agent_port": free_port(),
        "runtime_env_agent_port": free_port(),
        "dashboard_agent_listen_port": free_port(),
    }


def start_node(start, attempts: int = 3):
    """`start()` (a Cluster, or a node added to one), again when Ray gives up on a node that did not
    register within its fixed 30 s: on a loaded 2-core machine the GCS can answer too late. The
    half-started node's processes are killed first (they name this run's Ray temp dir)."""
    for attempt in range(attempts):
        try:
            return start()
        except Exception as err:
            if "timed out during startup" not in str(err) or attempt == attempts - 1:
                raise
            print(f"node start timed out (attempt {attempt + 1}), starting it again", file=sys.stderr, flush=True)
            kill_processes_under(os.environ["RAY_TMPDIR"])
            time.sleep(2)
    raise AssertionError("unreachable")


def kill_processes_under(marker: str) -> int:
    """SIGKILL every process of this user whose command line names `marker` (a Ray temp dir of this
    run's own: each raylet, GCS and worker of the run's cluster names it), and their descendants
    (Ray's agents retitle themselves `ray::DashboardAgent` and outlived a run by minutes, 130 MB
    each), except this one."""
    if not marker or marker.rstrip("/") in ("/tmp", "/tmp/ray"):
        raise ValueError(f"refusing to kill by the shared path {marker!r}")
    marker = marker.rstrip("/") + "/"  # paths under it, never a sibling that shares its prefix
    children: dict[int, list[int]] = {}
    doomed: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry))
        if marker in cmdline:
            doomed.append(int(entry))
    seen: set[int] = set()
    while doomed:
        pid = doomed.pop()
        if pid in seen or pid == os.getpid():
            continue
        seen.add(pid)
        doomed.extend(children.get(pid, ()))
    killed = 0
    for pid in seen:
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except OSError:
            pass
    return killed


def private_ray_tmpdir(prefix: str) -> str:
    """The Ray temp dir of this run alone: the one run_cluster_script made, or a new one (short:
    Ray's socket paths have a length limit). Every process of the run's cluster names it."""
    return os.environ.get("SVCLOG_TEST_RAY_TMPDIR") or tempfile.mkdtemp(prefix=prefix, dir="/tmp")


def run_cluster_script(script: Path, timeout_s: float) -> tuple[int, str, str]:
    """Run a cluster script in its own session and Ray temp dir; kill all it started on the way out."""
    repo = script.parents[2]
    ray_tmp = tempfile.mkdtemp(prefix="svmn", dir="/tmp")  # short: Ray's socket paths have a length limit
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(
        RAY_TMPDIR=ray_tmp,
        SVCLOG_TEST_RAY_TMPDIR=ray_tmp,
        PYTHONPATH=os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH")])),
    )
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=repo,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\n[killed after {timeout_s} s]"
    finally:
        kill_processes_under(ray_tmp)  # Ray daemons leave the script's process group
        if proc.returncode:  # in front: the assertions show the end of err, the script's own error
            err = control_plane_logs(Path(ray_tmp)) + "\n--- the script's stderr ---\n" + err
        shutil.rmtree(ray_tmp, ignore_errors=True)
    return proc.returncode, out, err


CONTROL_PLANE_LOGS = ("gcs_server.out", "gcs_server.err", "monitor.log", "monitor.err", "raylet.err")


def control_plane_logs(ray_tmp: Path, tail_lines: int = 15) -> str:
    """The last lines of the head's GCS, autoscaler monitor and raylet logs: a failed run's temp dir
    is deleted with it, and a dead GCS (its driver only says "Failed to connect to GCS") is
    otherwise a mystery."""
    parts = []
    for name in CONTROL_PLANE_LOGS:
        for path in sorted(ray_tmp.glob(f"**/session_2*/logs/{name}")):  # not the session_latest link
            lines = path.read_text(errors="replace").splitlines()[-tail_lines:]
            parts.append(f"--- {path.relative_to(ray_tmp)} ---\n" + "\n".join(lines))
    return "\n" + "\n".join(parts) if parts else "\n[no Ray logs found]"


def run_until_result(script: Path, timeout_s: float) -> tuple[int, str, str]:
    """run_cluster_script, once more when Ray's own control plane died under it (the GCS of the
    script's cluster gone, so no RESULT at all): that is Ray failing on a loaded 2-core machine,
    not svclog. The first run's error and logs are kept in front of the second's output."""
    code, out, err = run_cluster_script(script, timeout_s)
    if "RESULT " in out or "Failed to connect to GCS" not in err:
        return code, out, err
    print(f"the cluster's GCS died (exit {code}), running once more:\n{err[-6000:]}", file=sys.stderr)
    return run_cluster_script(script, timeout_s)


def _push(client: httpx.Client, url: str, first: int, count: int) -> bool:
    values: dict[int, list] = {}
    for seq in range(first, first + count):
        values.setdefault(seq % STREAMS, []).append([str(BASE + seq), f"entry {seq}"])
    body = {"streams": [{"stream": {"app": "multinode", "part": str(p)}, "values": v} for p, v in values.items()]}
    try:
        resp = client.post(
            url + "/svc/api/v1/push",
            content=json.dumps(body),
            headers={"X-Scope-OrgID": TENANT, "Content-Type": "application/json"},
        )
    except httpx.HTTPError:
        return False
    return resp.status_code == 204


class Writer:
    """Pushes batches of ENTRIES_PER_PUSH in a loop from `first` on, keeping the acknowledged ones."""

    def __init__(self, url: str, first: int):
        self.url, self.next, self.acked, self.refused = url, first, [], 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with httpx.Client(timeout=60) as client:
            while not self._stop.is_set():
                start, self.next = self.next, self.next + ENTRIES_PER_PUSH
                if _push(client, self.url, start, ENTRIES_PER_PUSH):
                    self.acked.extend(range(start, start + ENTRIES_PER_PUSH))
                else:
                    self.refused += 1
                self._stop.wait(0.05)

    def stop(self) -> list[int]:
        self._stop.set()
        self._thread.join(timeout=120)
        return self.acked


def _flush(url: str, deadline: float) -> None:
    """POST /flush until every ingester answered (a restarting one answers 503 meanwhile), then
    wait out the index's visibility delay: a querier sees a segment another process wrote within
    LISTING_TTL_S (svclog/storage/index.py), and these entries are older than
    query_ingesters_within, so no ingester answers for them meanwhile. Twice, with the kill-to-read
    phase down to 1.5 s, the two long-lived queriers answered from the listing they made for the
    reads before the kill, less than LISTING_TTL_S earlier, and missed every entry flushed since."""
    from svclog.storage.index import LISTING_TTL_S

    last = retry_until(lambda: httpx.post(url + "/flush", timeout=60), 204, deadline, 1)
    if last:
        raise TimeoutError(f"flush kept failing: {last}")
    time.sleep(LISTING_TTL_S)


def _entries(data: dict) -> set[int]:
    return {int(line.split()[1]) for stream in data["result"] for _, line in stream["values"]}


def _found(url: str, deadline: float) -> set[int]:
    """Every entry the HTTP query path returns (retried while Serve replicas recover)."""
    params = {
        "query": '{app="multinode"}',
        "start": str(BASE),
        "end": str(BASE + 10**12),
        "limit": "100000",
        "direction": "forward",
    }
    last = ""
    while time.time() < deadline:
        try:
            resp = httpx.get(
                url + "/svc/api/v1/query_range", params=params, timeout=60, headers={"X-Scope-OrgID": TENANT}
            )
            if resp.status_code == 200:
                return _entries(resp.json()["data"])
            last = f"{resp.status_code} {resp.text[:200]}"
        except httpx.HTTPError as err:
            last = repr(err)
        time.sleep(1)
    raise TimeoutError(f"query kept failing: {last}")


def _per_querier(num_queriers: int) -> dict[str, tuple[str, set[int]]]:
    """Each querier actor asked directly (no frontend): its node and the entries it reads from S3."""
    import ray

    from svclog.actors.options import NAMESPACE, querier_name
    from svclog.querier.request import RangeRequest

    request = RangeRequest('{app="multinode"}', BASE, BASE + 10**12, 10**9, None, 100000, "forward")
    out = {}
    actors = {
        a["Name"]: a["Address"]["NodeID"]
        for a in ray._private.state.actors().values()
        if a.get("State") == "ALIVE" and a.get("Name", "").startswith("querier-")
    }
    for i in range(num_queriers):
        name = querier_name(i)
        data = ray.get(ray.get_actor(name, namespace=NAMESPACE).query.remote([TENANT], request), timeout=120)
        out[name] = (actors.get(name, "?"), _entries(data))
    return out


def named_actor(name: str):
    """A component by its name, wherever it runs (its own actor, or a part of the backend host)."""
    import ray

    from svclog.actors.options import NAMESPACE

    try:
        from svclog.actors.registry import named_actor as find
    except ImportError:  # before the backend host existed every component was its own actor
        return ray.get_actor(name, namespace=NAMESPACE)
    return find(name)


FAIR_PATHS = ("team-a", "team-b", "team-c")
FAIR_HOURS = 144  # one sub-query per hour (split_queries_by_interval): 432 hand-outs in all


def _fair_query(url: str, path: str, codes: dict) -> None:
    params = {
        "query": 'sum(count_over_time({app="multinode"}[5m]))',
        "start": str(BASE - (FAIR_HOURS - 1) * 3600 * 10**9),
        "end": str(BASE + 3600 * 10**9),
        "step": "300",
    }
    resp = httpx.get(
        url + "/svc/api/v1/query_range",
        params=params,
        timeout=180,
        headers={"X-Scope-OrgID": "fair", "X-Svc-Actor-Path": path},
    )
    codes[path] = resp.status_code


def _seed_fair_tenant(url: str) -> None:
    """One line in each hour the fairness queries read, flushed: hours without data are not sent
    to queriers at all (the frontend skips them), and these queries exist to hand out sub-queries."""
    first = BASE - (FAIR_HOURS - 1) * 3600 * 10**9
    values = [[str(first + hour * 3600 * 10**9), f"fair {hour}"] for hour in range(FAIR_HOURS + 1)]
    resp = httpx.post(
        url + "/svc/api/v1/push",
        json={"streams": [{"stream": {"app": "multinode"}, "values": values}]},
        headers={"X-Scope-OrgID": "fair"},
        timeout=60,
    )
    assert resp.status_code == 204, resp.text
    retry_until(lambda: httpx.post(url + "/flush", timeout=60), 204, time.time() + 60, 1)


def _fair_shares_per_node(url: str) -> dict:
    """Three actor paths query at once; the hand-outs each node's queriers took while all three had
    work, split by path, and whether the scheduler put each querier in its own node's group."""
    import ray

    from svclog.actors.scheduler_actor import SCHEDULER_NAME

    codes: dict[str, int] = {}
    threads = [threading.Thread(target=_fair_query, args=(url, p, codes)) for p in FAIR_PATHS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=200)
    node_of = {
        a["Name"]: a["Address"]["NodeID"]
        for a in ray._private.state.actors().values()
        if a.get("State") == "ALIVE" and a.get("Name", "").startswith("querier-")
    }
    dispatches = ray.get(named_actor(SCHEDULER_NAME).dispatches.remote("fair"), timeout=60)
    contended = [d for d in dispatches if d.contenders == len(FAIR_PATHS)]
    per_node: dict[str, dict] = {}
    for d in contended:
        entry = per_node.setdefault(node_of.get(d.querier, "?")[:8], {"n": 0, **{p: 0 for p in FAIR_PATHS}})
        entry["n"] += 1
        entry[d.path[0]] += 1
    return {
        "fair_codes": codes,
        "fair_dispatches": len(dispatches),
        "fair_contended": len(contended),
        "fair_per_node": per_node,
        "fair_groups_are_nodes": all(d.group == node_of.get(d.querier) for d in dispatches),
    }


def _replica_node_spread(ring, rf: int, samples: int = 2000) -> set[int]:
    """Distinct-node counts seen over the replication sets of `samples` fingerprints."""
    step = (1 << 32) // samples
    return {len({m.node for m in ring.replication_set(i * step, rf)}) for i in range(samples)}


def _add_node(cluster, directory: Path, **args):
    """A node whose raylet, and so every worker of it, runs in `directory` (its "disk")."""
    directory.mkdir(parents=True, exist_ok=True)
    here = os.getcwd()
    os.chdir(directory)
    try:
        return cluster.add_node(**args)  # not retried: a worker's half-start cannot be told from the head's
    finally:
        os.chdir(here)


def run(work: Path) -> dict:
    import ray
    from ray import serve
    from ray.cluster_utils import Cluster

    from svclog import launch as topology
    from svclog.actors.options import NAMESPACE, RING_NAME
    from svclog.config import load_config
    from svclog.ring.ring import Ring
    from tests.storage.s3_server import SeaweedS3

    began = time.time()
    s3 = SeaweedS3(work / "seaweedfs")
    s3.start()
    os.environ.update(s3.env())
    # Three "nodes" share one IP here: HAProxy (one listener per node) cannot; use Serve's own proxy.
    os.environ["RAY_SERVE_ENABLE_HA_PROXY"] = "0"
    node_dirs = [work / f"node-{i}" for i in range(3)]
    head_args = {**agent_ports(), "num_cpus": 2, "include_dashboard": False, "resources": {"svclog_read": 1}}
    here = os.getcwd()
    node_dirs[0].mkdir(parents=True)
    os.chdir(node_dirs[0])
    try:
        cluster = start_node(lambda: Cluster(initialize_head=True, head_node_args=head_args))
    finally:
        os.chdir(here)
    workers = [
        _add_node(cluster, node_dirs[i], **agent_ports(), num_cpus=2, resources={"svclog_read": 1}) for i in (1, 2)
    ]
    cluster.wait_for_nodes()
    dir_of = {cluster.head_node.node_id: node_dirs[0], **{w.node_id: node_dirs[i + 1] for i, w in enumerate(workers)}}
    nodes_up = time.time()
    ray.init(address=cluster.address, namespace=NAMESPACE, log_to_driver=False, configure_logging=False)
    port = free_port()
    # All three nodes share one IP here: only the head may bind the HTTP port.
    serve.start(
        proxy_location="HeadOnly",
        http_options={"host": "127.0.0.1", "port": port},
        logging_config={"log_level": "WARNING", "enable_access_log": False},
    )
    config = work / "s3.yaml"
    config.write_text(S3_CONFIG.format(path_prefix=PATH_PREFIX))
    cfg = load_config(
        None,
        [
            f"-config.file={config}",
            "-config.expand-env=true",
            f"-server.http-listen-port={port}",
            "-ray.num-ingesters=3",
            "-ray.num-queriers=3",
            "-querier.query-ingesters-within=1h",
            "-limits.reject-old-samples=false",
            "-limits.max-entries-limit-per-query=100000",
            # every query through the scheduler, whose hand-outs this test checks (no local lane)
            "-limits.local-query-max-bytes=0",
            "-ingester.flush-check-period=1s",
            "-ray.serve-haproxy=false",
            # the gateway as a Serve deployment behind the proxy started above, as on a cluster (this
            # driver joins its cluster by `ray.init`, so svclog would otherwise take it for a local start)
            "-ray.local-serve=true",
        ],
    )
    handles = topology.start(cfg)
    url = f"http://127.0.0.1:{port}"
    wait_ready(url, time.time() + 120)
    started = time.time()

    ring = Ring.from_snapshot(ray.get(named_actor(RING_NAME).snapshot.remote(), timeout=60))
    ingester_nodes = {m.id: m.node for m in ring.members.values()}
    spread = _replica_node_spread(ring, cfg.common.replication_factor)

    writer = Writer(url, 0)
    while len(writer.acked) < 600:
        time.sleep(0.2)
    acked_before_flush = list(writer.acked)
    _flush(url, time.time() + 60)  # every ingester's chunks (the victim's too) go to the bucket
    before = _per_querier(3)
    _seed_fair_tenant(url)
    fair_began = time.time()
    fairness = _fair_shares_per_node(url)
    fairness["fair_s"] = round(time.time() - fair_began, 1)
    wals = {node: sorted(p.name for p in (d / PATH_PREFIX / "wal").glob("*")) for node, d in dir_of.items()}

    # Lose a worker node that hosts an ingester, its disk with it, while the writer keeps pushing.
    by_node = {node.node_id: node for node in workers}
    victim_id, victim_node = next((i, by_node[n]) for i, n in sorted(ingester_nodes.items()) if n in by_node)
    shutil.rmtree(dir_of[victim_node.node_id])
    cluster.remove_node(victim_node)
    killed = time.time()
    acked_at_kill = len(writer.acked)
    while len(writer.acked) < acked_at_kill + 200 and time.time() < killed + 60:
        time.sleep(0.2)  # writes keep reaching a quorum (2 of 3)
    acked = writer.stop()
    _flush(url, time.time() + 120)  # the survivors (and the restarted victim) write what they hold
    found = _found(url, time.time() + 90)
    after = _per_querier(3)
    after_kill = time.time()
    # The victim restarted on a surviving node, in that node's directory: an empty WAL, so what it
    # holds is only what arrived after the kill and the rest came back from the other two replicas.
    victim_stats = ray.get(ray.get_actor(victim_id, namespace=NAMESPACE).stats.remote(), timeout=60)
    alive = sum(1 for n in ray.nodes() if n["Alive"])
    flushed_before = set(acked_before_flush)
    result = {
        "nodes": 3,
        "alive_nodes_after_kill": alive,
        "ingester_nodes": len(set(ingester_nodes.values())),
        "replication_set_node_counts": sorted(spread),
        "killed_ingester": victim_id,
        "wal_dirs_per_node": {node[:8]: names for node, names in wals.items()},
        "queriers_before": {
            q: [node[:8], len(got & flushed_before), len(flushed_before - got)] for q, (node, got) in before.items()
        },
        "querier_nodes_before": len({node for node, _ in before.values()}),
        "acked": len(acked),
        "acked_during_kill_window": len(acked) - acked_at_kill,
        "refused_pushes": writer.refused,
        "found": len(found),
        "acked_found": len(set(acked) & found),
        "lost": len(set(acked) - found),
        "queriers_after": {q: [node[:8], len(set(acked) - got)] for q, (node, got) in after.items()},
        "victim_replayed_records": victim_stats["replayed_records"],
        "bucket_objects": _objects(s3),
        **fairness,
        "cluster_up_s": round(nodes_up - began, 1),
        "startup_s": round(started - began, 1),
        "kill_to_read_s": round(after_kill - killed, 1),
        "total_s": round(time.time() - began, 1),
    }
    topology.stop(handles, cfg, timeout_s=20)
    serve.shutdown()
    ray.shutdown()
    cluster.shutdown()
    s3.stop()
    return result


def _objects(s3) -> int:
    import pyarrow.fs as pafs

    infos = s3.filesystem().get_file_info(pafs.FileSelector("svclog-chunks", recursive=True))
    return sum(1 for info in infos if info.type == pafs.FileType.File)


def main() -> int:
    os.environ["RAY_TMPDIR"] = private_ray_tmpdir("svmn")
    with tempfile.TemporaryDirectory(prefix="svclog-multinode-") as work:
        result = run(Path(work))
    print("RESULT " + json.dumps(result), flush=True)
    ok = (
        result["ingester_nodes"] == 3
        and result["replication_set_node_counts"] == [3]
        and result["acked"] > 0
        and result["lost"] == 0
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
