"""Three Ray nodes on one machine, replication factor 3: push, lose a node, read everything back.

Run by tests/e2e/test_multinode.py in a subprocess (its own Ray cluster, apart from the
session fixture's local Ray). Stand-alone: `python tests/e2e/multinode_cluster.py`.
Prints one `RESULT {json}` line; exits 0 only when every acknowledged entry is found.

Node loss is simulated the way a cloud node dies: the node's raylet and workers are
removed (`Cluster.remove_node`) and the WAL of the ingester that lived there is deleted
first (its local disk is gone too), so the entries can only come back from the replicas on
the other two nodes, not from a WAL replay.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
import time

import httpx

TENANT = "multinode"
BASE = 1_793_491_200 * 10**9  # 2026-11-01T00:00:00Z
STREAMS = 12
ENTRIES_PER_PUSH = 25


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_ready(url: str, deadline: float) -> None:
    last = ""
    while time.time() < deadline:
        try:
            resp = httpx.get(url + "/ready", timeout=2)
            if resp.status_code == 200:
                return
            last = f"{resp.status_code} {resp.text[:200]}"
        except httpx.HTTPError as err:
            last = repr(err)
        time.sleep(0.5)
    raise TimeoutError(f"svclog did not become ready: {last}")


def _push(client: httpx.Client, url: str, first: int, count: int) -> bool:
    values: dict[int, list] = {}
    for seq in range(first, first + count):
        values.setdefault(seq % STREAMS, []).append([str(BASE + seq), f"entry {seq}"])
    body = {"streams": [{"stream": {"app": "multinode", "part": str(p)}, "values": v} for p, v in values.items()]}
    try:
        resp = client.post(url + "/svc/api/v1/push", content=json.dumps(body),
                           headers={"X-Scope-OrgID": TENANT, "Content-Type": "application/json"})
    except httpx.HTTPError:
        return False
    return resp.status_code == 204


def _push_range(url: str, first: int, total: int) -> list[int]:
    acked: list[int] = []
    with httpx.Client(timeout=60) as client:
        for start in range(first, first + total, ENTRIES_PER_PUSH):
            if _push(client, url, start, ENTRIES_PER_PUSH):
                acked.extend(range(start, start + ENTRIES_PER_PUSH))
    return acked


def _found(url: str, deadline: float) -> set[int]:
    """Every entry the query path returns (retried while replicas and Serve replicas recover)."""
    params = {"query": '{app="multinode"}', "start": str(BASE), "end": str(BASE + 10**12),
              "limit": "100000", "direction": "forward"}
    last = ""
    while time.time() < deadline:
        try:
            resp = httpx.get(url + "/svc/api/v1/query_range", params=params, timeout=60,
                             headers={"X-Scope-OrgID": TENANT})
            if resp.status_code == 200:
                return {int(line.split()[1]) for stream in resp.json()["data"]["result"]
                        for _, line in stream["values"]}
            last = f"{resp.status_code} {resp.text[:200]}"
        except httpx.HTTPError as err:
            last = repr(err)
        time.sleep(1)
    raise TimeoutError(f"query kept failing: {last}")


def _replica_node_spread(ring, rf: int, samples: int = 2000) -> set[int]:
    """Distinct-node counts seen over the replication sets of `samples` fingerprints."""
    step = (1 << 32) // samples
    return {len({m.node for m in ring.replication_set(i * step, rf)}) for i in range(samples)}


def run(data_dir: str) -> dict:
    import ray
    from ray import serve
    from ray.cluster_utils import Cluster

    from svclog import launch as topology
    from svclog.actors.options import NAMESPACE, RING_NAME
    from svclog.config import load_config, wal_dir
    from svclog.ring.ring import Ring

    # Three "nodes" share one IP here: HAProxy (one listener per node) cannot; use Serve's own proxy.
    os.environ["RAY_SERVE_ENABLE_HA_PROXY"] = "0"
    began = time.time()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "include_dashboard": False})
    workers = [cluster.add_node(num_cpus=2) for _ in range(2)]
    cluster.wait_for_nodes()
    nodes_up = time.time()
    ray.init(address=cluster.address, namespace=NAMESPACE, log_to_driver=False, configure_logging=False)
    port = _free_port()
    # All three nodes share one IP here: only the head may bind the HTTP port.
    serve.start(proxy_location="HeadOnly", http_options={"host": "127.0.0.1", "port": port},
                logging_config={"log_level": "WARNING", "enable_access_log": False})
    cfg = load_config(None, [
        f"-common.path-prefix={data_dir}", f"-server.http-listen-port={port}",
        "-common.replication-factor=3", "-ray.num-ingesters=3", "-ray.num-queriers=2",
        "-querier.query-ingesters-within=0", "-limits.reject-old-samples=false",
        "-limits.max-entries-limit-per-query=100000", "-ingester.flush-check-period=1s",
        "-ray.serve-haproxy=false",
    ])
    handles = topology.start(cfg)
    url = f"http://127.0.0.1:{port}"
    _wait_ready(url, time.time() + 90)
    started = time.time()

    ring = Ring.from_snapshot(ray.get(ray.get_actor(RING_NAME, namespace=NAMESPACE).snapshot.remote()))
    ingester_nodes = {m.id: m.node for m in ring.members.values()}
    spread = _replica_node_spread(ring, cfg.common.replication_factor)

    acked = _push_range(url, 0, 600)

    # Lose a worker node that hosts an ingester, and with it that ingester's local WAL.
    by_node = {node.node_id: node for node in workers}
    victim_id, victim_node = next((i, by_node[n]) for i, n in sorted(ingester_nodes.items()) if n in by_node)
    shutil.rmtree(os.path.join(wal_dir(cfg), victim_id), ignore_errors=True)
    cluster.remove_node(victim_node)
    killed = time.time()

    acked += _push_range(url, 600, 200)  # writes keep reaching a quorum (2 of 3)
    found = _found(url, time.time() + 90)
    after_kill = time.time()
    # The victim restarted on a surviving node with an empty WAL: what it holds is only what
    # arrived after the kill, so the first 600 entries came back from the other two replicas.
    victim_stats = ray.get(ray.get_actor(victim_id, namespace=NAMESPACE).stats.remote(), timeout=60)
    alive = sum(1 for n in ray.nodes() if n["Alive"])
    result = {
        "nodes": 3, "alive_nodes_after_kill": alive, "ingester_nodes": len(set(ingester_nodes.values())),
        "replication_set_node_counts": sorted(spread), "killed_ingester": victim_id,
        "acked": len(acked), "found": len(found), "acked_found": len(set(acked) & found),
        "lost": len(set(acked) - found), "victim_replayed_records": victim_stats["replayed_records"],
        "cluster_up_s": round(nodes_up - began, 1), "startup_s": round(started - began, 1), "kill_to_read_s": round(after_kill - killed, 1),
    }
    topology.stop(handles)
    serve.shutdown()
    ray.shutdown()
    cluster.shutdown()
    return result


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="svclog-multinode-") as data_dir:
        result = run(data_dir)
    print("RESULT " + json.dumps(result), flush=True)
    ok = (result["ingester_nodes"] == 3 and result["replication_set_node_counts"] == [3]
          and result["acked"] > 0 and result["lost"] == 0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
