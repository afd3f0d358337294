"""Ray-backed adapters for the protocols components declare (all `.remote()` calls live here)."""
from __future__ import annotations

import threading
import time

import pyarrow as pa
import ray

from svclog.actors.options import NAMESPACE, RING_NAME
from svclog.ingester.payload import encode_batch
from svclog.model import Labels, Matcher, StreamColumns
from svclog.ring.ring import Ring

PUSH_TIMEOUT_S = 30.0
QUERY_TIMEOUT_S = 300.0


class RingClient:
    """A cached snapshot of the ring actor's state, refreshed at most every `ttl` seconds."""

    def __init__(self, ttl: float = 1.0):
        self.ttl = ttl
        self._ring: Ring | None = None
        self._fetched = 0.0
        self._lock = threading.Lock()
        self._actor = None

    def actor(self):
        if self._actor is None:
            self._actor = ray.get_actor(RING_NAME, namespace=NAMESPACE)
        return self._actor

    def get(self) -> Ring:
        with self._lock:
            if self._ring is None or time.monotonic() - self._fetched > self.ttl:
                self._ring = Ring.from_snapshot(ray.get(self.actor().snapshot.remote(), timeout=30))
                self._fetched = time.monotonic()
            return self._ring


class IngesterPool:
    """Pusher and IngesterReader over the ingester actors named in the ring."""

    applies_line_filters = True  # ingesters apply the request's leading line filters (pushdown)

    def __init__(self, ring: RingClient, replication_factor: int):
        self.ring = ring
        self.rf = replication_factor
        self._handles: dict[str, object] = {}

    def handle(self, address: str):
        handle = self._handles.get(address)
        if handle is None:
            handle = self._handles[address] = ray.get_actor(address, namespace=NAMESPACE)
        return handle

    def push_many(self, tenant: str, assignments: dict[str, list[StreamColumns]]) -> dict[str, Exception | None]:
        ring = self.ring.get()
        refs = {}
        errors: dict[str, Exception | None] = {}
        for member_id, streams in assignments.items():
            try:
                payload = encode_batch(tenant, streams)
                refs[member_id] = self.handle(ring.members[member_id].address).push_payload.remote(payload)
            except Exception as err:  # actor missing: counts against the quorum
                errors[member_id] = err
        for member_id, ref in refs.items():
            try:
                ray.get(ref, timeout=PUSH_TIMEOUT_S)
                errors[member_id] = None
            except Exception as err:
                errors[member_id] = _unwrap(err)
        return errors

    def _fan_out(self, method: str, *args):
        ring = self.ring.get()
        members = ring.healthy_members() or list(ring.members.values())
        refs = []
        for member in members:
            try:
                refs.append(getattr(self.handle(member.address), method).remote(*args))
            except Exception:
                continue
        results, failures = [], 0
        for ref in refs:
            try:
                results.append(ray.get(ref, timeout=QUERY_TIMEOUT_S))
            except Exception:
                failures += 1
        if failures and failures >= self.rf:
            raise RuntimeError(f"{failures} ingesters failed to answer; data may be incomplete")
        return results

    def select(self, tenant: str, matchers: tuple[Matcher, ...], start: int, end: int,
               shard: tuple[int, int] | None, line_filters: tuple = ()) -> tuple[list[tuple[Labels, pa.Table]], int]:
        results = self._fan_out("select", tenant, matchers, start, end, shard, line_filters)
        return [item for packed in results for item in packed.unpack()], len(results)

    def series(self, tenant: str, matchers: tuple[Matcher, ...], start: int, end: int) -> list[Labels]:
        return [labels for result in self._fan_out("series", tenant, matchers, start, end) for labels in result]

    def stats(self, tenant: str, matchers: tuple[Matcher, ...], start: int, end: int) -> list:
        """Per-stream (labels, entries, bytes, chunks); replicas of a stream count once (the largest)."""
        best: dict[Labels, tuple] = {}
        for result in self._fan_out("stream_stats", tenant, matchers, start, end):
            for row in result:
                if row[0] not in best or row[1] > best[row[0]][1]:
                    best[row[0]] = row
        return list(best.values())

    def call_all(self, method: str, *args) -> list:
        return self._fan_out(method, *args)


def _unwrap(err: Exception) -> Exception:
    """The user-facing cause of a remote error (e.g. a LimitError raised in an ingester)."""
    cause = getattr(err, "cause", None)
    return cause if isinstance(cause, Exception) else err
