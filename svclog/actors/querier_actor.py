"""Ray host of a Querier: reads the store and the ingesters, runs LogQL."""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable
from typing import TypeVar, cast

import ray

from svclog.actors.answers import pack_answer
from svclog.actors.calls import call_cancelled
from svclog.actors.clients import IngesterPool, RingClient
from svclog.actors.idle_release import start_idle_release
from svclog.actors.indexgateway_actor import GatewayIndex
from svclog.actors.malloc_trim import MallocTrimmer, QuietRelease, release_arrow_heap
from svclog.actors.registry import named_actor
from svclog.actors.scheduler_actor import SCHEDULER_NAME, Finished
from svclog.compactor import DeleteRequestStore, QueryTimeDeletes
from svclog.config import Config, object_store_uri, replication_factor
from svclog.cpu_priority import LongWorkGate, LongWorkPriority, in_background, share_the_gil
from svclog.log_level import apply_level
from svclog.logql.engine.guard import QueryCancelled, QueryGuard, QueryLimits
from svclog.querier.querier import Querier, QuerierSettings
from svclog.querier.running import RunningQueries
from svclog.querier.warmup import warm_up
from svclog.scheduler import Assignment
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore

R = TypeVar("R")


def querier_settings(cfg: Config) -> QuerierSettings:
    return QuerierSettings(
        query_ingesters_within=cfg.querier.query_ingesters_within,
        max_entries_limit_per_query=cfg.limits_config.max_entries_limit_per_query,
        max_query_series=cfg.limits_config.max_query_series,
        max_query_memory_bytes=cfg.limits_config.max_query_memory_bytes,
    )


def build_querier(cfg: Config, chunk_cache_bytes: int, index_cache_bytes: int | None = None) -> Querier:
    """A Querier over the object store and the ingester actors: the querier actor's, and the
    query frontend's own for its read facts and small queries (svclog/frontend/local_lane.py).
    Index lookups go to the tenant's index gateway while one runs (its ring has a healthy member)."""
    store = ObjectStore(object_store_uri(cfg))
    index = GatewayIndex(
        IndexReader(store, max_cached_bytes=index_cache_bytes),
        cfg.index_gateway.mode,
        cfg.index_gateway.ring.replication_factor,
    )
    return Querier(
        index,
        ChunkStore(store, cache_bytes=chunk_cache_bytes),
        IngesterPool(RingClient(), replication_factor(cfg), local_reads=True),
        querier_settings(cfg),
        deletes=QueryTimeDeletes(DeleteRequestStore(store)),
    )


class QuerierActor:
    def __init__(self, cfg: Config, querier_id: str | None = None):
        apply_level(cfg.server.log_level)  # the configured level; a POSTed one arrives from the gateways
        share_the_gil()
        start_idle_release()  # glibc's arenas and the object store's pages; the pull loops' heaps: _QUIET
        self._pullers: list[threading.Thread] = []
        self._slots = 0  # pull loops, as the scheduler is told
        self.running = RunningQueries()  # what the pull loops run, stopped when the scheduler says so
        self.priority = LongWorkPriority()  # long sub-queries at a lower CPU priority (Linux, if reversible)
        self.long_work = LongWorkGate()  # and take turns at the GIL while several queries run
        self.calls = RunningQueries()  # direct calls (metadata, the ruler's queries), stopped by ray.cancel
        self._call_ids = itertools.count()
        self._stopping = threading.Event()
        # a bounded chunk cache per querier process (repeated dashboard queries hit it)
        self.querier = build_querier(cfg, chunk_cache_bytes=cfg.chunk_store_config.chunk_cache_bytes())
        self.index = cast(GatewayIndex, self.querier.index)  # its lookup counts (index_lookups)
        # the first query's imports and first-use costs, paid now (querier/warmup.py)
        threading.Thread(target=_warm_up, name="warm-up", daemon=True).start()
        if querier_id is not None:
            # pulling starts with the process, so a querier Ray restarts after a crash pulls again
            # (and its new process id tells the scheduler to re-queue what the old one was running)
            self.start_pulling(querier_id, cfg.querier.max_concurrent)

    def ready(self) -> bool:
        return True

    def start_pulling(self, querier_id: str, slots: int) -> None:
        """Run `slots` loops that take sub-queries from the scheduler (querier.max_concurrent)."""
        if self._pullers:
            return
        self._slots = max(1, slots)
        for slot in range(self._slots):
            thread = threading.Thread(target=self._pull_loop, args=(querier_id,), name=f"pull-{slot}", daemon=True)
            thread.start()
            self._pullers.append(thread)
        threading.Thread(target=self._watch, args=(querier_id,), name="heartbeat", daemon=True).start()

    def _watch(self, querier_id: str) -> None:
        """Heartbeats with the running tickets; stops the work of those the scheduler calls gone."""
        incarnation = str(os.getpid())
        scheduler: list = [None]

        def heartbeat(tickets: list[int]) -> list[int]:
            if scheduler[0] is None:
                scheduler[0] = _try_actor(SCHEDULER_NAME)
            try:
                return ray.get(scheduler[0].heartbeat.remote(querier_id, incarnation, tickets), timeout=10)
            except Exception:
                scheduler[0] = None  # restarted or gone: look it up again next time
                raise

        self.running.watch(heartbeat, self._stopping)

    def _pull_loop(self, querier_id: str) -> None:
        scheduler = _try_actor(SCHEDULER_NAME)
        while scheduler is None:  # the backend group (scheduler) may start after the read group
            time.sleep(1.0)
            scheduler = _try_actor(SCHEDULER_NAME)
        incarnation = str(os.getpid())  # lets the scheduler requeue work of a dead predecessor
        # the last sub-query's outcome rides on the next dequeue: one scheduler call per sub-query
        finished: Finished | None = None
        while True:
            try:
                # with its slot count: the scheduler keeps one of them from any single tenant
                assignment = ray.get(scheduler.dequeue.remote(querier_id, 1.0, incarnation, finished, self._slots))
                finished = None
            except Exception as err:  # the scheduler restarts: wait for it
                # the outcome goes again as a plain error, in case it was what could not be sent
                # (a restarted scheduler ignores the ticket: its frontend queues it again)
                finished = None if finished is None else _undelivered(finished, err)
                time.sleep(1.0)
                scheduler = _try_actor(SCHEDULER_NAME) or scheduler
                continue
            if assignment is not None:
                finished = self._run_assignment(assignment)
            # after a sub-query, or a second without one: memory owed goes back (QuietRelease)
            _QUIET.between_work()

    def _run_assignment(self, assignment: Assignment) -> Finished | None:
        """The sub-query's outcome for the scheduler; None when it was abandoned (cancelled)."""
        tenants, sub, limits = assignment.item
        guard = limits.guard()
        self.running.start(assignment.ticket, guard)
        _QUIET.started()
        try:
            turn = self.long_work.turn(assignment.query, stop=guard.stopping)
            guard.pacer = turn.wait
            try:
                # a heavy sub-query yields the CPU and the GIL to short ones; one of a query known
                # to read much from its start
                with self.priority.lowered_when_long(on_long=turn.past_delay, at_once=sub.params.reads_much):
                    partial = self.querier.execute(tenants, sub, guard)
                partial.stats.extra["queue_seconds"] = assignment.queue_seconds
            except QueryCancelled:
                return None  # abandoned: nobody waits for an answer
            except Exception as err:  # noqa: BLE001 - errors travel back to the frontend
                return Finished(assignment.ticket, error=err)
            finally:
                turn.end()
                guard.pacer = None  # the guard and its turn refer to each other
                self.running.finish(assignment.ticket)
                del guard
            answer = pack_answer(partial, ray.put)
            del partial  # the answer is pickled (or in the object store) now; free this slot's memory
            return Finished(assignment.ticket, answer)
        finally:
            _QUIET.finished()  # this pull loop hands its heap back when the process is quiet

    def set_log_level(self, level: str) -> str:
        return apply_level(level)

    def pid(self) -> int:
        return os.getpid()

    def running_tickets(self) -> list[int]:
        """The scheduler tickets this querier's pull loops run now (abandoned work shows here)."""
        return self.running.tickets()

    def in_flight(self) -> dict[str, int]:
        """Work running here now: sub-queries from the scheduler and direct calls (metadata, rules)."""
        return {"subqueries": len(self.running.tickets()), "calls": len(self.calls.tickets())}

    def _guarded(self, limits: QueryLimits | None, run: Callable[[QueryGuard], R]) -> R:
        """A direct call under its query's deadline and memory budget, stopped when its caller
        cancels it (ray.cancel: the gateway timed out or its HTTP client went away)."""
        limits = (
            limits if limits is not None else QueryLimits(memory_bytes=self.querier.settings.max_query_memory_bytes)
        )
        guard = limits.guard(cancelled_elsewhere=call_cancelled)
        call_id = next(self._call_ids)
        self.calls.start(call_id, guard)
        _QUIET.started()
        try:
            return run(guard)
        finally:
            self.calls.finish(call_id)
            # Ray's call threads have no idle moment to wait for: this one's heap goes back now
            release_arrow_heap()
            _QUIET.finished(heap_owed=False)

    def index_lookups(self) -> dict:
        """How many index lookups went to an index gateway and how many were read here."""
        return self.index.stats()

    def query(self, tenants, request, queue_seconds: float = 0.0, limits: QueryLimits | None = None) -> dict:
        return self._guarded(limits, lambda g: self.querier.query(tenants, request, queue_seconds, guard=g))

    def series(self, tenants, selectors, start, end, limits: QueryLimits | None = None) -> list[dict]:
        return self._guarded(limits, lambda g: self.querier.series(tenants, selectors, start, end, guard=g))

    def index_stats(self, tenants, query, start, end, limits: QueryLimits | None = None) -> dict:
        return self._guarded(limits, lambda g: self.querier.index_stats(tenants, query, start, end, guard=g))

    def volume(
        self,
        tenants,
        query: str,
        start: int,
        end: int,
        limit: int,
        target_labels: tuple[str, ...],
        aggregate_by: str,
        step: int | None,
        limits: QueryLimits | None = None,
    ) -> dict:
        return self._guarded(
            limits,
            lambda g: self.querier.volume(
                tenants, query, start, end, limit, target_labels, aggregate_by, step, guard=g
            ),
        )

    def label_names(self, tenants, start, end, query, limits: QueryLimits | None = None) -> list[str]:
        return self._guarded(limits, lambda g: self.querier.label_names(tenants, start, end, query, guard=g))

    def label_values(self, tenants, name, start, end, query, limits: QueryLimits | None = None) -> list[str]:
        return self._guarded(limits, lambda g: self.querier.label_values(tenants, name, start, end, query, guard=g))


# Freed memory goes back once the process has had no work for a second, or has been owed for ten
# (malloc_trim.QuietRelease): a pull loop's Arrow heap (mimalloc keeps one per thread) from that
# loop's own thread, glibc's arenas (numpy arrays, Python objects) on the trimmer's thread
_QUIET = QuietRelease(MallocTrimmer(interval_s=1.0), quiet_s=1.0)


def _undelivered(finished: Finished, err: Exception) -> Finished:
    return Finished(finished.ticket, error=RuntimeError(f"the querier could not send its answer: {err}"))


def _try_actor(name: str):
    try:
        return named_actor(name)
    except ValueError:
        return None


RemoteQuerier = ray.remote(QuerierActor)


def _warm_up() -> None:
    with in_background():
        warm_up()
