import time

import pytest

from svclog.ring.ring import LEAVING, Ring, RingError, generate_tokens


def test_tokens_are_deterministic_per_member():
    assert generate_tokens("ingester-0", 64) == generate_tokens("ingester-0", 64)
    assert generate_tokens("ingester-0", 64) != generate_tokens("ingester-1", 64)


def test_replication_set_is_distinct_and_sized():
    ring = Ring()
    for i in range(5):
        ring.register(f"i{i}", f"i{i}", node=f"n{i}")
    for fp in range(0, 2**64, 2**58):
        owners = ring.replication_set(fp, 3)
        assert len({m.id for m in owners}) == 3


def test_replicas_spread_across_nodes_when_possible():
    ring = Ring()
    for i in range(6):
        ring.register(f"i{i}", f"i{i}", node=f"n{i % 3}")
    for fp in range(0, 2**64, 2**59):
        assert len({m.node for m in ring.replication_set(fp, 3)}) == 3


def test_small_ring_returns_what_it_has_and_empty_ring_errors():
    ring = Ring()
    with pytest.raises(RingError):
        ring.replication_set(1, 1)
    ring.register("only", "only")
    assert [m.id for m in ring.replication_set(123, 3)] == ["only"]


def test_ownership_is_balanced_roughly():
    ring = Ring()
    for i in range(3):
        ring.register(f"i{i}", f"i{i}", node=f"n{i}")
    counts = {}
    for fp in range(3000):
        owner = ring.replication_set(fp * 7919 * 2**40, 1)[0].id
        counts[owner] = counts.get(owner, 0) + 1
    assert min(counts.values()) > 600


def test_health_follows_heartbeats_and_state():
    ring = Ring(heartbeat_timeout_ns=10**9)
    member = ring.register("a", "a")
    assert ring.is_healthy(member)
    assert not ring.is_healthy(member, time.time_ns() + 2 * 10**9)
    ring.set_state("a", LEAVING)
    assert not ring.healthy_members()
    assert ring.forget("a") and not ring.members


def test_snapshot_round_trip():
    ring = Ring()
    ring.register("a", "addr-a", node="n1")
    copy = Ring.from_snapshot(ring.snapshot())
    assert copy.replication_set(42, 1)[0].address == "addr-a"


def test_ring_client_asks_again_while_the_ring_is_empty():
    """A start's first pushes follow /ready at once: the empty view fetched before the ingesters
    joined must not be kept for the cache's ttl (a push then got 503 "empty ring")."""
    from svclog.actors.clients import RingClient

    joined = Ring()
    joined.register("i0", "i0")
    answers = [Ring().snapshot(), joined.snapshot()]

    class Scripted(RingClient):
        def snapshot(self) -> dict:
            return answers.pop(0)

    client = Scripted(ttl=3600)
    assert client.get().empty
    assert [m.id for m in client.get().replication_set(1, 1)] == ["i0"]  # within the ttl, fetched anew
    assert not answers
    assert client.get() is client.get()  # a placed ring stays cached
