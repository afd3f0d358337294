"""Multi-node on one machine: 3 Ray nodes, replication factor 3, one node lost, nothing lost.

The cluster runs in a subprocess (tests/e2e/multinode_cluster.py) because pytest's process
already holds the session fixture's local Ray: one process can be connected to one cluster.
The subprocess gets its own RAY_TMPDIR so that its `ray_current_cluster` file never points
another process's `ray.init()` at this short-lived cluster, and its own process group so a
timeout takes every Ray process it started down with it.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = Path(__file__).with_name("multinode_cluster.py")
REPO = SCRIPT.parents[2]
TIMEOUT_S = 175  # the whole run, startup included, stays under 3 minutes


def _run_script() -> tuple[int, str, str]:
    ray_tmp = tempfile.mkdtemp(prefix="svmn", dir="/tmp")  # short: Ray's socket paths have a length limit
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAY_TMPDIR=ray_tmp, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
    proc = subprocess.Popen([sys.executable, str(SCRIPT)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=REPO, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\n[killed after {TIMEOUT_S} s]"
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    return proc.returncode, out, err


def test_three_nodes_lose_one_and_every_acknowledged_entry_is_queryable():
    code, out, err = _run_script()
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert lines, f"no result (exit {code}):\n{out[-3000:]}\n{err[-3000:]}"
    result = json.loads(lines[-1].removeprefix("RESULT "))
    print(f"\nacked={result['acked']} found={result['found']} acked_found={result['acked_found']} {result}")
    assert result["ingester_nodes"] == 3, "ingesters not spread over the 3 nodes"
    assert result["replication_set_node_counts"] == [3], "a replication set spans fewer than 3 nodes"
    assert result["alive_nodes_after_kill"] == 2
    assert result["acked"] > 0
    assert result["lost"] == 0, f"{result['lost']} acknowledged entries lost"
    assert result["victim_replayed_records"] == 0, "the lost node's WAL was replayed: replication not shown"
    assert code == 0, err[-3000:]
