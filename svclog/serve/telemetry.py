"""Prometheus metrics of the HTTP entry (pushes, bytes, queries) and build information."""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Callable
from functools import lru_cache
from typing import Protocol

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily

import svclog
from svclog.distributor.distributor import ACCEPTED

REGISTRY = CollectorRegistry()
PUSH_REQUESTS = Counter("svc_distributor_push_requests", "Push requests by status code.", ["status"], registry=REGISTRY)


class _ReceivedCollector:
    """Lines and bytes the distributors of this process stored, partly accepted pushes included."""

    def collect(self):
        lines = CounterMetricFamily(
            "svc_distributor_lines_received", "Log lines accepted by the distributor.", labels=["tenant"]
        )
        size = CounterMetricFamily(
            "svc_distributor_bytes_received", "Raw line bytes accepted by the distributor.", labels=["tenant"]
        )
        for tenant, (count, total) in sorted(ACCEPTED.snapshot().items()):
            lines.add_metric([tenant], count)
            size.add_metric([tenant], total)
        return [lines, size]


REGISTRY.register(_ReceivedCollector())


class _ChannelCounts(Protocol):
    pushes: int
    broken: int


class _PushChannelCollector:
    """Pushes this process sent to ingesters over local sockets (svclog/actors/push_channels.py)."""

    def __init__(self) -> None:
        self.sources: list[Callable[[], _ChannelCounts]] = []

    def collect(self):
        stats = [source() for source in self.sources]
        pushes = CounterMetricFamily(
            "svc_distributor_channel_pushes", "Pushes sent to an ingester over a local socket instead of an actor call."
        )
        broken = CounterMetricFamily(
            "svc_distributor_channels_broken",
            "Push sockets closed after a failure (actor calls until one opens again).",
        )
        pushes.add_metric([], sum(s.pushes for s in stats))
        broken.add_metric([], sum(s.broken for s in stats))
        return [pushes, broken]


PUSH_CHANNELS = _PushChannelCollector()
REGISTRY.register(PUSH_CHANNELS)


class _ReadChannelCollector:
    """Planning reads this process sent to ingesters over local sockets (svclog/actors/read_channels.py)."""

    def __init__(self) -> None:
        self.sources: list[Callable[[], int]] = []

    def collect(self):
        reads = CounterMetricFamily(
            "svc_query_frontend_channel_reads",
            "Small queries' planning reads sent to an ingester over a local socket instead of an actor call.",
        )
        reads.add_metric([], sum(source() for source in self.sources))
        return [reads]


READ_CHANNELS = _ReadChannelCollector()
REGISTRY.register(READ_CHANNELS)
QUERIES = Counter(
    "svc_query_requests", "Query requests by endpoint and status code.", ["endpoint", "status"], registry=REGISTRY
)
LOCAL_QUERIES = Counter(
    "svc_query_frontend_local_queries",
    "Queries the query frontend ran in its own process (they read at most local_query_max_bytes).",
    registry=REGISTRY,
)
QUERY_SECONDS = Histogram("svc_query_duration_seconds", "Query latency by endpoint.", ["endpoint"], registry=REGISTRY)
MEMORY_CHUNKS = Gauge(
    "svc_ingester_memory_chunks", "Chunks held in ingester memory (head and sealed).", registry=REGISTRY
)
FLUSH_QUEUE = Gauge("svc_ingester_flush_queue_length", "Sealed chunks waiting for upload.", registry=REGISTRY)
FLUSHED_CHUNKS = Gauge(
    "svc_ingester_chunks_flushed", "Chunks flushed to the object store since start.", registry=REGISTRY
)
FLUSH_FAILURES = Gauge("svc_ingester_flush_failures", "Failed chunk uploads since start (retried).", registry=REGISTRY)
INGESTERS = Gauge("svc_ingesters_reachable", "Ingesters that answered the last stats call.", registry=REGISTRY)


def record_push(tenant: str, status: int, lines: int = 0, size: int = 0) -> None:
    """Counts the request. Lines and bytes are counted where they are stored (the distributor's
    ACCEPTED, partly accepted pushes included); `lines`/`size` remain for older callers."""
    PUSH_REQUESTS.labels(str(status)).inc()


def record_query(endpoint: str, status: int, seconds: float) -> None:
    QUERIES.labels(endpoint, str(status)).inc()
    QUERY_SECONDS.labels(endpoint).observe(seconds)


def render(ingester_stats: list[dict]) -> tuple[bytes, str]:
    MEMORY_CHUNKS.set(sum(s.get("memory_chunks", 0) for s in ingester_stats))
    FLUSH_QUEUE.set(sum(s.get("flush_queue", 0) for s in ingester_stats))
    FLUSHED_CHUNKS.set(sum(s.get("flushed_chunks", 0) for s in ingester_stats))
    FLUSH_FAILURES.set(sum(s.get("flush_failures", 0) for s in ingester_stats))
    INGESTERS.set(len(ingester_stats))
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


@lru_cache(maxsize=1)
def build_info() -> dict:
    def git(*args: str) -> str:
        try:
            return subprocess.run(
                ["git", *args], capture_output=True, text=True, timeout=2, cwd=svclog.__path__[0]
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {
        "version": getattr(svclog, "__version__", "0.1.0"),
        "revision": git("rev-parse", "--short", "HEAD"),
        "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
        "buildDate": "",
        "buildUser": "",
        "goVersion": f"python{platform.python_version()}",
    }
