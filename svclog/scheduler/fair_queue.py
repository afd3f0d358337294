"""`FairQueue`: per-tenant queue trees served round-robin, level by level.

The tree is root -> tenant -> actor-path levels. Dequeue takes turns across tenants, then
inside the chosen tenant across its local queue (one participant when non-empty) and its
sub-queues, recursively per level. So with N busy actors under a tenant each gets 1/N of
that tenant's dequeues however many requests each has queued. A dequeue names its consumer
group (the querier's node): each group takes its own turns (see queue_tree), so the 1/N holds
for each node's queriers, not only for all of them together. Deterministic, no threads.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Generic, NamedTuple, TypeVar

from svclog.model import RateLimitError
from svclog.scheduler.actor_path import ActorPath, limit_depth
from svclog.scheduler.queue_tree import QueueNode

T = TypeVar("T")

DEFAULT_MAX_OUTSTANDING = 32768
DEFAULT_MAX_LEVELS = 3


class TooManyOutstandingRequests(RateLimitError):
    """The tenant already has `max_outstanding_requests_per_tenant` sub-queries queued (HTTP 429)."""


class Dequeued(NamedTuple, Generic[T]):
    ticket: int
    tenant: str
    path: ActorPath
    item: T
    contenders: int = 1  # participants of its tenant's first level that had work (local queue, sub-queues)


class FairQueue(Generic[T]):
    def __init__(self, max_outstanding_per_tenant: int = DEFAULT_MAX_OUTSTANDING, max_levels: int = DEFAULT_MAX_LEVELS):
        self.max_outstanding_per_tenant = max_outstanding_per_tenant
        self.max_levels = max_levels
        self._root: QueueNode[T] = QueueNode("")
        self._where: dict[int, QueueNode[T]] = {}  # queued ticket -> node holding it
        self._tickets = itertools.count(1)
        self.discarded: dict[str, int] = {}  # tenant -> sub-queries refused with 429

    # ------------------------------------------------------------ writes

    def enqueue(self, tenant: str, path: ActorPath, item: T) -> int:
        return self.enqueue_many(tenant, path, (item,))[0]

    def enqueue_many(self, tenant: str, path: ActorPath, items: Iterable[T]) -> list[int]:
        """Queue all items under (tenant, path) or none: the tenant limit is checked for the batch."""
        batch = list(items)
        if not tenant:
            raise ValueError("empty tenant is not allowed")
        path = limit_depth(path, self.max_levels)
        if not batch:
            return []
        node = self._node_for(tenant, path, len(batch))
        tickets = []
        for item in batch:
            ticket = next(self._tickets)
            node.push(ticket, item)
            self._where[ticket] = node
            tickets.append(ticket)
        return tickets

    def requeue(self, ticket: int, tenant: str, path: ActorPath, item: T) -> None:
        """Put a dequeued item back at the front of its queue (its querier died); no limit applies."""
        node = self._root.child(tenant).descend(path)
        node.push(ticket, item, front=True)
        self._where[ticket] = node

    def remove(self, ticket: int) -> bool:
        """Drop a still-queued ticket (the query was cancelled). False if it is not queued."""
        node = self._where.pop(ticket, None)
        return node is not None and node.remove(ticket)

    def dequeue(self, group: str = "", may_serve: Callable[[str], bool] | None = None) -> Dequeued[T] | None:
        """The next item in `group`'s turns (one group: plain round-robin). `may_serve(tenant)`:
        whether the asking querier may take that tenant's work (its querier shard); tenants it
        may not serve are passed over and keep their turn for the queriers that may."""
        if not self._root.active:
            return None
        # how many of the served tenant's first-level queues compete for this turn (fairness metrics)
        served = self._root.next_key(group) if may_serve is None else self._root.next_child(group, may_serve)
        if served is None:
            return None  # every tenant with work is sharded away from this querier
        contenders = len(self._root.children[served].active)
        taken = self._root.pop(group, None if may_serve is None else served)
        if taken is None:
            return None
        ticket, item, node = taken
        del self._where[ticket]
        tenant, *path = _path_of(node)
        return Dequeued(ticket, tenant, tuple(path), item, contenders)

    def _node_for(self, tenant: str, path: ActorPath, adding: int) -> QueueNode[T]:
        queued = self.tenant_length(tenant)
        if queued + adding > self.max_outstanding_per_tenant:
            self.discarded[tenant] = self.discarded.get(tenant, 0) + adding
            raise TooManyOutstandingRequests(
                f"too many outstanding requests: tenant '{tenant}' has {queued} queued sub-queries and this "
                f"query adds {adding}, over the limit of {self.max_outstanding_per_tenant} "
                "(query_scheduler.max_outstanding_requests_per_tenant)"
            )
        return self._root.child(tenant).descend(path)

    def forget_group(self, group: str) -> None:
        """A consumer group is gone (its node left): drop its turns."""
        self._root.forget_group(group)

    # ------------------------------------------------------------ reads (metrics)

    def __len__(self) -> int:
        return self._root.size

    def __contains__(self, ticket: object) -> bool:
        return ticket in self._where

    def tenant_length(self, tenant: str) -> int:
        node = self._root.children.get(tenant)
        return node.size if node is not None else 0

    def lengths(self) -> dict[str, int]:
        """Queued sub-queries per tenant (tenants with an empty queue are absent)."""
        return {tenant: node.size for tenant, node in self._root.children.items()}

    def queue_lengths(self, tenant: str) -> dict[ActorPath, int]:
        """Items waiting in each non-empty FIFO of a tenant's tree; () is the tenant's local queue."""
        node = self._root.children.get(tenant)
        if node is None:
            return {}
        return {path: len(sub.local) for path, sub in node.walk() if sub.local}


def _path_of(node: QueueNode) -> list[str]:
    names = []
    while node.parent is not None:
        names.append(node.name)
        node = node.parent
    names.reverse()
    return names
