"""The Ray Serve deployment: the HTTP gateway (ingress), hosting the distributor and the query frontend."""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from svclog import targets
from svclog.actors.calls import QUERY_TIMEOUT_S, ActorUnavailable, Handles
from svclog.actors.clients import IngesterPool, RingClient, ServeReplicaCount
from svclog.actors.gc_freeze import freeze_startup_heap
from svclog.actors.idle_release import start_idle_release
from svclog.actors.malloc_trim import MallocTrimmer
from svclog.actors.options import COMPACTOR_NAME, PATTERN_INGESTER_NAME, RULER_NAME, querier_name
from svclog.actors.querier_actor import build_querier
from svclog.actors.registry import named_actor
from svclog.actors.scheduler_actor import SCHEDULER_NAME, tenant_queriers
from svclog.actors.service_clients import (
    AnswerLost,
    CompactorClient,
    PatternClient,
    PatternFeed,
    Queriers,
    RulerClient,
    SchedulerClient,
)
from svclog.config import Config, limits_for, replication_factor
from svclog.cpu_priority import GATEWAY_SWITCH_INTERVAL_S, ForegroundGate, lowered, share_the_gil
from svclog.distributor.distributor import Distributor
from svclog.distributor.tee import SampledTee
from svclog.frontend.budgets import (
    BudgetCheck,
    QueryTooLarge,
    ReadBudget,
    ReadSize,
    step_reach,
    whole_windows,
    window_filters,
)
from svclog.frontend.frontend import FrontendSettings, QueryFrontend
from svclog.frontend.local_lane import LocalLane
from svclog.frontend.results_cache import results_cache_options
from svclog.logql.engine.guard import QueryGuard, QueryLimits, QueryTimedOut, smallest_positive, timeout_error
from svclog.logql.engine.params import reads_much
from svclog.logql.parser import build_tables
from svclog.model import SvcError
from svclog.querier.prefetched import Prefetched
from svclog.scheduler.querier_shard import preferred_queriers
from svclog.serve import query_log, telemetry
from svclog.serve.admin_backend import RayAdmin
from svclog.serve.app import GatewaySettings, Services, build_app
from svclog.serve.backend import ServeBackend
from svclog.serve.codecs.push_columns import decode_push_columns
from svclog.serve.errors import ErrorReply, Unavailable, remote_cause
from svclog.serve.runtime import LevelSync, has_started, mark_started
from svclog.serve.standby import StandbySwitch
from svclog.services import readiness

log = logging.getLogger("svclog")
R = TypeVar("R")


class HostedDistributor:
    """The distributor, hosted in the HTTP entry's replicas: a push body is decoded, validated
    and sent to the ingesters from the process that received it. A separate deployment
    would ship every body through one more Ray hop, which measured as the costliest part of
    ingestion on 2 cores; replicas of the entry scale the distributor with it."""

    def __init__(self, cfg: Config, gateways: Callable[[], int] | None = None):
        self.cfg = cfg
        self.ring = RingClient()
        rf = replication_factor(cfg)
        # pushes to an ingester on this node go over a local socket (svclog/actors/push_channels.py)
        self.pool = IngesterPool(self.ring, rf, channels=True)
        channels = self.pool.channels
        assert channels is not None  # asked for just above
        telemetry.PUSH_CHANNELS.sources.append(lambda: channels.stats)
        # how many gateways share a `global` rate limit: Serve's running replicas, or a given count
        # (a gateway serving HTTP itself, svclog/serve/direct_gateway.py, is the only one)
        replicas = gateways or ServeReplicaCount()
        replicas()  # a Serve count's first read from the controller starts now, in the background
        self.distributor = Distributor(
            ring=self.ring.get,
            pusher=self.pool,
            limits_for=lambda tenant: limits_for(cfg, tenant),
            replication_factor=rf,
            distributors=replicas,
            tee=self._pattern_tee() if cfg.pattern_ingester.enabled else None,
        )
        threading.Thread(target=self._warm_up, name="distributor-warm-up", daemon=True).start()

    def _warm_up(self) -> None:
        """The ring and the ingesters' handles looked up before the first push: otherwise the first
        pushes (four at once from the bench) all waited for those lookups, their p99 at 200 pushes."""
        try:
            for member in self.ring.get().members.values():
                self.pool.handle(member.address)
            self.pool.open_channels()
        except Exception as err:  # noqa: BLE001 - still starting: the first push looks them up
            log.debug("distributor warm-up: %s", err)

    @staticmethod
    def _pattern_tee():
        tee = SampledTee(PatternFeed(named_actor(PATTERN_INGESTER_NAME)))
        threading.Thread(target=tee.run_forever, name="pattern-tee", daemon=True).start()
        return tee.offer

    def _push(self, tenant, body, content_type, content_encoding):
        try:
            streams = decode_push_columns(
                body, content_type, content_encoding, max_decompressed_bytes=self.cfg.server.max_decompressed_body_bytes
            )
            return self.distributor.push(tenant, streams)
        finally:
            _PUSH_TRIMMER.request()

    async def push(self, tenant, body, content_type, content_encoding):
        try:
            return await asyncio.to_thread(self._push, tenant, body, content_type, content_encoding)
        except SvcError as err:
            return ErrorReply.of(err)

    async def push_decoded(self, tenant, streams):
        try:
            return await asyncio.to_thread(self.distributor.push, tenant, streams)
        except SvcError as err:
            return ErrorReply.of(err)


# A push's decoded body (Python strings, numpy and Arrow buffers) is freed to glibc's per-thread
# arenas, which kept ~40 MB over a 1M-line ingest (103 -> 140-146 MB anonymous); a trim at most
# every 2 s took the gateway to ~126 MB (docs/architecture.md, session 18)
_PUSH_TRIMMER = MallocTrimmer(interval_s=2.0)


# decoded index segments the frontend keeps (the queriers keep theirs, unbounded in bytes)
FRONTEND_INDEX_CACHE_BYTES = 32 << 20


class HostedFrontend:
    """The query frontend, hosted in the HTTP entry's replicas (as the distributor is): plans
    queries into sub-queries, sends them through the fair scheduler to the queriers and merges
    the partial results; metadata requests go to a querier directly. A deployment of its own
    cost one more process (~200 MB) and one more Ray hop that pickled every merged result."""

    def __init__(self, cfg: Config, num_queriers: int):
        self.num_queriers = num_queriers
        self.queriers = Queriers([querier_name(i) for i in range(num_queriers)])
        # looked up on first use: in the scalable modes the read group may start before the backend group
        self.scheduler = SchedulerClient(SCHEDULER_NAME)
        self.cfg = cfg
        self._in_flight = 0  # queries this replica runs now: the planner shards only onto idle queriers
        self._tenants_busy: collections.Counter[str] = collections.Counter()  # tenant keys with queries in flight
        self._max_queriers = tenant_queriers(cfg)
        # a query is foreground until its read facts show it large; large ones' merges give way
        self.foreground = ForegroundGate()
        # the index and the ingesters read from here: the read facts and the small queries
        self.reader = build_querier(cfg, chunk_cache_bytes=0, index_cache_bytes=FRONTEND_INDEX_CACHE_BYTES)
        reads = getattr(self.reader.ingesters, "reads", None)  # planning reads over local sockets
        if reads is not None:
            telemetry.READ_CHANNELS.sources.append(lambda: reads.sent)
        self._reads = ThreadPoolExecutor(max_workers=8, thread_name_prefix="frontend-read")
        self.lane = LocalLane(cfg.frontend.local_query_slots)
        threading.Thread(target=build_tables, name="parser-tables", daemon=True).start()
        self.frontend = QueryFrontend(
            FrontendSettings(
                split_queries_by_interval=cfg.limits_config.split_queries_by_interval,
                shards=num_queriers if cfg.query_range.parallelise_shardable_queries else 1,
                max_entries_limit_per_query=cfg.limits_config.max_entries_limit_per_query,
                max_query_series=cfg.limits_config.max_query_series,
                max_query_length=cfg.limits_config.max_query_length,
            ),
            **results_cache_options(cfg),
        )

    # A scheduler restart loses its queue: the sub-queries it held are queued again on the
    # new one; a scheduler still unreachable after this long answers 503.
    SCHEDULER_GRACE_S = 10.0

    def limits(self, tenants) -> QueryLimits:
        """The query's deadline (the strictest tenant's query_timeout, from now) and memory budget."""
        per_tenant = [limits_for(self.cfg, t) for t in tenants]
        return QueryLimits.starting_now(
            smallest_positive(lim.query_timeout for lim in per_tenant),
            smallest_positive(lim.max_query_memory_bytes for lim in per_tenant),
        )

    async def _run(self, tenants, actor_path, items, limits: QueryLimits, large: bool = False) -> list:
        """Every sub-query's answer, waiting until the query's deadline and no longer. A sub-query
        is queued again only when the scheduler lost it (restart); one lost with its querier is
        re-queued by the scheduler itself, and a slow one is never duplicated. A `large` query's
        large answers wait for small queries in flight before they are fetched (deserialising
        them holds this process's GIL)."""
        before_fetch = self.foreground.pause_async if large else None
        key = "|".join(tenants)
        deadline = limits.deadline if limits.deadline is not None else time.time() + 365 * 86400.0
        outage: dict = {}  # "since": when calls to the scheduler began to fail

        async def enqueue(batch: list) -> list[int]:
            while True:
                try:
                    tickets = await self.scheduler.enqueue(key, actor_path, batch, limits.deadline)
                    outage.pop("since", None)
                    return tickets
                except ActorUnavailable:
                    await self._scheduler_lost(outage, deadline)

        tickets = await enqueue([(*item, limits) for item in items])
        live: list[int | None] = list(tickets)  # the ticket each item waits on now (None: lost with a scheduler)

        async def one(i, item):
            while True:
                wait = deadline - time.time()
                if wait <= 0:
                    raise timeout_error(limits.timeout_ns)
                ticket = live[i]
                assert ticket is not None  # set again (re-queued) before the loop comes back
                try:
                    return await self.scheduler.result(ticket, wait, before_fetch)
                except AnswerLost:  # its scheduler restarted, or its querier died after answering
                    live[i] = None
                except ActorUnavailable:
                    live[i] = None
                    await self._scheduler_lost(outage, deadline)
                except (TimeoutError, QueryTimedOut):
                    raise timeout_error(limits.timeout_ns) from None
                (live[i],) = await enqueue([(*item, limits)])

        try:
            return list(await asyncio.gather(*(one(i, item) for i, item in enumerate(items))))
        except BaseException:  # timed out, failed, or the client went away: stop the work everywhere
            self._cancel(live)
            raise

    async def _scheduler_lost(self, outage: dict, deadline: float) -> None:
        """Wait a moment for a restarting scheduler, or give up with 503 once it stays away."""
        now = time.time()
        since = outage.setdefault("since", now)
        if now - since >= self.SCHEDULER_GRACE_S or now >= deadline:
            raise Unavailable("query scheduler unavailable (restarting), please try again")
        await asyncio.sleep(min(0.5, max(0.0, deadline - now)))
        self.scheduler.forget()  # a scheduler created anew (not restarted in place) needs a fresh handle

    def _cancel(self, tickets: list) -> None:
        tickets = [t for t in tickets if t is not None]
        if tickets:
            self.scheduler.cancel(tickets)

    def _prefer(self, tenants) -> list[str]:
        """Where this query's direct querier calls go: away from the queriers that limited
        tenants' queries in flight keep busy (max_queriers_per_tenant)."""
        busy = [key for key, n in self._tenants_busy.items() if n > 0]
        return preferred_queriers(self.queriers.names, "|".join(tenants), busy, self._max_queriers)

    async def query(self, tenants, request, actor_path=()):
        limits = self.limits(tenants)  # the deadline runs from the query's arrival
        self._in_flight += 1  # only the event loop's thread counts: no lock
        key = "|".join(tenants)
        self._tenants_busy[key] += 1
        foreground = self.foreground.enter()
        try:
            plan = self.frontend.plan(request, busy=self._in_flight - 1)
            began = time.perf_counter()
            cached = (
                await asyncio.to_thread(self.frontend.lookup, tenants, plan)
                if self.frontend.results_cache is not None
                else self.frontend.lookup(tenants, plan)  # nothing to look up: no thread hop
            )
            empty, read_bytes, prefetched = await self._before_sending(tenants, plan, limits)
            if reads_much(read_bytes):
                foreground.leave()
            done = {**empty, **cached.hits}
            todo = [i for i in range(len(plan.subqueries)) if i not in done]
            subs = [plan.subqueries[i].reading(read_bytes) for i in todo]
            answers = (
                await self._answers(tenants, tuple(actor_path), subs, limits, read_bytes, prefetched) if todo else []
            )
            fresh = dict(zip(todo, answers))
            self.frontend.remember(cached, fresh)
            partials = [done[i] if i in done else fresh[i] for i in range(len(plan.subqueries))]
            queue = max((p.stats.extra.get("queue_seconds", 0.0) for p in partials), default=0.0)
            counters = cached.counters if self.frontend.results_cache is not None else None
            # merging is CPU work: off the event loop, which also serves pushes; a large query's
            # gives way to small queries' and pushes' on the CPU, and to small queries at the GIL
            respond = self._respond_lowered if reads_much(read_bytes) else self.frontend.respond
            return await asyncio.to_thread(
                respond, plan, partials, time.perf_counter() - began, queue, counters, request.encoded_values
            )
        except Exception as err:  # noqa: BLE001 - typed errors become replies, others a 500
            if isinstance(remote_cause(err), (TimeoutError, asyncio.TimeoutError, QueryTimedOut)):
                return ErrorReply.of(timeout_error(limits.timeout_ns))
            reply = ErrorReply.mapped(err)
            if reply is None:
                raise
            return reply
        finally:
            foreground.leave()
            self._in_flight -= 1
            self._tenants_busy[key] -= 1
            if self._tenants_busy[key] <= 0:
                del self._tenants_busy[key]

    def _respond_lowered(self, *args) -> dict:
        with lowered(), self.foreground.background():
            return self.frontend.respond(*args)

    def _budget_check(self, tenants, plan) -> BudgetCheck | None:
        budget = ReadBudget.of(limits_for(self.cfg, t) for t in tenants)
        if not budget.active:
            return None
        engine, ranges = self.cfg.querier.engine, self.cfg.query_range
        return BudgetCheck(budget, plan, engine.max_look_back_period, ranges.parallelise_shardable_queries)

    async def _before_sending(self, tenants, plan, limits: QueryLimits) -> tuple[dict, int | None, Prefetched | None]:
        """What the frontend learns before the sub-queries go out, read in this process (the
        index, and the ingesters over Ray): the sub-queries answered without data, by index, the
        bytes the query's selectors read (None: unknown) and, when the local lane may take the
        query, the ingesters' rows of the selectors that read little (one ingester round trip
        for such a query, not two: svclog/querier/prefetched.py). The read sizes check the read
        budgets: a query over one is refused (400) before any chunk is read. The data spans answer
        the sub-queries that cannot find data: a long range splits into hundreds of pieces, each
        costing a scheduler round trip and a select on every ingester even when its hour is
        empty. When the reads fail every sub-query is sent, unchecked (the reference skips its
        check when its index stats fail). Read here rather than by a querier: a querier's process
        answered it 2x slower at the median and 5x at p99 while heavy queries ran there (docs,
        sessions 24 and 25)."""
        window = self.frontend.read_window(plan)
        check = self._budget_check(tenants, plan)
        local_max = self._local_max_bytes(tenants)
        wanted = check is not None or local_max > 0
        windows = whole_windows(plan, self.cfg.querier.engine.max_look_back_period) if wanted else []
        if window is None and not windows:
            return {}, None, None
        rows_cap = local_max if self.lane.open_to("|".join(tenants)) else 0
        rows_pad = step_reach(plan)

        async def sizes(more: list) -> list[ReadSize]:
            found = await self._read_here(limits, lambda guard: self.reader.read_sizes(tenants, more, guard))
            return [ReadSize(chunks, size) for chunks, size in found]

        filters = window_filters(plan, windows, self.cfg.querier.engine.max_look_back_period)
        try:
            spans, reads, prefetched = await self._read_here(
                limits,
                lambda guard: self.reader.read_facts(tenants, window, windows, guard, rows_cap, rows_pad, filters),
            )
            if check is not None:  # on what the index says, as the reference's: the token index aside
                await check.run(sizes, whole=[ReadSize(read.chunks, read.bytes) for read in reads])
        except QueryTooLarge:
            raise
        except Exception as err:  # noqa: BLE001 - unknown extent and sizes: send everything
            if limits.deadline is not None and time.time() >= limits.deadline:
                raise
            log.debug("data spans or read sizes unknown, sending every sub-query: %s", err)
            return {}, None, None
        # what the query reads once the token index has ruled chunks out: a needle over a day of
        # logs reads little, and runs here (the local lane) in one select, not lowered
        read_bytes = sum(read.probed_bytes for read in reads) if windows else None
        if window is None:
            return {}, read_bytes, prefetched
        return await asyncio.to_thread(self.frontend.answered_without_data, plan, spans), read_bytes, prefetched

    async def _read_here(self, limits: QueryLimits, read: Callable[[QueryGuard], R]) -> R:
        """`read` on this replica's read threads under the query's guard: its deadline and memory
        budget stop it, and so does the client going away (the guard is cancelled)."""
        guard = limits.guard()
        try:
            return await asyncio.get_running_loop().run_in_executor(self._reads, read, guard)
        except asyncio.CancelledError:
            guard.cancel()
            raise

    def _local_max_bytes(self, tenants) -> int:
        return min(limits_for(self.cfg, t).local_query_max_bytes for t in tenants)

    async def _answers(
        self,
        tenants,
        actor_path,
        subs: list,
        limits: QueryLimits,
        read_bytes: int | None,
        prefetched: Prefetched | None,
    ) -> list:
        """The sub-queries' partial results: here when the query reads little and the local lane
        has a seat for its tenants (svclog/frontend/local_lane.py), else from the queriers."""
        key = "|".join(tenants)
        if not self.lane.take(key, read_bytes, self._local_max_bytes(tenants)):
            items = [(tenants, sub) for sub in subs]
            return await self._run(tenants, actor_path, items, limits, large=reads_much(read_bytes))
        telemetry.LOCAL_QUERIES.inc()
        try:
            return await self._read_here(
                limits, lambda guard: [self.reader.execute(tenants, s, guard, prefetched) for s in subs]
            )
        finally:
            self.lane.leave(key)

    async def metadata(self, method: str, tenants, *args):
        """Series, labels, label values, index stats and volume under the same deadline as a query
        (the strictest tenant's query_timeout): the querier's call carries it and stops there;
        past it, or when the client goes away, the call is cancelled in the querier (and its
        ingester reads) and the answer is a 504 naming the timeout."""
        limits = self.limits(tenants)
        wait = QUERY_TIMEOUT_S if limits.deadline is None else max(0.0, limits.deadline - time.time())
        try:  # a querier that died or restarts: the next one answers
            return await self.queriers.acall(
                method, tenants, *args, timeout=wait, limits=limits, prefer=self._prefer(tenants)
            )
        except Exception as err:  # noqa: BLE001 - typed errors become replies, others a 500
            if limits.deadline is not None and isinstance(remote_cause(err), (TimeoutError, QueryTimedOut)):
                return ErrorReply.of(timeout_error(limits.timeout_ns))
            reply = ErrorReply.mapped(err)
            if reply is None:
                raise
            return reply


class NamedHandle:
    """A named actor's handle, looked up on first use: the gateway starts before some actors."""

    def __init__(self, name: str):
        self._name = name
        self._handles = Handles()

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._handles.get(self._name), attr)


READY_PROBE_PERIOD_S = 0.25


class Gateway:
    """The HTTP entry: hosts the distributor (write path) and the query frontend (reads), and holds
    the app it built over them and the actors' clients. Serve runs it as a deployment
    (`build_application`: Serve asks for the app with `__serve_build_asgi_app__` once the constructor
    has run); a local start runs it in an actor that serves HTTP itself (svclog/serve/direct_gateway.py).
    `direct`: no Serve around it (one gateway; its own state stands for Serve's deployment states)."""

    def __init__(self, cfg: Config, num_queriers: int, starting: bool = False, direct: bool = False):
        pool = IngesterPool(RingClient(), replication_factor(cfg))
        components = targets.components(cfg.targets())
        gateways = (lambda: 1) if direct else None
        distributor = HostedDistributor(cfg, gateways) if "distributor" in components else None
        self.distributor = distributor
        frontend = HostedFrontend(cfg, num_queriers) if components & {"query-frontend", "querier"} else None
        # component probes, ingester shutdown, ring pages
        self.admin = RayAdmin(cfg, deployments=direct_gateway_states if direct else None)
        self.standby = StandbySwitch()
        services = Services(
            backend=ServeBackend(distributor, frontend, pool),
            admin=self.admin,
            compactor=CompactorClient(NamedHandle(COMPACTOR_NAME)),
            rulers=RulerClient(NamedHandle(RULER_NAME)),
            patterns=PatternClient(NamedHandle(PATTERN_INGESTER_NAME)) if cfg.pattern_ingester.enabled else None,
            ingesters=pool,
        )
        self.http_app = build_app(GatewaySettings.from_config(cfg), services, self.standby)
        query_log.ensure_output()
        self.levels = LevelSync(cfg.server.log_level, self.hand_level_to_actors)
        self.levels.start()
        if starting and not has_started():
            # deployed while the actors still start: 503 + Retry-After until every component
            # answers, then serve (a replica Serve restarts after that serves at once)
            self.standby.enter("starting")
            threading.Thread(target=self.serve_when_ready, name="serve-when-ready", daemon=True).start()
        share_the_gil(GATEWAY_SWITCH_INTERVAL_S)
        freeze_startup_heap()  # full GCs walked ~150k start-up objects: 100-200 ms push stalls
        start_idle_release()  # what merging and sending large answers freed, once the gateway idles

    def enter_standby(self, state: str) -> None:
        """From now on every route of this replica answers 503 with Retry-After (a clean stop):
        cheaper than deploying the standby application, which starts a process while the
        service is going away."""
        self.standby.enter(state)
        if state == "stopping" and self.distributor is not None:
            self.distributor.pool.close_channels()  # pushes in flight answered: the ingesters may stop

    def serve_when_ready(self) -> None:
        """Probe the components as `/ready` does until all run, then leave the starting standby."""
        while True:
            try:
                if readiness(asyncio.run(self.admin.services()))[0]:
                    mark_started()
                    self.standby.leave()
                    return
            except Exception as err:  # noqa: BLE001 - a component still starting: probe again
                log.debug("start probe: %s", err)
            time.sleep(READY_PROBE_PERIOD_S)

    def hand_level_to_actors(self, level: str) -> None:
        """The log level's `to_actors`: this gateway's components' actors run at `level`."""
        asyncio.run(self.admin.actors_log_level(level))


def direct_gateway_states() -> dict[str, tuple[str, str]]:
    """The deployment states a gateway outside Serve reports: itself, running (it answers)."""
    return {"gateway": ("HEALTHY", "")}


# Serve autoscaling (requests in flight per replica drive the replica count). One replica each is
# what a 2-core single node has room for; joining a cluster (`ray.address` set) lets replicas grow
# and Ray's autoscaler add nodes for them.
LOCAL_MAX_REPLICAS = 1
CLUSTER_MAX_REPLICAS = 8


def autoscaling_config(cfg: Config, max_ongoing_requests: int) -> dict:
    """Serve `autoscaling_config` of one deployment: min 1, max by deployment mode, target 1/4 of capacity."""
    min_replicas = 1
    max_replicas = CLUSTER_MAX_REPLICAS if cfg.ray.address else LOCAL_MAX_REPLICAS
    return {
        "min_replicas": min_replicas,
        "initial_replicas": min_replicas,
        "max_replicas": max_replicas,
        "target_ongoing_requests": max(1, max_ongoing_requests // 4),
        "upscale_delay_s": 10.0,
        "downscale_delay_s": 300.0,
    }


def scaling(cfg: Config, max_ongoing_requests: int) -> dict:
    """Deployment options for the replica count: autoscaling when it has room to move; a fixed
    count otherwise (autoscaling with min == max only costs the controller metric traffic)."""
    config = autoscaling_config(cfg, max_ongoing_requests)
    if config["min_replicas"] == config["max_replicas"]:
        return {"num_replicas": config["min_replicas"]}
    return {"autoscaling_config": config}


GATEWAY_MAX_ONGOING = 128  # requests in flight per gateway replica (pushes and queries)

# A stop (Ctrl-C, SIGTERM, scale-down) waits this long for requests in flight: Serve's defaults
# (20 s, polled every 2 s) made every clean stop take ~30 s while pushes are durable on ack
# (WAL) and clients retry what a stop cut short.
SHUTDOWN: dict[str, Any] = {"graceful_shutdown_timeout_s": 3.0, "graceful_shutdown_wait_loop_s": 0.25}


def build_application(cfg: Config, num_queriers: int, starting: bool = False):
    """The bound Serve application: the gateway, hosting the distributor and the query frontend
    when the targets run them. `starting`: deployed before its components are up (it answers 503
    until they are)."""
    from ray import serve  # only where Serve runs the gateway: the import is ~48 MB per process

    class ServeGateway(Gateway):
        def __serve_build_asgi_app__(self) -> Any:
            return self.http_app

    # serve.deployment(**options)(cls): Ray's overloads type the (cls, **options) form as the decorator
    gateway = serve.deployment(
        name="gateway",
        ray_actor_options={"num_cpus": cfg.ray.serve_num_cpus},
        max_ongoing_requests=GATEWAY_MAX_ONGOING,
        **SHUTDOWN,
        # Serve's per-request access log line (as open_http turns off for the
        # proxy) cost ~7% of the replica's CPU on the push path
        logging_config={"log_level": "WARNING", "enable_access_log": False},
        **scaling(cfg, GATEWAY_MAX_ONGOING),
    )(serve.ingress()(ServeGateway))
    return gateway.bind(cfg, num_queriers, starting)
