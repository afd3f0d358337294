"""Starts (or joins) Ray and brings up the whole topology: ring, ingesters, queriers, Serve."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Any

import ray

from svclog import targets
from svclog.actors.backend_host import HostedPart, RemoteBackendHost
from svclog.actors.compactor_actor import CompactorActor, RemoteCompactor
from svclog.actors.head import NO_FALLBACK_PROXY, SERVE_CONTROLLER_CALLBACK, lean_local_head, serve_controller_created
from svclog.actors.indexgateway_actor import RemoteIndexGateway
from svclog.actors.ingester_actor import RemoteIngester
from svclog.actors.malloc_trim import limit_malloc_arenas
from svclog.actors.options import (
    COMPACTOR_NAME,
    NAMESPACE,
    PATTERN_INGESTER_NAME,
    RING_NAME,
    backend_host_options,
    compactor_options,
    gateway_options,
    index_gateway_name,
    index_gateway_options,
    index_gateway_ring_options,
    ingester_options,
    pattern_ingester_options,
    querier_name,
    querier_options,
    ring_options,
    ruler_name,
    ruler_options,
    ruler_ring_options,
)
from svclog.actors.pattern_actor import PatternActor, RemotePatternIngester
from svclog.actors.querier_actor import QuerierActor, RemoteQuerier
from svclog.actors.registry import HostedRole
from svclog.actors.ring_actor import RemoteRing, RingActor
from svclog.actors.ruler_actor import RemoteRuler, RulerActor
from svclog.actors.scheduler_actor import SCHEDULER_NAME, RemoteScheduler, SchedulerActor, scheduler_options
from svclog.config import Config, replication_factor
from svclog.serve.deployments import GATEWAY_MAX_ONGOING, build_application, scaling
from svclog.serve.direct_gateway import DirectGateway
from svclog.serve.port_holder import PortHolder
from svclog.serve.runtime import clear_log_level, mark_started
from svclog.serve.standby import standby_application

log = logging.getLogger("svclog")
RemoteDirectGateway = ray.remote(DirectGateway)
APP_NAME = "svclog"
# Ray's settings for a local cluster. The raylet frees objects nobody references in batches, every
# free_objects_period_milliseconds (1000 by default): the ingesters' select answers of a query
# (~100 MB each at 1M bench lines) outlived it by up to a second, so the next query's answers took
# fresh object-store pages, each page counted in the RSS of the ingester that wrote it and of the
# querier that read it (~300-520 MB of shared memory in each after the bench's queries). Freed
# every 10 ms, the store reuses the same pages (a stand-alone pair of actors passing 12 answers of
# 100 MB: 1.0-1.2 GB of shared memory touched -> 0.3 GB, and no slower).
# Ray starts its workers at niceness 15, below the driver; on a local start the workers are the service
# itself (ingester, querier, ring), so any busy process of the machine starved them: an ingester and the
# backend host restarted after a kill -9 took ~115 s to come back beside four busy loops (0.7 s without)
LOCAL_RAY_SYSTEM_CONFIG = {
    "free_objects_period_milliseconds": 10,
    "prestart_worker_first_driver": False,
    "worker_niceness": 0,
}


def connect(cfg: Config) -> None:
    if ray.is_initialized():
        return
    if cfg.ray.serve_haproxy and uses_serve(cfg):
        # read by the Serve controller, which inherits this process's environment on a local
        # cluster; on a joined cluster the nodes must set it themselves (cluster.yaml does)
        os.environ.setdefault("RAY_SERVE_ENABLE_HA_PROXY", "1")
        if cfg.ray.address is None:
            # HAProxy's own metrics/stats listeners default to fixed ports: a second local
            # instance (a dev server beside the tests) would fail to start on them
            os.environ.setdefault("RAY_SERVE_HAPROXY_METRICS_PORT", str(_free_port()))
            os.environ.setdefault("RAY_SERVE_HAPROXY_STATS_PORT", str(_free_port()))
            # HAProxy's backup server for a route with no replica up is Serve's fallback proxy,
            # on a fixed port that every local cluster's proxy binds with SO_REUSEPORT: the kernel
            # then spreads this instance's requests over other instances' services (seen: a push
            # to one svclog acknowledged by another during a start). One port per instance.
            os.environ.setdefault("RAY_SERVE_FALLBACK_PROXY_HTTP_PORT", str(_free_port()))
            os.environ.setdefault("RAY_SERVE_FALLBACK_PROXY_GRPC_PORT", str(_free_port()))
            # HAProxy shares the port with the start's PortHolder (svclog/serve/port_holder.py)
            os.environ.setdefault("SERVE_SOCKET_REUSE_PORT_ENABLED", "1")
            # and needs no fallback proxy behind it: one Ray worker less (svclog/actors/head.py)
            os.environ.setdefault(SERVE_CONTROLLER_CALLBACK, NO_FALLBACK_PROXY)
    # Serve replicas run our handlers on their own event loop, so a WebSocket send awaits the
    # HTTP server's flow control; on the default separate user thread every send lands in an
    # unbounded queue and a tail client that stops reading grows the gateway without limit.
    os.environ.setdefault("RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD", "0")
    address = cfg.ray.address or None
    if address is None:
        # A replica behind HAProxy stays reachable this long after it is told to stop, for load
        # balancers to deregister it (Serve's default 30 s made every Ctrl-C take 30 s). On one node
        # there is none but our own HAProxy, which retries a refused connection, and a stop has put
        # the gateway in standby first: it closes its listener at once and still finishes the
        # requests it has (the 1 s used before was a second of every Ctrl-C). Pushes are durable on ack (WAL).
        os.environ.setdefault("RAY_SERVE_DIRECT_INGRESS_MIN_DRAINING_PERIOD_S", "0")
    kwargs: dict[str, Any] = {
        "namespace": NAMESPACE,
        "include_dashboard": bool(cfg.ray.dashboard),
        "log_to_driver": False,
        "configure_logging": False,
    }
    if address is None and cfg.ray.object_store_memory:
        kwargs["object_store_memory"] = cfg.ray.object_store_memory
    if address is None:
        kwargs["_system_config"] = dict(LOCAL_RAY_SYSTEM_CONFIG)  # ray.init adds its spilling keys to it
        limit_malloc_arenas()  # Ray's daemons and workers inherit it (a cluster's nodes: cluster.yaml)
        with lean_local_head(keep_dashboard=bool(cfg.ray.dashboard)):
            ray.init(**kwargs)
    else:
        ray.init(address=address, **kwargs)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def num_ingesters(cfg: Config) -> int:
    return max(cfg.ray.num_ingesters or 0, replication_factor(cfg), 1)


def start(cfg: Config, host_gateway: bool = False) -> dict:
    """Create the actors of this process's targets and deploy its HTTP application.

    Every process shares the ring (a named actor, created by whoever comes first); the
    other components of the scalable modes are found by name when first needed.
    """
    holder = hold_port(cfg)  # 503 + Retry-After from the first moment, before Ray starts
    connect(cfg)
    # Serve's controller, its HTTP entry and the gateway replica are the start's longest chain (each a
    # fresh Ray worker, one after the other). With the port held, the controller is asked for first,
    # in the background, and the gateway is deployed as soon as the controller runs, so the replica
    # boots beside Serve's HTTP entry instead of after it.
    direct = not uses_serve(cfg)
    http = BackgroundCall(start_http_entry, cfg) if holder is not None and single_gateway(cfg) and not direct else None
    wanted = targets.components(cfg.targets())
    name, prefix = targets.app_name_and_prefix(cfg.targets())
    # handles of different actor classes, or of parts of the backend host (registry.HostedRole)
    ingesters: list[Any] = []
    queriers: list[Any] = []
    backends: list[Any] = []
    if hosts_backend(cfg):
        # not waited on here: an ingester's first ring lookup waits for the host, so the rest
        # start side by side with it
        parts = backend_parts(cfg, wanted)
        # Ray types `.remote()` as `ActorHandle[T] | type[T]`, and the two actors differ: a handle
        options = backend_host_options(sum(p.num_cpus for p in parts), querier=hosts_querier(cfg, wanted))
        ring: Any = RemoteBackendHost.options(**options).remote(parts)
    else:
        ring = RemoteRing.options(**ring_options()).remote(cfg.common.ring.heartbeat_timeout)
        ray.get(ring.snapshot.remote())
    if "ingester" in wanted:
        hosted = ingester_querier(cfg, wanted)
        ingesters = [
            RemoteIngester.options(
                **ingester_options(
                    i, cfg.ray.ingester_num_cpus + (cfg.ray.querier_num_cpus if i == 0 and hosted else 0)
                )
            ).remote(cfg, f"ingester-{i}", hosted if i == 0 else None)
            for i in range(num_ingesters(cfg))
        ]
    if not hosts_backend(cfg):
        backends = start_backends(cfg, wanted)  # before the queriers, which look up the scheduler
    if hosts_querier(cfg, wanted):
        queriers = [HostedRole(ring, querier_name(0))]
    elif "querier" in wanted:
        queriers = [
            RemoteQuerier.options(**querier_options(i, cfg.ray.querier_num_cpus, cfg.querier.max_concurrent)).remote(
                cfg, f"querier-{i}"
            )
            for i in range(max(1, cfg.ray.num_queriers))
        ]
    # The actors boot (each Python worker spends seconds importing) while Serve starts: named actors
    # are registered when created, so whoever looks one up by name waits for it, never misses it.
    num_queriers = max(1, cfg.ray.num_queriers)
    if direct:  # no Serve: the gateway serves HTTP itself, answering 503 until every component runs
        gateway = start_direct_gateway(cfg, num_queriers, holder, host_gateway)
        ray.get([actor.ready.remote() for actor in (ring, *ingesters, *queriers, *backends)])
        log.info(
            "svclog (%s) serving on http://%s:%d/",
            cfg.target,
            cfg.server.http_listen_address,
            cfg.server.http_listen_port,
        )
        return {"ring": ring, "ingesters": ingesters, "queriers": queriers, "backends": backends, "gateway": gateway}
    serve = ray_serve()
    if holder is None:
        open_http(cfg, name, prefix)
    elif http is None:  # the holder answers 503 until the gateway is routed: no standby replica to start
        start_http(cfg)
    else:
        wait_for_serve_controller(http)
    overlap = single_gateway(cfg)
    if overlap:  # the gateway starts beside the actors too, answering 503 until they all run
        mark_started(False)
        serve.run(build_application(cfg, num_queriers, starting=True), name=name, route_prefix=prefix, blocking=False)
        if http is not None:
            http.join()  # Serve's HTTP entry is up (or its error is raised here)
        hand_over_port(holder)
    ray.get([actor.ready.remote() for actor in (ring, *ingesters, *queriers, *backends)])
    if not overlap:  # replicas elsewhere: deployed in place of the standby once everything runs
        serve.run(build_application(cfg, num_queriers), name=name, route_prefix=prefix, blocking=False)
        hand_over_port(holder)
    log.info(
        "svclog (%s) serving on http://%s:%d%s",
        cfg.target,
        cfg.server.http_listen_address,
        cfg.server.http_listen_port,
        prefix,
    )
    return {
        "ring": ring,
        "ingesters": ingesters,
        "queriers": queriers,
        "backends": backends,
        "app": name,
        "prefix": prefix,
    }


def start_direct_gateway(cfg: Config, num_queriers: int, holder: PortHolder | None, here: bool = False) -> Any:
    """The gateway serving HTTP itself (svclog/serve/direct_gateway.py), in its starting state; the
    holder hands it the port once it listens. `here`: in this process (the CLI's driver, which only
    waits after the start) instead of an actor of its own (~150 MB, one Python process less)."""
    mark_started(False)
    gateway: Any
    if here:
        gateway = DirectGateway(cfg, num_queriers, True)
        listening = gateway.listening(ROUTED_TIMEOUT_S)
    else:
        gateway = RemoteDirectGateway.options(**gateway_options(cfg.ray.serve_num_cpus)).remote(cfg, num_queriers, True)
        listening = ray.get(gateway.listening.remote(ROUTED_TIMEOUT_S))
    if not listening:
        log.warning("start: the gateway does not listen after %gs; releasing the port anyway", ROUTED_TIMEOUT_S)
    if holder is not None:
        holder.release()
    return gateway


def ray_serve() -> Any:
    """Ray Serve, imported only by a start that runs on it: the import is ~48 MB of the driver."""
    from ray import serve

    return serve


def uses_serve(cfg: Config) -> bool:
    """Does the HTTP entry run on Ray Serve? A cluster start's does (replicas on any node, scaled by
    Serve); a local start's single gateway serves HTTP itself unless `ray.local_serve` asks for Serve."""
    return bool(cfg.ray.address) or cfg.ray.local_serve or not single_gateway(cfg)


def hosts_backend(cfg: Config) -> bool:
    """Does this start host its backend parts in one process? A local single-node start (`-target=all`,
    one ruler, no cluster to join) does: each would otherwise be a Ray worker of ~130 MB doing little.
    Scalable targets and cluster starts keep one actor per component, placed on the node types that
    advertise them."""
    return cfg.targets() == frozenset({"all"}) and not needs_ruler_ring(cfg) and not cfg.ray.address


def backend_parts(cfg: Config, wanted: frozenset[str] | set[str]) -> list[HostedPart]:
    """The parts of the backend host: the ring, then the scheduler, compactor, ruler and pattern
    ingester this start runs, each with the threads and CPUs its own actor had."""
    parts = [
        HostedPart(
            RING_NAME, RingActor, (cfg.common.ring.heartbeat_timeout,), threads=1, num_cpus=ring_options()["num_cpus"]
        )
    ]
    if "query-scheduler" in wanted:
        parts.append(HostedPart(SCHEDULER_NAME, SchedulerActor, (cfg,), threads=2, num_cpus=cfg.ray.scheduler_num_cpus))
    if "compactor" in wanted:
        options = compactor_options()
        parts.append(
            HostedPart(
                COMPACTOR_NAME, CompactorActor, (cfg,), threads=options["max_concurrency"], num_cpus=options["num_cpus"]
            )
        )
    if "ruler" in wanted:
        options = ruler_options(0)
        parts.append(
            HostedPart(
                ruler_name(0),
                RulerActor,
                (cfg, ruler_name(0), max(1, cfg.ray.num_queriers)),
                threads=options["max_concurrency"],
                num_cpus=options["num_cpus"],
            )
        )
    if "pattern-ingester" in wanted and cfg.pattern_ingester.enabled:
        options = pattern_ingester_options()
        parts.append(
            HostedPart(
                PATTERN_INGESTER_NAME,
                PatternActor,
                (cfg,),
                threads=options["max_concurrency"],
                num_cpus=options["num_cpus"],
            )
        )
    if hosts_querier(cfg, wanted):
        # last and built after the host is up: its pull loops start at once and ask the scheduler part
        parts.append(
            HostedPart(
                querier_name(0),
                QuerierActor,
                (cfg, querier_name(0)),
                threads=querier_options(0, cfg.ray.querier_num_cpus, cfg.querier.max_concurrent)["max_concurrency"],
                num_cpus=cfg.ray.querier_num_cpus,
                deferred=True,
            )
        )
    return parts


def hosts_querier(cfg: Config, wanted: frozenset[str] | set[str]) -> bool:
    """Does the backend host run the querier too? On a local start of one querier it does: a process of
    its own cost ~150 MB, and the host's other parts are light where the querier is busy (the scheduler
    hands it each sub-query; the pattern ingester mines during pushes, when queriers idle). The ingester
    keeps its own process: hosting it instead cost ~17% of the ingest rate and doubled the push p99 at
    1M bench lines, its pushes waiting for the GIL behind the pattern ingester's mining."""
    return hosts_backend(cfg) and "querier" in wanted and max(1, cfg.ray.num_queriers) == 1


def ingester_querier(cfg: Config, wanted: frozenset[str] | set[str]) -> str | None:
    """The id of the querier the first ingester's process runs as well, or None. A local start of one
    querier has it when `ray.ingester_querier` asks: the backend host's querier is one process, whose
    Python runs on one core at a time, while the ingester's process idles during queries. It only
    pulls sub-queries from the scheduler, so nothing looks it up by name. Off by default: pushes and
    other tenants' selects then wait on the ingester's GIL behind heavy queries."""
    if hosts_querier(cfg, wanted) and "ingester" in wanted and cfg.ray.ingester_querier:
        return querier_name(1)
    return None


def start_backends(cfg: Config, wanted: frozenset[str] | set[str]) -> list:
    """One actor per backend component (scalable targets)."""
    backends: list[Any] = []  # handles of different actor classes
    if "query-scheduler" in wanted:
        backends.append(RemoteScheduler.options(**scheduler_options(cfg)).remote(cfg))
    if "index-gateway" in wanted:
        backends += start_index_gateways(cfg)
    if "compactor" in wanted:
        backends.append(RemoteCompactor.options(**compactor_options()).remote(cfg))
    if "ruler" in wanted:
        if needs_ruler_ring(cfg):  # the ruler ring first: each ruler joins it as it starts
            backends.append(RemoteRing.options(**ruler_ring_options()).remote(cfg.ruler.ring.heartbeat_timeout))
        backends += [
            RemoteRuler.options(**ruler_options(i)).remote(cfg, ruler_name(i), max(1, cfg.ray.num_queriers))
            for i in range(max(1, cfg.ray.num_rulers))
        ]
    if "pattern-ingester" in wanted and cfg.pattern_ingester.enabled:
        backends.append(RemotePatternIngester.options(**pattern_ingester_options()).remote(cfg))
    return backends


def open_http(cfg: Config, name: str, prefix: str) -> None:
    """Start Serve's HTTP entry with the standby application on our route (when no PortHolder holds
    the port): once the route exists every request answers 503 with Retry-After; between the port
    opening and the route, Serve's entry answers 404."""
    start_http(cfg)
    serve = ray_serve()
    serve.run(standby_application("starting"), name=name, route_prefix=prefix, blocking=False)


class BackgroundCall:
    """`fn(*args)` on a thread of its own; `join` waits for it and raises what it raised."""

    def __init__(self, fn, *args):
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(fn, *args), name=f"svclog-{fn.__name__}", daemon=True)
        self.thread.start()

    def _run(self, fn, *args) -> None:
        try:
            fn(*args)
        except BaseException as err:  # noqa: BLE001 - handed to whoever joins
            self.error = err

    def done(self) -> bool:
        return not self.thread.is_alive()

    def join(self) -> None:
        self.thread.join()
        if self.error is not None:
            raise self.error


CONTROLLER_POLL_S = 0.05


def wait_for_serve_controller(http: BackgroundCall) -> None:
    """Until the background `serve.start` has created Serve's controller (a named actor): a `serve.run`
    before that would create a second one. A failed start is raised here."""
    while not http.done():
        if serve_controller_created():
            return
        time.sleep(CONTROLLER_POLL_S)
    http.join()


def start_http_entry(cfg: Config) -> None:
    """`start_http` for a start whose port is held: Serve's controller kills and restarts an HTTP entry
    that is slow to boot (seen on a 2-core machine at load 40-60), which `serve.start` reports as the
    actor's death; the controller brings up a new one, and `hand_over_port` waits for it to route."""
    try:
        start_http(cfg)
    except ray.exceptions.ActorDiedError as err:
        log.warning(
            "start: Serve restarted its HTTP entry while starting (%s); waiting for the new one",
            str(err).splitlines()[0] if str(err) else type(err).__name__,
        )


def start_http(cfg: Config) -> None:
    serve = ray_serve()
    serve.start(
        http_options={"host": cfg.server.http_listen_address, "port": cfg.server.http_listen_port},
        logging_config={"log_level": "WARNING", "enable_access_log": False},
    )


def hold_port(cfg: Config) -> PortHolder | None:
    """A local start holds its HTTP port (503 + Retry-After) until Serve routes to the gateway. A
    start that joins a cluster does not: Serve's entry may run on another node."""
    if cfg.ray.address or ray.is_initialized():
        return None
    holder = PortHolder(cfg.server.http_listen_address, cfg.server.http_listen_port)
    return holder if holder.open() else None


ROUTED_TIMEOUT_S = 60.0
ROUTED_POLL_S = 0.05


def hand_over_port(holder: PortHolder | None, timeout_s: float = ROUTED_TIMEOUT_S) -> None:
    """Release the port to Serve once its entry routes to a gateway replica: HAProxy's stats list
    a replica of the route as a live server (the fallback proxy, a backup, does not count).
    Without HAProxy, Serve's proxy learns the route within moments of `serve.run` returning."""
    if holder is None:
        return
    deadline = time.monotonic() + timeout_s
    stats_port = (
        os.environ.get("RAY_SERVE_HAPROXY_STATS_PORT") if os.environ.get("RAY_SERVE_ENABLE_HA_PROXY") == "1" else None
    )
    if stats_port is None:
        time.sleep(1.0)
    else:
        while time.monotonic() < deadline and not haproxy_routes_a_replica(int(stats_port)):
            time.sleep(ROUTED_POLL_S)
        if time.monotonic() >= deadline:
            log.warning("start: HAProxy lists no gateway replica after %gs; releasing the port anyway", timeout_s)
    holder.release()


HAPROXY_OWN_PROXIES = frozenset(
    {"stats", "prometheus", "default_backend", "http_frontend", "grpc_frontend", "grpc_fallback_backend"}
)


def haproxy_routes_a_replica(stats_port: int) -> bool:
    """Does HAProxy's stats page list an application backend with a non-backup server UP?"""
    import csv
    import io
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{stats_port}/stats;csv", timeout=1) as resp:
            text = resp.read().decode()
    except OSError:
        return False
    return any_replica_up(list(csv.DictReader(io.StringIO(text.lstrip("# ")))))


def any_replica_up(rows: list[dict]) -> bool:
    return any(
        row.get("pxname") not in HAPROXY_OWN_PROXIES
        and row.get("svname") not in ("FRONTEND", "BACKEND")
        and row.get("bck") == "0"
        and (row.get("status") or "").startswith("UP")
        for row in rows
    )


def needs_ruler_ring(cfg: Config) -> bool:
    """Rulers share groups through a ring only when there can be more than one: a single ruler of
    `-target=all` owns every group without it (one process less); scalable targets keep it, as
    other processes' rulers may join."""
    return cfg.ray.num_rulers > 1 or cfg.targets() != frozenset({"all"})


def start_index_gateways(cfg: Config) -> list:
    """The index-gateway ring, then `ray.num_index_gateways` gateways that join it: [ring, *gateways].
    Queriers follow the ring and send each tenant's index lookups to the gateway owning it."""
    ring: Any = RemoteRing.options(**index_gateway_ring_options()).remote(cfg.index_gateway.ring.heartbeat_timeout)
    ray.get(ring.ready.remote())  # (Any: Ray types an actor's methods without `.remote`)
    return [
        ring,
        *(
            RemoteIndexGateway.options(**index_gateway_options(i)).remote(cfg, index_gateway_name(i))
            for i in range(max(1, cfg.ray.num_index_gateways))
        ),
    ]


# How long a clean stop waits for the ingesters' shutdown (flush, leave the ring) before killing them.
STOP_TIMEOUT_S = 120.0
PROBE_TIMEOUT_S = 10.0


def stop(handles: dict | None = None, cfg: Config | None = None, timeout_s: float = STOP_TIMEOUT_S) -> None:
    """A clean stop: the HTTP application goes first (no new work), the ingesters run their shutdown
    path (bounded by `timeout_s`), then every actor is killed, the ring last."""
    handles = handles or {}
    gateway = handles.get("gateway")
    if gateway is not None:
        direct_standby(gateway)
    else:
        close_http(
            handles.get("app", APP_NAME), handles.get("prefix"), single_gateway=bool(cfg and single_gateway(cfg))
        )
    stop_ingesters(handles.get("ingesters", []), cfg, timeout_s)
    _kill(handles.get("backends", []) + handles.get("queriers", []))
    if handles.get("ring") is not None:
        _kill([handles["ring"]])
    if isinstance(gateway, DirectGateway):  # the port closes last: until then every request answers 503
        gateway.close(STANDBY_CALL_TIMEOUT_S + SHUTDOWN_GRACE_S)
    elif gateway is not None:
        _answers([gateway.close.remote()], STANDBY_CALL_TIMEOUT_S + SHUTDOWN_GRACE_S)
        _kill([gateway])
    try:
        clear_log_level()  # a POSTed level lasts until the stop; the next start runs at the configured one
    except Exception:  # noqa: BLE001 - Ray already gone
        pass


STANDBY_CALL_TIMEOUT_S = 2.0  # how long a stop waits for the gateway to take the stopping state


SHUTDOWN_GRACE_S = 3.0  # the direct gateway's HTTP server finishes its requests in flight this long


def direct_standby(gateway: Any) -> None:
    """No new work on a gateway serving HTTP itself: every route answers 503 with Retry-After."""
    if isinstance(gateway, DirectGateway):
        gateway.enter_standby("stopping")
        return
    try:
        ray.get(gateway.enter_standby.remote("stopping"), timeout=STANDBY_CALL_TIMEOUT_S)
    except Exception as err:  # noqa: BLE001 - gone or busy: the stop goes on, the port closes at its end
        log.warning("clean stop: the gateway did not take the stopping state (%s)", err)


def close_http(app: str, prefix: str | None, single_gateway: bool = False) -> None:
    """No new work: every route answers 503 with Retry-After until the process shuts Serve down
    and the port closes (deleting the application would answer 404). A single gateway replica is
    told so directly (milliseconds); otherwise the application is swapped for the standby, which
    waits for a new replica process (seconds)."""
    serve = ray_serve()
    if single_gateway:
        try:
            serve.get_app_handle(app).enter_standby.remote("stopping").result(timeout_s=STANDBY_CALL_TIMEOUT_S)
            return
        except Exception as err:  # noqa: BLE001 - replica gone or busy: swap the application instead
            log.warning("clean stop: the gateway did not take the stopping state (%s); deploying the standby", err)
    try:
        if prefix is None:
            raise LookupError("no route prefix recorded")
        serve.run(standby_application("stopping"), name=app, route_prefix=prefix, blocking=False)
    except Exception as err:  # noqa: BLE001 - Serve already gone or never started: delete what is left
        log.warning("clean stop: standby not deployed (%s); deleting the application", err)
        try:
            serve.delete(app)
        except Exception:  # already gone
            pass


def single_gateway(cfg: Config) -> bool:
    """Does the HTTP application run exactly one gateway replica (the local default)?"""
    return scaling(cfg, GATEWAY_MAX_ONGOING) == {"num_replicas": 1}


def stop_ingesters(ingesters: list, cfg: Config | None, timeout_s: float = STOP_TIMEOUT_S) -> None:
    """Each ingester's clean shutdown, as the reference does on SIGTERM, then kill it: with prepare-shutdown
    set it flushes and leaves the ring; otherwise it flushes when `ingester.wal.flush_on_shutdown` is set and
    leaves the ring when `ingester.lifecycler.unregister_on_shutdown` is (without a config: leave only)."""
    flush_default = bool(cfg and cfg.ingester.wal.flush_on_shutdown)
    unregister = cfg.ingester.lifecycler.unregister_on_shutdown if cfg else True
    deadline = time.monotonic() + timeout_s
    prepared = _answers([actor.prepare_shutdown.remote("get") for actor in ingesters], min(PROBE_TIMEOUT_S, timeout_s))
    refs = []
    for actor, marked in zip(ingesters, prepared):
        if marked is None:
            continue  # not answering: there is nothing graceful left to ask of it
        flush = bool(marked) or flush_default
        if flush or unregister:
            refs.append(actor.shutdown.remote(flush, False, False))
    done = _answers(refs, max(0.0, deadline - time.monotonic()))
    late = sum(1 for report in done if report is None)
    if late:
        log.warning("%d ingester(s) did not finish their shutdown within %gs: killed anyway", late, timeout_s)
    _kill(ingesters)


def _answers(refs: list, timeout_s: float) -> list:
    """The value of each ref within one shared timeout; None for those that failed or did not answer."""
    if not refs:
        return []
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
    finished = set(ready)
    values = []
    for ref in refs:
        try:
            values.append(ray.get(ref, timeout=0) if ref in finished else None)
        except Exception as err:  # noqa: BLE001 - a dead or failing actor: reported, then killed
            log.warning("clean stop: %s", str(err).splitlines()[0] if str(err) else type(err).__name__)
            values.append(None)
    return values


def _kill(actors: list) -> None:
    for actor in actors:
        if isinstance(actor, HostedRole):
            continue  # a part of the backend host: it goes with the host
        try:
            ray.kill(actor, no_restart=True)
        except Exception:  # already gone
            pass


def wait_forever() -> None:
    while True:
        time.sleep(3600)
