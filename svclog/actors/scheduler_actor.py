"""Ray host of the query Scheduler: frontends enqueue sub-queries and await results; queriers pull.

An async actor: `dequeue` parks on an asyncio.Condition until work exists (or its timeout),
and each ticket's outcome is an asyncio.Future resolved by the querier's `complete`/`fail`.
Outcomes are opaque: pass a small result as is, or `[ray.put(result)]` to keep large Arrow
data out of this actor (a list stops Ray from resolving the reference here).

Each querier's node is looked up once per querier process (the GCS knows where a named actor
runs) and made its consumer group, so the fair queue's turns are kept per node.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import Any, NamedTuple

import ray

from svclog.actors.options import NAMESPACE
from svclog.actors.querier_scaler import QuerierPool, scaling_enabled
from svclog.config import Config, limits_for
from svclog.log_level import apply_level
from svclog.logql.engine.guard import QueryTimedOut, smallest_positive
from svclog.scheduler import (
    ActorPath,
    Assignment,
    Dispatch,
    QuerierLostError,
    Released,
    Scheduler,
    SchedulerSettings,
    SchedulerStats,
)
from svclog.scheduler.querier_shard import MaxQueriers, max_consumers

SCHEDULER_NAME = "scheduler"
SCALING_PERIOD_S = 1.0  # how often the querier pool samples the load and decides
log = logging.getLogger("svclog")


def node_of_actor(name: str) -> str:
    """The Ray node id of the named actor in svclog's namespace; "" when unknown (no Ray, not an actor)."""
    if not ray.is_initialized():
        return ""
    try:
        from ray._private.state import actors  # the GCS actor table (the state API needs the dashboard)

        handle = ray.get_actor(name, namespace=NAMESPACE)
        return str(actors(actor_id=handle._actor_id.hex()).get("Address", {}).get("NodeID") or "")
    except Exception:  # noqa: BLE001 - unknown: the querier keeps the default group
        return ""


class Finished(NamedTuple):
    """A querier's outcome of one sub-query, sent with its next `dequeue`: the answer (as
    `complete` takes it) or the error (as `fail` takes it)."""

    ticket: int
    answer: Any = None
    error: BaseException | None = None


class TicketLost(KeyError):
    """`result` of a ticket this scheduler does not hold: already collected, or queued on a
    predecessor that restarted (the frontend queues the sub-query again)."""


def scheduler_settings(cfg: Config) -> SchedulerSettings:
    return SchedulerSettings(
        max_outstanding_per_tenant=cfg.query_scheduler.max_outstanding_requests_per_tenant,
        max_queue_hierarchy_levels=cfg.query_scheduler.max_queue_hierarchy_levels,
        max_attempts=max(1, cfg.query_range.max_retries),
    )


def scheduler_options(cfg: Config) -> dict:
    # restarts lose the queue: frontends see RayActorError on `result` and enqueue again
    return {
        "name": SCHEDULER_NAME,
        "namespace": NAMESPACE,
        "num_cpus": cfg.ray.scheduler_num_cpus,
        "max_restarts": -1,
        "max_task_retries": 0,
        "max_concurrency": 10_000,
        "get_if_exists": True,
    }


def tenant_queriers(cfg: Config) -> MaxQueriers:
    """`max_queriers_per_tenant` / `max_query_capacity` of a tenant key (the smallest positive
    of a multi-tenant query's tenants), from the limits with their runtime overrides."""

    def count(key: str, all_queriers: int) -> int:
        try:
            per_tenant = [limits_for(cfg, tenant) for tenant in key.split("|")]
        except Exception:  # noqa: BLE001 - an unreadable overrides file must not stop hand-outs
            log.warning("tenant limits unknown, every querier may serve %s", key, exc_info=True)
            return 0
        return smallest_positive(
            max_consumers(lim.max_queriers_per_tenant, lim.max_query_capacity, all_queriers) for lim in per_tenant
        )

    return count


class SchedulerActor:
    def __init__(self, cfg: Config, node_of: Callable[[str], str] = node_of_actor):
        apply_level(cfg.server.log_level)  # the configured level; a POSTed one arrives from the gateways
        self.scheduler: Scheduler[Any] = Scheduler(scheduler_settings(cfg), max_queriers=tenant_queriers(cfg))
        self._node_of = node_of
        # (querier id, incarnation) -> the lookup of its node (one per querier process)
        self._nodes: dict[tuple[str, str], asyncio.Task] = {}
        self._work = asyncio.Condition()
        self._outcomes: dict[int, asyncio.Future] = {}
        # the read group's autoscaling (a joined cluster with ray.max_queriers set); its loop starts
        # with the first call, on the event loop this actor's methods run on
        self._pool = QuerierPool(cfg, self.scheduler) if scaling_enabled(cfg) else None
        self._scaling_task: asyncio.Task | None = None

    def ready(self) -> bool:
        return True

    def set_log_level(self, level: str) -> str:
        return apply_level(level)

    def pid(self) -> int:
        return os.getpid()

    # ------------------------------------------------------------ frontend side

    async def enqueue(self, tenant: str, path: ActorPath, items: list, deadline: float | None = None) -> list[int]:
        """Queue a query's sub-queries (all or none); raises TooManyOutstandingRequests / QueueDepthError.
        `deadline` (wall clock seconds): the query's end; past it its sub-queries are dropped."""
        tickets = self.scheduler.enqueue_many(tenant, tuple(path), items, deadline)
        loop = asyncio.get_running_loop()
        for ticket in tickets:
            self._outcomes[ticket] = loop.create_future()
        # a querier woken for a tenant outside its shard takes nothing: wake them all then
        every = self.scheduler.restricts(tenant) or self.scheduler.at_slot_cap(tenant)
        await self._wake(len(tickets), every=every)
        return tickets

    async def result(self, ticket: int, timeout: float | None = None) -> Any:
        """What the querier passed to `complete`, or the error it passed to `fail`."""
        outcome = self._outcomes.get(ticket)
        if outcome is None:
            raise TicketLost(f"unknown or already collected ticket {ticket}")
        try:
            return await asyncio.wait_for(asyncio.shield(outcome), timeout)
        finally:
            if outcome.done():
                self._outcomes.pop(ticket, None)

    async def results(self, tickets: list[int], timeout: float | None = None) -> list[Any]:
        return list(await asyncio.gather(*(self.result(ticket, timeout) for ticket in tickets)))

    async def cancel(self, tickets: list[int]) -> int:
        """Drop queued or running tickets (client gone, timeout, an error elsewhere in the query)."""
        dropped = 0
        for ticket in tickets:
            dropped += self.scheduler.cancel(ticket)
            outcome = self._outcomes.pop(ticket, None)
            if outcome is not None and not outcome.done():
                outcome.cancel()
        return dropped

    # ------------------------------------------------------------ querier side

    async def dequeue(
        self,
        querier_id: str,
        timeout: float = 1.0,
        incarnation: str = "",
        finished: Finished | None = None,
        slots: int = 0,
    ) -> Assignment | None:
        """Next sub-query for this querier, waiting up to `timeout` s; None when none came.
        `finished`: the outcome of the querier's previous sub-query, settled first (one call
        per sub-query instead of a `complete` and a `dequeue`). `slots`: the querier's pull
        loops (one tenant may fill all but the scheduler's reserved ones)."""
        if finished is not None:
            self._finish(finished)
        self._follow_load()
        await self._settle(self.scheduler.register_querier(querier_id, incarnation))
        await self._place(querier_id, incarnation)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        async with self._work:
            while True:
                assignment = self._next(querier_id, slots)
                remaining = deadline - loop.time()
                if assignment is not None or remaining <= 0:
                    return assignment
                try:
                    await asyncio.wait_for(self._work.wait(), remaining)
                except TimeoutError:
                    return self._next(querier_id, slots)

    async def _place(self, querier_id: str, incarnation: str) -> None:
        """Put the querier in its node's consumer group (looked up once per process)."""
        key = (querier_id, incarnation)
        lookup = self._nodes.get(key)
        if lookup is None:
            lookup = self._nodes[key] = asyncio.create_task(asyncio.to_thread(self._node_of, querier_id))
            for old in [k for k in self._nodes if k[0] == querier_id and k != key]:
                del self._nodes[old]  # a restarted querier: its old process is gone
        self.scheduler.set_group(querier_id, await asyncio.shield(lookup))

    def _next(self, querier_id: str, slots: int = 0) -> Assignment | None:
        assignment = self.scheduler.next_for_querier(querier_id, slots)
        for ticket in self.scheduler.take_expired():  # its frontend has given up on it by now
            outcome = self._outcomes.get(ticket)
            if outcome is not None and not outcome.done():
                outcome.set_exception(QueryTimedOut("the query timed out while queued"))
        return assignment

    async def heartbeat(self, querier_id: str, incarnation: str, running: list[int]) -> list[int]:
        """A querier's liveness and the tickets it runs; answers those it should stop. Also
        re-queues the work of queriers silent too long (dead, not restarted)."""
        await self._settle(self.scheduler.register_querier(querier_id, incarnation))
        gone = self.scheduler.heartbeat(querier_id, running)
        await self._settle(self.scheduler.reap_silent())
        return gone

    async def complete(self, ticket: int, result: Any) -> bool:
        """False: the ticket was cancelled or already answered (drop the result)."""
        return self._resolve(ticket, lambda outcome: outcome.set_result(result))

    async def fail(self, ticket: int, error: BaseException) -> bool:
        return self._resolve(ticket, lambda outcome: outcome.set_exception(error))

    def _finish(self, finished: Finished) -> bool:
        if finished.error is not None:
            error = finished.error
            return self._resolve(finished.ticket, lambda outcome: outcome.set_exception(error))
        return self._resolve(finished.ticket, lambda outcome: outcome.set_result(finished.answer))

    async def notify_shutdown(self, querier_id: str) -> None:
        self.scheduler.notify_shutdown(querier_id)

    async def forget_querier(self, querier_id: str) -> Released:
        for key in [k for k in self._nodes if k[0] == querier_id]:
            del self._nodes[key]
        released = self.scheduler.forget_querier(querier_id)
        await self._settle(released)
        return released

    # ------------------------------------------------------------ metrics

    async def stats(self) -> SchedulerStats:
        return self.scheduler.stats()

    async def dispatches(self, tenant: str | None = None) -> list[Dispatch]:
        """Recent hand-outs (querier, actor path, contenders), oldest first."""
        return self.scheduler.recent_dispatches(tenant)

    async def querier_pool(self) -> dict | None:
        """The autoscaled querier pool (None when the querier count is fixed)."""
        return None if self._pool is None else self._pool.state()

    # ------------------------------------------------------------ autoscaling

    def _follow_load(self) -> None:
        if self._pool is not None and self._scaling_task is None:
            self._scaling_task = asyncio.get_running_loop().create_task(self._scale_forever())

    async def _scale_forever(self) -> None:
        assert self._pool is not None
        while True:
            await asyncio.sleep(SCALING_PERIOD_S)
            try:
                await self._settle(self._pool.tick())
            except Exception:
                log.exception("querier scaling round failed")

    async def queue_lengths(self, tenant: str) -> dict[ActorPath, int]:
        return self.scheduler.queue.queue_lengths(tenant)

    # ------------------------------------------------------------ internals

    def _resolve(self, ticket: int, settle) -> bool:
        if not self.scheduler.complete(ticket):
            return False
        outcome = self._outcomes.get(ticket)
        if outcome is not None and not outcome.done():
            settle(outcome)
        return True

    async def _settle(self, released: Released) -> None:
        for ticket in released.abandoned:
            outcome = self._outcomes.get(ticket)
            if outcome is not None and not outcome.done():
                attempts = self.scheduler.settings.max_attempts
                outcome.set_exception(QuerierLostError(f"sub-query lost with its querier {attempts} times"))
        await self._wake(len(released.requeued))

    async def _wake(self, count: int, every: bool = False) -> None:
        if count:
            async with self._work:
                if every:
                    self._work.notify_all()
                else:
                    self._work.notify(count)


RemoteScheduler = ray.remote(SchedulerActor)
