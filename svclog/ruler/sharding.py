"""Which ruler evaluates which group when several run: hash (tenant, namespace, group) onto the ring.

Each group has exactly one owner among the healthy ruler members; when a member leaves
or stops heartbeating, the ring without it gives its groups to the others.
"""

from __future__ import annotations

import hashlib

from svclog.ring.ring import Ring, RingError


def group_fingerprint(tenant: str, namespace: str, group: str) -> int:
    """Stable 64-bit hash; NUL separators keep ("a", "bc") and ("ab", "c") apart."""
    digest = hashlib.blake2b(f"{tenant}\x00{namespace}\x00{group}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def healthy_ring(ring: Ring, now_ns: int | None = None) -> Ring:
    """A copy of `ring` holding only its healthy members (tokens unchanged)."""
    members = [m for m in ring.members.values() if ring.is_healthy(m, now_ns)]
    return Ring.from_snapshot({"heartbeat_timeout_ns": ring.heartbeat_timeout_ns, "members": members})


def owner_of(ring: Ring, tenant: str, namespace: str, group: str) -> str | None:
    """The member id owning a group, or None for an empty ring."""
    try:
        members = ring.replication_set(group_fingerprint(tenant, namespace, group), 1)
    except RingError:
        return None
    return members[0].id if members else None


def owns_group(ring: Ring | None, instance_id: str, tenant: str, namespace: str, group: str) -> bool:
    """Does `instance_id` evaluate this group? Without a ring (a single ruler) it owns all."""
    if ring is None:
        return True
    owner = owner_of(ring, tenant, namespace, group)
    return owner is None or owner == instance_id
