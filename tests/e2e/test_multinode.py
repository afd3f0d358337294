"""Share-nothing multi-node on one machine: 3 Ray nodes whose only shared thing is an S3 bucket
(SeaweedFS), replication factor 3, one node and its disk lost under write load, nothing lost.

The cluster runs in a subprocess (tests/e2e/multinode_cluster.py) because pytest's process
already holds the session fixture's local Ray: one process can be connected to one cluster.
The subprocess gets its own RAY_TMPDIR so that its `ray_current_cluster` file never points
another process's `ray.init()` at this short-lived cluster, and its own process group; every
process naming that temp dir is killed when it ends (Ray's daemons leave the group).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.multinode_cluster import run_until_result

SCRIPT = Path(__file__).with_name("multinode_cluster.py")
TIMEOUT_S = 360  # a cap: the run takes 100-200 s on a 2-core machine, SeaweedFS and startup included
FAIR_TOLERANCE = 0.10  # each actor path's share of a node's hand-outs within 10 % of 1/3
MIN_PER_NODE = 60  # contended hand-outs per node: one round off in 60 is 5 %, well inside the tolerance


def test_nodes_sharing_only_s3_lose_one_under_writes_and_every_acknowledged_entry_is_queryable():
    code, out, err = run_until_result(SCRIPT, TIMEOUT_S)
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert lines, f"no result (exit {code}):\n{out[-3000:]}\n{err[-3000:]}"
    result = json.loads(lines[-1].removeprefix("RESULT "))
    print(f"\nacked={result['acked']} found={result['found']} acked_found={result['acked_found']} {result}")
    assert result["ingester_nodes"] == 3, "ingesters not spread over the 3 nodes"
    assert result["replication_set_node_counts"] == [3], "a replication set spans fewer than 3 nodes"
    # each node's WAL directory (its own disk) holds only the ingester that ran there
    assert sorted(len(names) for names in result["wal_dirs_per_node"].values()) == [1, 1, 1], result[
        "wal_dirs_per_node"
    ]
    # a querier on every node, each reading every node's flushed chunks from the bucket
    assert result["querier_nodes_before"] == 3
    assert all(missing == 0 for _, _, missing in result["queriers_before"].values()), result["queriers_before"]
    # fairness per node: while three actor paths had work queued, each node's querier took a third of each
    assert set(result["fair_codes"].values()) == {200}, result["fair_codes"]
    assert result["fair_groups_are_nodes"], "the scheduler did not place each querier in its node's group"
    per_node = result["fair_per_node"]
    assert len(per_node) == 3, per_node
    for node, counts in per_node.items():
        assert counts["n"] >= MIN_PER_NODE, (node, counts)
        for path in ("team-a", "team-b", "team-c"):
            assert abs(counts[path] / counts["n"] - 1 / 3) <= FAIR_TOLERANCE / 3, (node, path, per_node)
    assert result["alive_nodes_after_kill"] == 2
    assert result["acked"] > 0 and result["acked_during_kill_window"] > 0
    assert result["lost"] == 0, f"{result['lost']} acknowledged entries lost"
    assert all(missing == 0 for _, missing in result["queriers_after"].values()), result["queriers_after"]
    assert result["victim_replayed_records"] == 0, "the lost node's WAL was replayed: replication not shown"
    assert code == 0, err[-3000:]
