"""Ray host of an Ingester: WAL replay on (re)start, ring registration, flush and heartbeat loop."""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import threading

import ray

from svclog.actors.calls import CALL_TIMEOUT_S, call_cancelled
from svclog.actors.clients import RingClient
from svclog.actors.gc_freeze import freeze_startup_heap
from svclog.actors.idle_release import start_idle_release
from svclog.actors.malloc_trim import MallocTrimmer, release_unused
from svclog.actors.options import RING_NAME
from svclog.actors.ring_member import RING_AWAY, RingMember
from svclog.config import Config, limits_for, object_store_uri, replication_factor, wal_dir
from svclog.ingester.ingester import Ingester, IngesterSettings
from svclog.ingester.instance import local_stream_limit
from svclog.ingester.lifecycle import Identity, IngesterLifecycle, ShutdownMarker, TokenFile, token_file_path
from svclog.ingester.local_listener import LocalListener
from svclog.ingester.local_reads import serve_reads
from svclog.log_level import apply_level
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.objstore import ObjectStore

log = logging.getLogger(__name__)
# Tail long-polls block a thread each: their own concurrency group keeps them from starving pushes.
TAIL_GROUP = "tail"
TAIL_GROUP_THREADS = 64
# What the ingester frees (its chunks once flushed and expired, and what pushes and checkpoints
# freed before) stays in glibc's arenas: 1M bench lines flushed left ~180 MB anonymous against ~80
# MB at the start, and a trim after the chunks expired took it to ~97 MB. A trim holds the arenas'
# locks (pushes allocate), so at most one every few seconds, and only after chunks went.
_TRIMMER = MallocTrimmer(interval_s=5.0)


def ingester_settings(cfg: Config, instance_id: str) -> IngesterSettings:
    ing = cfg.ingester
    return IngesterSettings(
        instance_id=instance_id,
        wal_dir=os.path.join(wal_dir(cfg), instance_id),
        wal_enabled=ing.wal.enabled,
        chunk_target_size=ing.chunk_target_size,
        chunk_block_size=ing.chunk_block_size,
        chunk_idle_period=ing.chunk_idle_period,
        max_chunk_age=ing.max_chunk_age,
        checkpoint_interval_s=ing.wal.checkpoint_duration / 1e9,
        max_streams_per_tenant=cfg.limits_config.max_streams_per_user,
        chunk_retain_period=ing.chunk_retain_period,
    )


class IngesterActor:
    def __init__(self, cfg: Config, instance_id: str, querier_id: str | None = None):
        apply_level(cfg.server.log_level)  # the configured level; a POSTed one arrives from the gateways
        self.cfg = cfg
        self.instance_id = instance_id
        store = ObjectStore(object_store_uri(cfg))
        chunks = ChunkStore(store, encoding=cfg.ingester.chunk_encoding, block_bytes=cfg.ingester.chunk_block_size)
        self._ring_client = RingClient(ttl=5.0)
        self.ingester = Ingester(
            ingester_settings(cfg, instance_id), chunks, stream_limit=self._stream_limit, stream_rate=self._stream_rate
        )
        self.node = ray.get_runtime_context().get_node_id()
        self.ring = RingMember(RING_NAME, cfg.ingester.lifecycler.num_tokens)
        self._stop = threading.Event()
        self._loop = threading.Thread(target=self._background, name="flush-loop", daemon=True)
        self.lifecycle = ingester_lifecycle(
            cfg, instance_id, self.node, self.ring, self.ingester, self.ingester.settings.wal_dir, self._stop_background
        )
        self.lifecycle.join()
        self._loop.start()
        # a local start's second querier (launch.ingester_querier): its pull loops take sub-queries
        # from the scheduler with this process's Python, idle while queries run. Imported only
        # then: an ingester alone needs none of the query engine's modules (~80, ~3 MB)
        self.querier = None
        if querier_id is not None:
            from svclog.actors.querier_actor import QuerierActor

            self.querier = QuerierActor(cfg, querier_id)
        # gateways on this node push, and send small queries' planning reads, over local sockets
        # rather than actor calls (local_listener.py, local_reads.py)
        self.push_listener = LocalListener(self.ingester.push_payload)
        self.read_listener = LocalListener(serve_reads(self.ingester), kind="read")
        _install_signal_hook(self)
        freeze_startup_heap()  # a full GC would hold pushes up walking the start-up heap (gc_freeze.py)
        start_idle_release()  # the selects' answers it wrote into the object store, once it idles

    def _background(self) -> None:
        period = max(0.5, self.cfg.ingester.flush_check_period / 1e9)
        heartbeat = max(0.5, self.cfg.common.ring.heartbeat_period / 1e9) if hasattr(self.cfg.common, "ring") else 5.0
        tick = min(period, heartbeat)
        elapsed = 0.0
        expired = self.ingester.stats.expired_chunks
        while not self._stop.wait(tick):
            elapsed += tick
            try:
                self.ring.heartbeat(self.instance_id, self.instance_id, self.node, self.lifecycle.tokens)
                if elapsed >= period:
                    elapsed = 0.0
                    self.ingester.flush()
                    self.ingester.maybe_checkpoint()
                self.ingester.expire_retained()  # between flushes too: retained chunks go on time
                self.ingester.tails.expire()
                if self.ingester.stats.expired_chunks != expired:
                    expired = self.ingester.stats.expired_chunks
                    release_unused(_TRIMMER)
            except Exception:
                log.exception("ingester background loop")

    def _stream_limit(self, tenant: str) -> int:
        """This ingester's share of the tenant's stream limits (per-tenant overrides applied)."""
        limits = limits_for(self.cfg, tenant)
        try:
            healthy = len(self._ring_client.get().healthy_members())
        except RING_AWAY:  # ring unreachable: the local limit only
            healthy = 0
        return local_stream_limit(
            limits.max_streams_per_user, limits.max_global_streams_per_user, healthy, replication_factor(self.cfg)
        )

    def _stream_rate(self, tenant: str) -> tuple[float, float]:
        """The tenant's per-stream rate limit and burst in bytes (per-tenant overrides applied)."""
        limits = limits_for(self.cfg, tenant)
        return float(limits.per_stream_rate_limit), float(limits.per_stream_rate_limit_burst)

    # ------------------------------------------------------------ remote API

    def ready(self) -> str:
        return self.instance_id

    def push_payload(self, payload: bytes) -> None:
        self.ingester.push_payload(payload)

    def push_channel(self) -> tuple[str, bytes, str]:
        """Where a gateway on this node pushes without an actor call: (socket address, key, node id)."""
        return self.push_listener.address, self.push_listener.authkey, self.node

    def read_channel(self) -> tuple[str, bytes, str]:
        """Where a process on this node sends small reads without an actor call (local_reads.py)."""
        return self.read_listener.address, self.read_listener.authkey, self.node

    def push(self, tenant, streams) -> None:
        self.ingester.push(tenant, streams)

    def select(self, tenant, matchers, start, end, shard, line_filters=(), deadline=None, after=None, page_bytes=0):
        # a querier cancels the select of a cancelled query (ray.cancel): it stops at the next stream
        return self.ingester.select_packed(
            tenant, matchers, start, end, shard, line_filters, deadline, call_cancelled, after, page_bytes
        )

    def series(self, tenant, matchers, start, end):
        return self.ingester.series(tenant, matchers, start, end)

    def data_spans(self, tenant):
        return self.ingester.data_spans(tenant)

    def stream_stats(self, tenant, matchers, start, end):
        return self.ingester.stream_stats(tenant, matchers, start, end)

    def stats_and_rows(self, tenant, matchers, start, end, rows_cap, rows, deadline=None):
        return self.ingester.stats_and_rows(tenant, matchers, start, end, rows_cap, rows, deadline, call_cancelled)

    def flush(self) -> int:
        """POST /flush: everything to the store; a FlushError (503) when an upload failed."""
        return self.ingester.flush_all()

    def stats(self) -> dict:
        s = self.ingester.stats
        return {
            "memory_chunks": self.ingester.memory_chunks(),
            "flush_queue": self.ingester.flush_queue_length(),
            "pushed_lines": s.pushed_lines,
            "pushed_bytes": s.pushed_bytes,
            "flushed_chunks": s.flushed_chunks,
            "flush_failures": s.flush_failures,
            "replayed_records": s.replayed_records,
            "tail_subscriptions": len(self.ingester.tails),
            "pid": os.getpid(),
        }

    def pid(self) -> int:
        return os.getpid()

    # ------------------------------------------------------------ admin (svclog/serve/admin_routes.py)

    def service_state(self) -> str:
        return self.lifecycle.state.value

    def prepare_shutdown(self, action: str = "get") -> bool:
        """action "set" | "unset" | "get"; returns whether prepare-shutdown is set afterwards."""
        if action in ("set", "unset"):
            self.lifecycle.set_prepare_shutdown(action == "set")
        return self.lifecycle.prepare_shutdown()

    def shutdown(self, flush: bool = True, delete_ring_tokens: bool = False, terminate: bool = False) -> dict:
        """Leave the ring (flushing first when asked); with terminate the actor process exits after."""
        report = self.lifecycle.shutdown(flush=flush, delete_tokens=delete_ring_tokens)
        if terminate:
            self.terminate()
        return dataclasses.asdict(report)

    def terminate(self) -> None:
        """End this actor for good (an intentional exit: Ray does not restart it)."""
        self.ingester.close()
        ray.actor.exit_actor()

    def set_log_level(self, level: str) -> str:
        return apply_level(level)

    def _stop_background(self) -> None:
        self._stop.set()
        if self._loop.is_alive() and self._loop is not threading.current_thread():
            self._loop.join(CALL_TIMEOUT_S)

    # ------------------------------------------------------------ tail (see svclog/ingester/tail.py)

    @ray.method(concurrency_group=TAIL_GROUP)
    def tail_subscribe(self, tenant: str, query_text: str, sub_id: str) -> str:
        return self.ingester.tails.subscribe(tenant, query_text, sub_id)

    @ray.method(concurrency_group=TAIL_GROUP)
    def tail_poll(self, sub_id: str, max_wait_s: float):
        """(entries, dropped) within max_wait_s; None when the subscription is unknown (re-subscribe)."""
        return self.ingester.tails.poll(sub_id, max_wait_s)

    @ray.method(concurrency_group=TAIL_GROUP)
    def tail_touch(self, sub_id: str) -> bool:
        """Keep a subscription alive while its reader is blocked; False when unknown."""
        return self.ingester.tails.touch(sub_id)

    @ray.method(concurrency_group=TAIL_GROUP)
    def tail_close(self, sub_id: str) -> bool:
        return self.ingester.tails.close(sub_id)


# ------------------------------------------------------------ lifecycle (svclog/ingester/lifecycle.py)

SIGNAL_SHUTDOWN_TIMEOUT_S = 300.0


def ingester_lifecycle(
    cfg: Config, instance_id: str, node: str, ring, ingester, wal_path: str, stop_background
) -> IngesterLifecycle:
    lc = cfg.ingester.lifecycler
    marker_dir = (
        os.path.join(cfg.ingester.shutdown_marker_path, instance_id)
        if (cfg.ingester.shutdown_marker_path)
        else wal_path
    )
    return IngesterLifecycle(
        Identity(instance_id, instance_id, node, lc.num_tokens),
        ring,
        ingester,
        ShutdownMarker(marker_dir),
        TokenFile(token_file_path(lc.tokens_file_path, instance_id)),
        stop_background=stop_background,
        ring_unavailable=RING_AWAY,
    )


def _install_signal_hook(actor: IngesterActor) -> None:
    """On SIGTERM/SIGINT: the lifecycle's shutdown (leave + flush when prepare-shutdown is set), then
    Ray's own handler. The work runs on a thread (Ray calls from a signal handler could deadlock)."""
    if threading.current_thread() is not threading.main_thread():
        log.warning("ingester %s: not on the main thread, no shutdown signal hook", actor.instance_id)
        return
    cfg = actor.cfg

    def run() -> None:
        try:
            actor.lifecycle.on_signal(
                cfg.ingester.wal.flush_on_shutdown, cfg.ingester.lifecycler.unregister_on_shutdown
            )
        except Exception:
            log.exception("ingester %s: shutdown on signal", actor.instance_id)

    for signum in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(signum)

        def handler(sig, frame, previous=previous):
            worker = threading.Thread(target=run, name="shutdown-on-signal", daemon=True)
            worker.start()
            worker.join(SIGNAL_SHUTDOWN_TIMEOUT_S)
            if callable(previous):
                previous(sig, frame)
            elif previous == signal.SIG_DFL:
                signal.signal(sig, signal.SIG_DFL)
                os.kill(os.getpid(), sig)

        signal.signal(signum, handler)


# ray.remote's typed overloads leave out its concurrency_groups option (a documented actor option)
RemoteIngester = ray.remote(concurrency_groups={TAIL_GROUP: TAIL_GROUP_THREADS})(IngesterActor)  # type: ignore[call-overload]
