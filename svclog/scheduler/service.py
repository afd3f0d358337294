"""`Scheduler`: the fair queue plus the life of each sub-query (queued -> running -> done).

Pure and non-blocking: the actor host (svclog/actors/scheduler_actor.py) supplies the waiting.
A ticket is live from `enqueue` until `complete` or `cancel`. While running it is bound to
one querier; if that querier restarts (a new incarnation asks for work), is forgotten or stays
silent past `querier_silence_s` (it died and nobody restarted it), its running tickets go back
to the front of their queues, up to `max_attempts` dispatches. Slowness never re-queues: a
copy of running work would only compete with it.

Each querier belongs to a consumer group, its node: the fair queue takes turns per group, so
the queriers of every node get the actor paths' equal shares (not just all nodes together).
A querier whose node is not known yet is in the default group "".

A querier that says how many sub-queries it runs at once (`slots`) keeps `RESERVED_SLOTS` of
them from any one tenant: a tenant holding all but those passes its turn on that querier, so
another tenant's small query finds a free slot instead of queueing behind a heavy tenant's
work (issue 16: with every slot busy, a light tenant's sub-query waited up to 2 s).

A ticket may carry a deadline (wall clock): once past it, it is dropped from the queue rather
than handed out. Queriers send `heartbeat`s with the tickets they run and are told which of
them are gone (cancelled, expired, re-queued elsewhere), so they stop that work.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from svclog.scheduler.actor_path import ActorPath, limit_depth
from svclog.scheduler.fair_queue import DEFAULT_MAX_LEVELS, DEFAULT_MAX_OUTSTANDING, FairQueue
from svclog.scheduler.querier_shard import MaxQueriers, QuerierShards

T = TypeVar("T")
RESERVED_SLOTS = 1  # slots of a querier no single tenant may fill (kept for the other tenants)
FORGOTTEN_KEPT = 1024  # forgotten querier ids remembered (their late calls get no work)
DISPATCH_LOG = 4096  # hand-outs remembered for metrics (which querier, which actor path)


class QuerierLostError(RuntimeError):
    """A sub-query's querier died `max_attempts` times while running it (a server fault, HTTP 5xx)."""


@dataclass(frozen=True)
class SchedulerSettings:
    max_outstanding_per_tenant: int = DEFAULT_MAX_OUTSTANDING
    max_queue_hierarchy_levels: int = DEFAULT_MAX_LEVELS
    max_attempts: int = 5  # dispatches of one sub-query before a dying querier fails it
    querier_silence_s: float = 30.0  # a querier running work with no heartbeat this long is dead


@dataclass(frozen=True)
class Assignment(Generic[T]):
    """A sub-query handed to a querier; `queue_seconds` is what responses report as `queueTime`."""

    ticket: int
    tenant: str
    path: ActorPath
    item: T
    queue_seconds: float
    attempt: int
    deadline: float | None = None  # wall clock seconds; the querier stops the work past it
    query: int = 0  # shared by the sub-queries queued together: the query they are pieces of


@dataclass(frozen=True)
class Dispatch:
    """One hand-out, kept for metrics: which querier took which tenant's sub-query from which
    actor path, and how many of that tenant's first-level queues had work then (`contenders`)."""

    ticket: int
    tenant: str
    path: ActorPath
    querier: str
    contenders: int
    group: str = ""  # the querier's consumer group (its node) whose turns it took


@dataclass(frozen=True)
class Released:
    """Tickets a lost querier was running: back in the queue, or given up after `max_attempts`."""

    requeued: tuple[int, ...] = ()
    abandoned: tuple[int, ...] = ()


@dataclass(frozen=True)
class SchedulerStats:
    queued: dict[str, int]
    running: int
    queriers: int
    discarded: dict[str, int]
    dequeued: int
    queue_seconds_total: float
    dispatched: dict[str, int] = field(default_factory=dict)  # querier id -> sub-queries handed to it
    requeued: int = 0  # sub-queries queued again because their querier died or restarted


@dataclass
class _Ticket(Generic[T]):
    tenant: str
    path: ActorPath
    item: T
    enqueued_at: float
    querier: str | None = None
    attempts: int = 0
    deadline: float | None = None
    query: int = 0  # the first ticket of its enqueue


@dataclass
class _Querier:
    incarnation: str
    running: set[int] = field(default_factory=set)
    shutting_down: bool = False
    seen_at: float = 0.0
    group: str = ""  # its node: whose turns of the fair queue it takes
    slots: int = 0  # sub-queries it runs at once (0: unknown, no slot is reserved)


class Scheduler(Generic[T]):
    def __init__(
        self,
        settings: SchedulerSettings = SchedulerSettings(),
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        max_queriers: MaxQueriers | None = None,
    ):
        """`max_queriers(tenant, live queriers)`: how many queriers may run the tenant's work
        (0: all); each tenant then gets a stable subset of that many (see querier_shard)."""
        self.settings = settings
        self.shards = QuerierShards(max_queriers)
        self._members_changed = True
        self.queue: FairQueue[T] = FairQueue(settings.max_outstanding_per_tenant, settings.max_queue_hierarchy_levels)
        self._clock = clock
        self._wall = wall
        self._tickets: dict[int, _Ticket[T]] = {}
        self._queriers: dict[str, _Querier] = {}
        self._dequeued = 0
        self._requeued = 0
        self._queue_seconds_total = 0.0
        self._expired: list[int] = []
        self._forgotten: dict[str, str] = {}  # querier id -> incarnation of the forgotten process
        self._dispatched: dict[str, int] = {}
        self._recent: deque[Dispatch] = deque(maxlen=DISPATCH_LOG)

    # ------------------------------------------------------------ frontend side

    def enqueue(self, tenant: str, path: ActorPath, item: T, deadline: float | None = None) -> int:
        return self.enqueue_many(tenant, path, (item,), deadline)[0]

    def enqueue_many(
        self, tenant: str, path: ActorPath, items: Iterable[T], deadline: float | None = None
    ) -> list[int]:
        """All of a query's sub-queries at once, or none (TooManyOutstandingRequests, QueueDepthError).
        `deadline` (wall clock seconds): past it the sub-queries are dropped, not handed out."""
        batch = list(items)
        path = limit_depth(path, self.settings.max_queue_hierarchy_levels)  # as queued, for retries
        tickets = self.queue.enqueue_many(tenant, path, batch)
        now = self._clock()
        for ticket, item in zip(tickets, batch):
            self._tickets[ticket] = _Ticket(tenant, path, item, now, deadline=deadline, query=tickets[0])
        return tickets

    def cancel(self, ticket: int) -> bool:
        """Forget a ticket wherever it is; a querier's later `complete` for it returns False."""
        entry = self._tickets.pop(ticket, None)
        if entry is None:
            return False
        self.queue.remove(ticket)
        self._unbind(ticket, entry)
        return True

    # ------------------------------------------------------------ querier side

    def next_for_querier(self, querier_id: str, slots: int = 0) -> Assignment[T] | None:
        """The next sub-query in fair order, or None when nothing is queued (never blocks).
        Sub-queries past their deadline are dropped on the way (see `take_expired`). `slots`:
        how many sub-queries this querier runs at once (a tenant may fill all but
        RESERVED_SLOTS of them; 0 keeps what it said before)."""
        if querier_id in self._forgotten:
            return None  # a late call of a forgotten process: its work would wait for nobody
        querier = self._queriers.get(querier_id)
        if querier is None:
            querier = self._queriers[querier_id] = _Querier("")
            self._members_changed = True
        querier.seen_at = self._clock()
        if slots > 0:
            querier.slots = slots
        if querier.shutting_down:
            return None
        may_serve = self._may_serve(querier_id, querier)
        while True:
            taken = self.queue.dequeue(querier.group, may_serve)
            if taken is None:
                return None
            entry = self._tickets[taken.ticket]
            if entry.deadline is None or entry.deadline > self._wall():
                break
            del self._tickets[taken.ticket]
            self._expired.append(taken.ticket)
        entry.querier = querier_id
        entry.attempts += 1
        querier.running.add(taken.ticket)
        waited = max(0.0, self._clock() - entry.enqueued_at)
        self._dequeued += 1
        self._queue_seconds_total += waited
        self._dispatched[querier_id] = self._dispatched.get(querier_id, 0) + 1
        self._recent.append(
            Dispatch(taken.ticket, entry.tenant, entry.path, querier_id, taken.contenders, querier.group)
        )
        return Assignment(
            taken.ticket, entry.tenant, entry.path, entry.item, waited, entry.attempts, entry.deadline, entry.query
        )

    def _may_serve(self, querier_id: str, querier: _Querier) -> Callable[[str], bool] | None:
        """Which tenants this querier may take work from now (None: any): its querier shard's,
        and none that holds all of its slots but the reserved ones."""
        sharded = self.shards.enabled
        if sharded:
            self._update_members()
        cap = querier.slots - RESERVED_SLOTS
        held = self._held_by_tenant(querier) if cap > 0 and len(querier.running) >= cap else {}
        full = {tenant for tenant, n in held.items() if n >= cap}
        if not sharded and not full:
            return None
        return lambda tenant: tenant not in full and (not sharded or self.shards.may_serve(tenant, querier_id))

    def _held_by_tenant(self, querier: _Querier) -> dict[str, int]:
        held: dict[str, int] = {}
        for ticket in querier.running:
            entry = self._tickets.get(ticket)
            if entry is not None:
                held[entry.tenant] = held.get(entry.tenant, 0) + 1
        return held

    def at_slot_cap(self, tenant: str) -> bool:
        """Whether some querier passes `tenant` over because it holds all its unreserved slots
        (a wake-up for that tenant must then reach every querier, not one that may pass)."""
        for querier in self._queriers.values():
            cap = querier.slots - RESERVED_SLOTS
            if cap > 0 and len(querier.running) >= cap and self._held_by_tenant(querier).get(tenant, 0) >= cap:
                return True
        return False

    def _update_members(self) -> None:
        if self._members_changed:
            self._members_changed = False
            self.shards.set_queriers(q for q, state in self._queriers.items() if not state.shutting_down)

    def querier_shard(self, tenant: str) -> frozenset[str] | None:
        """The queriers that may take `tenant`'s work now (None: every querier)."""
        if not self.shards.enabled:
            return None
        self._update_members()
        return self.shards.allowed(tenant)

    def restricts(self, tenant: str) -> bool:
        """Whether only some queriers may take `tenant`'s work (a wake-up must reach them all)."""
        return self.querier_shard(tenant) is not None

    def take_expired(self) -> list[int]:
        """Tickets dropped from the queue past their deadline since the last call."""
        expired, self._expired = self._expired, []
        return expired

    def heartbeat(self, querier_id: str, running: Iterable[int]) -> list[int]:
        """A querier is alive and runs `running`: the ones it should stop (cancelled, answered
        by another copy, past their deadline, re-queued elsewhere, or unknown to this scheduler)."""
        querier = self._queriers.get(querier_id)
        if querier is not None:
            querier.seen_at = self._clock()
        now = self._wall()
        gone = []
        for ticket in running:
            entry = self._tickets.get(ticket)
            if entry is None or entry.querier != querier_id or (entry.deadline is not None and entry.deadline <= now):
                gone.append(ticket)
        return gone

    def reap_silent(self) -> Released:
        """Queriers that hold running work but sent nothing for `querier_silence_s` died: their
        work goes back to the queue (a querier restarted in place is noticed sooner, by incarnation)."""
        limit = self._clock() - self.settings.querier_silence_s
        released = [self._release(q) for q in self._queriers.values() if q.running and q.seen_at < limit]
        return Released(tuple(t for r in released for t in r.requeued), tuple(t for r in released for t in r.abandoned))

    def complete(self, ticket: int) -> bool:
        """The ticket is done (answered or failed). False: it was cancelled or already completed."""
        entry = self._tickets.pop(ticket, None)
        if entry is None:
            return False
        self.queue.remove(ticket)  # a retried copy may still be queued; the first answer wins
        self._unbind(ticket, entry)
        return True

    # ------------------------------------------------------------ querier membership

    def register_querier(self, querier_id: str, incarnation: str = "") -> Released:
        """Announce a querier process. `incarnation` identifies the process (e.g. its pid): a new
        value for a known querier means it restarted, so what the old process ran is queued again."""
        if querier_id in self._forgotten:
            if self._forgotten[querier_id] == incarnation:
                return Released()  # the forgotten process itself, still calling: stays forgotten
            del self._forgotten[querier_id]  # a new process under that name (scaled up again)
        querier = self._queriers.get(querier_id)
        if querier is None:
            self._queriers[querier_id] = _Querier(incarnation, seen_at=self._clock())
            self._members_changed = True
            return Released()
        querier.seen_at = self._clock()
        if querier.incarnation == incarnation:
            return Released()
        querier.incarnation = incarnation
        querier.shutting_down = False
        self._members_changed = True
        return self._release(querier)

    def set_group(self, querier_id: str, group: str) -> None:
        """The querier's consumer group (its node); the fair queue forgets a group's turns once
        no querier is in it."""
        querier = self._queriers.get(querier_id)
        if querier is None or querier.group == group:
            return
        previous, querier.group = querier.group, group
        self._drop_group_if_empty(previous)

    def _drop_group_if_empty(self, group: str) -> None:
        if group and all(q.group != group for q in self._queriers.values()):
            self.queue.forget_group(group)

    def notify_shutdown(self, querier_id: str) -> None:
        """A querier is draining: it finishes what it runs but gets no new work."""
        querier = self._queriers.get(querier_id)
        if querier is not None:
            querier.shutting_down = True
            self._members_changed = True

    def forget_querier(self, querier_id: str) -> Released:
        """A querier is gone for good: re-queue (or give up) what it was running. Calls its process
        still makes (a dequeue parked before the forget) get no work; a new process under the same
        name (another incarnation) is a new querier."""
        querier = self._queriers.pop(querier_id, None)
        self._members_changed = True
        self._forgotten[querier_id] = querier.incarnation if querier is not None else ""
        while len(self._forgotten) > FORGOTTEN_KEPT:
            del self._forgotten[next(iter(self._forgotten))]
        if querier is None:
            return Released()
        self._drop_group_if_empty(querier.group)
        return self._release(querier)

    def _release(self, querier: _Querier) -> Released:
        requeued, abandoned = [], []
        for ticket in sorted(querier.running):
            entry = self._tickets[ticket]
            entry.querier = None
            if entry.attempts >= self.settings.max_attempts:
                del self._tickets[ticket]
                abandoned.append(ticket)
            else:
                self.queue.requeue(ticket, entry.tenant, entry.path, entry.item)
                requeued.append(ticket)
        querier.running.clear()
        self._requeued += len(requeued)
        return Released(tuple(requeued), tuple(abandoned))

    def _unbind(self, ticket: int, entry: _Ticket[T]) -> None:
        if entry.querier is not None and entry.querier in self._queriers:
            self._queriers[entry.querier].running.discard(ticket)

    # ------------------------------------------------------------ metrics

    def running_on(self, querier_id: str) -> frozenset[int]:
        querier = self._queriers.get(querier_id)
        return frozenset(querier.running) if querier is not None else frozenset()

    def recent_dispatches(self, tenant: str | None = None) -> list[Dispatch]:
        """The last `DISPATCH_LOG` hand-outs, oldest first (of one tenant when given)."""
        return [d for d in self._recent if tenant is None or d.tenant == tenant]

    def stats(self) -> SchedulerStats:
        return SchedulerStats(
            queued=self.queue.lengths(),
            running=sum(len(q.running) for q in self._queriers.values()),
            queriers=len(self._queriers),
            discarded=dict(self.queue.discarded),
            dequeued=self._dequeued,
            queue_seconds_total=self._queue_seconds_total,
            dispatched=dict(self._dispatched),
            requeued=self._requeued,
        )
