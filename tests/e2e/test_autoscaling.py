"""Autoscaling exercised: cluster.yaml's read/write/backend node types under Ray's autoscaler (the
fake multi-node provider, every node a raylet on this machine). Sustained query load grows the
querier pool onto new read nodes, the pool and the nodes shrink back when the load goes, no query
fails meanwhile, and the write group keeps its three ingesters on three nodes throughout. Along
the way: one query's sub-queries land on queriers of several nodes, and three actor paths get
equal shares of the scheduler's hand-outs. The run prints its timeline (queriers, read nodes,
queries per second, errors) with `pytest -s`.

Runs tests/e2e/autoscaling_cluster.py in a subprocess, as test_multinode.py does (its own Ray).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.multinode_cluster import run_until_result

SCRIPT = Path(__file__).with_name("autoscaling_cluster.py")
TIMEOUT_S = 420  # startup of six fake nodes, the load, the scale-down and the autoscaler's idle timeout
FAIR_TOLERANCE = 0.10  # each actor path's share within 10 % of 1/3


def test_queriers_follow_the_load_onto_new_read_nodes_and_back_while_writes_keep_their_rf():
    code, out, err = run_until_result(SCRIPT, TIMEOUT_S)
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert lines, f"no result (exit {code}):\n{out[-4000:]}\n{err[-4000:]}"
    result = json.loads(lines[-1].removeprefix("RESULT "))
    timeline = result.pop("timeline")
    print("\n" + "\n".join(json.dumps(row) for row in timeline))
    print(json.dumps(result, indent=1))

    # scale-up: more queriers than the launcher's two, on read nodes the autoscaler added
    assert result["grown"], "the querier pool did not grow to 6 on 3 read nodes under load"
    assert result["max_queriers_seen"] == 6 and result["max_read_nodes_seen"] >= 3
    # the six queriers run on the three read nodes max_workers allows (the fake provider may show a
    # fourth for a moment while queriers are pending: a slow node it replaced that registers late)
    assert all(row["read_nodes"] == 3 for row in timeline if row["queriers"] == 6), timeline
    # scale-down: back to the two queriers on the read nodes of the idle start, no query failed
    assert result["shrunk"], f"did not shrink back: {result['final']}"
    assert result["light_ok"] > 0 and result["light_failed"] == 0, result["light_errors"]
    assert result["heavy_failed"] == 0, result["heavy_errors"]
    # the write group never moved: the same three ingesters on the same three write nodes, never restarted
    assert len(result["write_nodes_before"]) == 3
    # (not compared with the provider's current list of write nodes: the fake provider has been seen
    # to start a replacement for a write node whose ingester kept running and answering, seen once)
    assert result["write_nodes_after"] == result["write_nodes_before"]
    assert result["write_members_after"] == result["write_members_before"]
    assert result["ingester_restarts"] == 0
    # work spreads: one query's sub-queries ran on queriers of more than one node
    assert len(result["spread_nodes"]) >= 2, result["spread_nodes"]
    # fairness: while all three actor paths had work queued, each got a third of the hand-outs
    assert set(result["fair_codes"].values()) == {200}
    assert result["fair_contended"] >= 90
    for path, share in result["fair_shares"].items():
        assert abs(share - 1 / 3) <= FAIR_TOLERANCE / 3, (path, result["fair_shares"])
    assert code == 0, err[-3000:]
