"""QuorumTracker: a push is acknowledged once every stream has RF/2+1 replicas, failed once one cannot."""

from __future__ import annotations

from types import SimpleNamespace

from svclog.distributor.distributor import Distributor
from svclog.distributor.quorum import QuorumTracker, quorum_size
from svclog.ring.ring import Ring


def test_quorum_sizes():
    assert [quorum_size(n) for n in (1, 2, 3, 4, 5)] == [1, 2, 2, 3, 3]


def test_reached_after_a_majority_of_each_stream_replicas():
    a, b = object(), object()
    tracker = QuorumTracker({"i0": [a, b], "i1": [a], "i2": [a, b], "i3": [b]})  # both on 3 replicas
    tracker.record("i0", True)
    assert not tracker.settled
    tracker.record("i1", True)  # a has 2 of 3; b has 1 of 3
    assert not tracker.reached
    tracker.record("i2", True)
    assert tracker.reached and not tracker.lost  # i3 need not answer


def test_lost_as_soon_as_one_stream_cannot_reach_quorum():
    a, b = object(), object()
    tracker = QuorumTracker({"i0": [a], "i1": [a, b], "i2": [a, b], "i3": [b]})
    tracker.record("i1", False)
    assert not tracker.settled  # both streams can still get 2 of 3
    tracker.record("i2", False)
    assert tracker.lost


def test_single_replica():
    a = object()
    tracker = QuorumTracker({"i0": [a]})
    tracker.record("i0", True)
    assert tracker.reached
    tracker = QuorumTracker({"i0": [a]})
    tracker.record("i0", False)
    assert tracker.lost


def _limits(strategy):
    return SimpleNamespace(ingestion_rate_mb=4.0, ingestion_burst_size_mb=6.0, ingestion_rate_strategy=strategy)


def test_global_strategy_divides_the_tenant_rate_over_distributors():
    replicas = [4]
    dist = Distributor(ring=Ring, pusher=None, limits_for=None, replication_factor=1, distributors=lambda: replicas[0])
    assert dist.ingestion_rate(_limits("global")) == 1 << 20
    assert dist.ingestion_rate(_limits("local")) == 4 << 20
    replicas[0] = 0  # not known yet: the whole limit
    assert dist.ingestion_rate(_limits("global")) == 4 << 20
