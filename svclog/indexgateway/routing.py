"""Which index gateways serve a tenant: the tenant's hash placed on the index-gateway ring.

Sharding by tenant keeps each tenant's segments in one gateway's cache. The first address
is the tenant's owner; the others are who to try when it does not answer: in `ring` mode
the rest of its replication set (`index_gateway.ring.replication_factor`), in `simple`
mode every other healthy gateway. No address at all means: read the index yourself.
"""

from __future__ import annotations

import hashlib

from svclog.ring.ring import Ring, RingError


def tenant_fingerprint(tenant: str) -> int:
    return int.from_bytes(hashlib.blake2b(tenant.encode(), digest_size=8).digest(), "big")


def healthy_only(ring: Ring, now_ns: int | None = None) -> Ring:
    members = [m for m in ring.members.values() if ring.is_healthy(m, now_ns)]
    return Ring.from_snapshot({"heartbeat_timeout_ns": ring.heartbeat_timeout_ns, "members": members})


def gateways_for(ring: Ring | None, tenant: str, mode: str = "simple", replication_factor: int = 1) -> list[str]:
    """Addresses (actor names) of the healthy gateways to ask for `tenant`, owner first."""
    if ring is None:
        return []
    healthy = healthy_only(ring)
    wanted = len(healthy.members) if mode != "ring" else max(1, replication_factor)
    try:
        return [m.address for m in healthy.replication_set(tenant_fingerprint(tenant), wanted)]
    except RingError:  # no healthy gateway
        return []
