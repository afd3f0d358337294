"""Which queriers may run a tenant's sub-queries (`max_queriers_per_tenant`, `max_query_capacity`).

A tenant limited to n queriers gets a stable subset of n of the live queriers (a shuffle shard
keyed by the tenant): its heavy queries then occupy at most those n, and the other tenants
keep the rest. The subset is chosen by rendezvous hashing (each querier ranked by a hash of
tenant and querier id, the n best taken), so it is the same in every scheduler and a querier
joining or leaving moves at most one member of each tenant's subset. The reference shuffles
the sorted querier ids with a tenant-seeded random source: equally stable for a fixed set of
queriers, but a membership change may reshuffle the whole subset.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Sequence

# tenant key ("a" or "a|b" for a multi-tenant query), number of live queriers -> queriers it may use (0: all)
MaxQueriers = Callable[[str, int], int]


def max_consumers(max_queriers: int, max_capacity: float, all_queriers: int) -> int:
    """The reference's rule: `max_query_capacity` (a fraction of the queriers, rounded up) and
    `max_queriers_per_tenant` together, the smaller one winning; 0 means no limit."""
    if max_capacity <= 0:
        return max(0, max_queriers)
    by_capacity = math.ceil(all_queriers * max_capacity)
    if 0 < max_queriers < by_capacity:
        return max_queriers
    return by_capacity


def _rank(tenant: str, querier: str) -> bytes:
    return hashlib.blake2b(f"{tenant}\x00{querier}".encode(), digest_size=8).digest()


def shard_for(tenant: str, queriers: Iterable[str], count: int) -> frozenset[str] | None:
    """The `count` queriers of `tenant`; None when every querier may serve it (no limit, or no
    more queriers than the limit)."""
    members = sorted(set(queriers))
    if count <= 0 or len(members) <= count:
        return None
    return frozenset(sorted(members, key=lambda q: _rank(tenant, q))[:count])


class QuerierShards:
    """Each tenant's shard over the current queriers, recomputed when the queriers or the tenant's
    limit change (dequeues ask on every hand-out: the answer is cached)."""

    def __init__(self, max_queriers: MaxQueriers | None = None):
        self._max_queriers = max_queriers
        self._queriers: tuple[str, ...] = ()
        self._cache: dict[str, tuple[int, frozenset[str] | None]] = {}

    @property
    def enabled(self) -> bool:
        return self._max_queriers is not None

    def set_queriers(self, queriers: Iterable[str]) -> None:
        members = tuple(sorted(set(queriers)))
        if members != self._queriers:
            self._queriers = members
            self._cache.clear()

    def allowed(self, tenant: str) -> frozenset[str] | None:
        """The queriers that may take `tenant`'s work (None: all of them)."""
        if self._max_queriers is None:
            return None
        count = self._max_queriers(tenant, len(self._queriers))
        cached = self._cache.get(tenant)
        if cached is not None and cached[0] == count:
            return cached[1]
        shard = shard_for(tenant, self._queriers, count)
        self._cache[tenant] = (count, shard)
        return shard

    def may_serve(self, tenant: str, querier: str) -> bool:
        shard = self.allowed(tenant)
        return shard is None or querier in shard


def preferred_queriers(
    queriers: Sequence[str], tenant: str, busy: Iterable[str], max_queriers: MaxQueriers
) -> list[str]:
    """The queriers a direct call of `tenant` (data spans, read sizes, series, labels) should go
    to: its own shard, less the shards of the other limited tenants that have queries in flight
    (`busy`: their heavy work saturates those queriers); all of its own shard when nothing is
    left. The scheduler places sub-queries; this keeps the frontend's direct calls from queueing
    behind another tenant's sub-queries on the same querier."""
    total = len(queriers)
    own = shard_for(tenant, queriers, max_queriers(tenant, total))
    candidates = [q for q in queriers if own is None or q in own]
    avoid: set[str] = set()
    for other in set(busy) - {tenant}:
        shard = shard_for(other, queriers, max_queriers(other, total))
        if shard is not None:
            avoid |= shard
    free = [q for q in candidates if q not in avoid]
    return free or candidates
