"""Ray host of an Ingester: WAL replay on (re)start, ring registration, flush and heartbeat loop."""
from __future__ import annotations

import logging
import os
import threading

import ray

from svclog.actors.options import NAMESPACE, RING_NAME
from svclog.config import Config, object_store_uri, wal_dir
from svclog.ingester.ingester import Ingester, IngesterSettings
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.objstore import ObjectStore

log = logging.getLogger(__name__)


def ingester_settings(cfg: Config, instance_id: str) -> IngesterSettings:
    ing = cfg.ingester
    return IngesterSettings(
        instance_id=instance_id,
        wal_dir=os.path.join(wal_dir(cfg), instance_id),
        wal_enabled=ing.wal.enabled,
        chunk_target_size=ing.chunk_target_size,
        chunk_idle_period=ing.chunk_idle_period,
        max_chunk_age=ing.max_chunk_age,
        checkpoint_interval_s=ing.wal.checkpoint_duration / 1e9,
        max_streams_per_tenant=cfg.limits_config.max_streams_per_user,
    )


class IngesterActor:
    def __init__(self, cfg: Config, instance_id: str):
        self.cfg = cfg
        self.instance_id = instance_id
        store = ObjectStore(object_store_uri(cfg))
        chunks = ChunkStore(store, encoding=_chunk_codec(cfg.ingester.chunk_encoding),
                            block_bytes=cfg.ingester.chunk_block_size)
        self.ingester = Ingester(ingester_settings(cfg, instance_id), chunks)
        self.node = ray.get_runtime_context().get_node_id()
        self.ring = ray.get_actor(RING_NAME, namespace=NAMESPACE)
        ray.get(self.ring.register.remote(instance_id, instance_id, self.node,
                                          cfg.ingester.lifecycler.num_tokens))
        self._stop = threading.Event()
        self._loop = threading.Thread(target=self._background, name="flush-loop", daemon=True)
        self._loop.start()

    def _background(self) -> None:
        period = max(0.5, self.cfg.ingester.flush_check_period / 1e9)
        heartbeat = max(0.5, self.cfg.common.ring.heartbeat_period / 1e9) if hasattr(
            self.cfg.common, "ring") else 5.0
        tick = min(period, heartbeat)
        elapsed = 0.0
        while not self._stop.wait(tick):
            elapsed += tick
            try:
                self.ring.heartbeat.remote(self.instance_id, self.instance_id, self.node)
                if elapsed >= period:
                    elapsed = 0.0
                    self.ingester.flush()
                    self.ingester.maybe_checkpoint()
            except Exception:
                log.exception("ingester background loop")

    # ------------------------------------------------------------ remote API

    def ready(self) -> str:
        return self.instance_id

    def push(self, tenant, streams) -> None:
        self.ingester.push(tenant, streams)

    def select(self, tenant, matchers, start, end, shard):
        return self.ingester.select(tenant, matchers, start, end, shard)

    def series(self, tenant, matchers, start, end):
        return self.ingester.series(tenant, matchers, start, end)

    def stream_stats(self, tenant, matchers, start, end):
        return self.ingester.stream_stats(tenant, matchers, start, end)

    def flush(self) -> int:
        return self.ingester.flush(force=True)

    def stats(self) -> dict:
        s = self.ingester.stats
        return {"memory_chunks": self.ingester.memory_chunks(), "pushed_lines": s.pushed_lines,
                "pushed_bytes": s.pushed_bytes, "flushed_chunks": s.flushed_chunks,
                "flush_failures": s.flush_failures, "replayed_records": s.replayed_records,
                "pid": os.getpid()}

    def pid(self) -> int:
        return os.getpid()


def _chunk_codec(encoding: str) -> str:
    return {"snappy": "lz4", "lz4": "lz4", "none": "none", "gzip": "zstd", "zstd": "zstd"}.get(
        str(encoding).lower(), "zstd")


RemoteIngester = ray.remote(IngesterActor)
