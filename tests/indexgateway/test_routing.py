"""Tenants shard over the index-gateway ring; unhealthy gateways are skipped; no ring, no gateway."""

import time

from svclog.indexgateway.routing import gateways_for
from svclog.ring.ring import LEAVING, Ring


def _ring(*names, stale=()):
    ring = Ring(heartbeat_timeout_ns=60 * 10**9)
    for name in names:
        ring.register(name, name, node=name, num_tokens=64)
    for name in stale:
        member = ring.members[name]
        ring.members[name] = type(member)(**{**member.__dict__, "heartbeat_ns": time.time_ns() - 120 * 10**9})
    return ring


def test_each_tenant_has_one_owner_and_tenants_spread():
    ring = _ring("index-gateway-0", "index-gateway-1", "index-gateway-2")
    owners = {gateways_for(ring, f"tenant-{i}", "ring", 1)[0] for i in range(60)}
    assert owners == {"index-gateway-0", "index-gateway-1", "index-gateway-2"}
    assert gateways_for(ring, "a", "ring", 1) == gateways_for(ring, "a", "ring", 1)


def test_simple_mode_lists_every_healthy_gateway_owner_first():
    ring = _ring("g0", "g1", "g2")
    order = gateways_for(ring, "tenant", "simple")
    assert sorted(order) == ["g0", "g1", "g2"] and order[0] == gateways_for(ring, "tenant", "ring", 1)[0]
    assert len(gateways_for(ring, "tenant", "ring", 2)) == 2


def test_unhealthy_or_leaving_gateways_are_skipped():
    ring = _ring("g0", "g1", stale=("g1",))
    assert all(gateways_for(ring, f"t{i}") == ["g0"] for i in range(20))
    ring.set_state("g0", LEAVING)
    assert gateways_for(ring, "t") == []


def test_without_a_ring_or_members_the_querier_reads_itself():
    assert gateways_for(None, "t") == []
    assert gateways_for(Ring(), "t") == []
