"""Live tailing: per-tenant subscriptions in an ingester, and the merge of replicas on the reading side.

Ingester side: `TailRegistry` holds the subscriptions of one ingester. After a push is
applied, `offer(tenant, streams)` runs each subscription of that tenant: stream matchers
first (per stream, cheap), then the query's pipeline over the pushed columns. Matching
entries go into a bounded per-subscriber buffer; what does not fit is recorded as
dropped (labels and timestamp, itself bounded) instead of growing. A reader drains a
subscription with `poll`, a long-poll that returns as soon as something arrives.
Subscriptions nobody polls for `idle_timeout_s` expire (the reader died).

Reading side: `TailMerger` combines the batches of every ingester of one tail: drops the
copies that replication (or a replay overlap) produces, holds entries for `delay_for`
and releases them in timestamp order, with a bounded amount of memory.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from svclog.ingester.payload import BatchStream, PushedStream
from svclog.logql import ast
from svclog.logql.engine.result import EntryLabels
from svclog.logql.parser import parse_log_query
from svclog.logql.source import METADATA_TYPE, StreamBlock
from svclog.logql.stages import Pipeline, block_to_batch, build_pipeline, group_by_categories
from svclog.model import Labels, LimitError, labels_match

log = logging.getLogger(__name__)


class TailEntry(NamedTuple):
    # The labels a plain tail shows: stream labels + structured metadata + parsed labels, as in
    # query results, except for a query without stages, whose entries keep their stream's labels
    # (the reference's ingester passes such pushes through untouched).
    labels: Labels
    ts: int
    line: str
    # The entry's structured metadata and parsed labels, for the categorize-labels encoding;
    # None when unknown (the labels then hold everything).
    entry_labels: EntryLabels | None = None

    def all_labels(self) -> Labels:
        """Stream labels, structured metadata and parsed labels together."""
        if self.entry_labels is None:
            return self.labels
        sm, parsed = self.entry_labels
        return Labels((*self.labels.items, *sm.items, *parsed.items))


class DroppedEntry(NamedTuple):
    labels: Labels
    ts: int


PollResult = tuple[list[TailEntry], list[DroppedEntry]]


@dataclass(frozen=True)
class TailSettings:
    buffer_entries: int = 10_000  # per subscriber; beyond it entries are dropped and recorded
    max_dropped_records: int = 1_000  # per subscriber between two polls; older records are forgotten
    max_poll_entries: int = 5_000  # per poll answer
    idle_timeout_s: float = 30.0  # a subscription not polled for this long is removed
    max_subscriptions: int = 256  # per ingester


# ---------------------------------------------------------------- ingester side


class TailSubscription:
    """One tail of one tenant: matchers, pipeline, bounded buffer, dropped records."""

    def __init__(self, sub_id: str, tenant: str, query: ast.LogQuery, settings: TailSettings, now: float):
        self.sub_id = sub_id
        self.tenant = tenant
        self.matchers = query.selector.matchers
        self.pipeline: Pipeline = build_pipeline(query.stages)
        self.passthrough = not query.stages  # plain tails show the stream's own labels
        self.settings = settings
        self.last_polled = now
        self.polling = 0
        self.closed = False
        self.dropped_total = 0
        self._buffer: deque[TailEntry] = deque()
        self._dropped: deque[DroppedEntry] = deque(maxlen=settings.max_dropped_records)
        self._cond = threading.Condition()
        self._process_lock = threading.Lock()  # pipeline stages are not assumed re-entrant

    def offer(self, streams: Iterable[PushedStream]) -> None:
        matching = [s for s in streams if len(s) and labels_match(s.labels, self.matchers)]
        if not matching:
            return
        with self._process_lock:
            entries = [entry for s in matching for entry in self._process(s)]
        if not entries:
            return
        with self._cond:
            room = max(0, self.settings.buffer_entries - len(self._buffer))
            self._buffer.extend(entries[:room])
            for entry in entries[room:]:
                self._dropped.append(DroppedEntry(entry.labels, entry.ts))
            self.dropped_total += max(0, len(entries) - room)
            self._cond.notify_all()

    def _process(self, stream: PushedStream) -> list[TailEntry]:
        batch = self.pipeline.process(block_to_batch(_to_block(stream)))
        if len(batch) == 0:
            return []
        ts = np.asarray(batch.ts.to_numpy(zero_copy_only=False), dtype=np.int64)
        lines = batch.line.to_pylist()
        out: list[TailEntry] = []
        for (stream_labels, sm, parsed), indices in group_by_categories(batch):
            extra = EntryLabels(sm, parsed)
            labels = stream_labels if self.passthrough else Labels((*stream_labels.items, *sm.items, *parsed.items))
            out.extend(TailEntry(labels, int(ts[i]), lines[i], extra) for i in indices.to_numpy())
        out.sort(key=lambda e: e.ts)  # stable: push order among equal timestamps
        return out

    def take(self, max_wait_s: float, now: Callable[[], float]) -> PollResult:
        """Wait up to `max_wait_s` for entries or drop records, then hand them over."""
        with self._cond:
            self.polling += 1
            self.last_polled = now()
            try:
                if not self._buffer and not self._dropped and not self.closed and max_wait_s > 0:
                    self._cond.wait_for(lambda: bool(self._buffer or self._dropped or self.closed), max_wait_s)
                count = min(len(self._buffer), self.settings.max_poll_entries)
                entries = [self._buffer.popleft() for _ in range(count)]
                dropped = list(self._dropped)
                self._dropped.clear()
                return entries, dropped
            finally:
                self.polling -= 1
                self.last_polled = now()

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._buffer.clear()
            self._dropped.clear()
            self._cond.notify_all()

    def idle_for(self, now: float) -> float:
        return 0.0 if self.polling else now - self.last_polled


def _to_block(stream: PushedStream) -> StreamBlock:
    if isinstance(stream, BatchStream):  # already Arrow: its columns as they are
        batch = stream.batch
        md = batch.column(2)
        return StreamBlock(stream.labels, batch.column(0), batch.column(1), md if md.null_count < len(md) else None)
    metadata = None
    if stream.metadata is not None:
        metadata = pa.array([[tuple(kv) for kv in m] if m else [] for m in stream.metadata], METADATA_TYPE)
    return StreamBlock(stream.labels, pa.array(stream.ts, pa.int64()), pa.array(stream.lines, pa.string()), metadata)


class TailRegistry:
    """The tail subscriptions of one ingester, by id and by tenant."""

    def __init__(self, settings: TailSettings | None = None, clock: Callable[[], float] = time.monotonic):
        self.settings = settings or TailSettings()
        self._clock = clock
        self._lock = threading.Lock()
        self._subs: dict[str, TailSubscription] = {}
        self._by_tenant: dict[str, dict[str, TailSubscription]] = {}

    @property
    def active(self) -> bool:
        """Is anybody tailing? The push path checks this first, so an idle registry costs nothing."""
        return bool(self._subs)

    def subscribe(self, tenant: str, query_text: str, sub_id: str) -> str:
        """Start (or restart, same id) a subscription; the query is parsed here: metric queries fail."""
        query = parse_log_query(query_text)
        with self._lock:
            old = self._subs.get(sub_id)
            if old is None and len(self._subs) >= self.settings.max_subscriptions:
                raise LimitError(
                    f"too many tail subscriptions on this ingester (limit {self.settings.max_subscriptions})"
                )
            if old is not None:
                self._remove(old)
            sub = TailSubscription(sub_id, tenant, query, self.settings, self._clock())
            self._subs[sub_id] = sub
            # Copy-on-write: `offer` iterates a tenant's dict without taking the lock.
            self._by_tenant[tenant] = {**self._by_tenant.get(tenant, {}), sub_id: sub}
        return sub_id

    def poll(self, sub_id: str, max_wait_s: float) -> PollResult | None:
        """Entries and drop records of a subscription; None when it is unknown (expired, or a restart)."""
        sub = self._subs.get(sub_id)
        if sub is None:
            return None
        # Never wait close to the idle timeout: a long poll must not look like a dead reader.
        result = sub.take(min(max_wait_s, self.settings.idle_timeout_s / 3), self._clock)
        return None if sub.closed else result

    def touch(self, sub_id: str) -> bool:
        """Keep a subscription alive while its reader is too slow to poll; False when unknown.

        Its buffer keeps filling meanwhile and what does not fit is recorded as dropped."""
        sub = self._subs.get(sub_id)
        if sub is None:
            return False
        sub.last_polled = self._clock()
        return True

    def close(self, sub_id: str) -> bool:
        with self._lock:
            sub = self._subs.get(sub_id)
            if sub is None:
                return False
            self._remove(sub)
        return True

    def _remove(self, sub: TailSubscription) -> None:
        del self._subs[sub.sub_id]
        rest = {k: v for k, v in self._by_tenant.get(sub.tenant, {}).items() if k != sub.sub_id}
        if rest:
            self._by_tenant[sub.tenant] = rest
        else:
            self._by_tenant.pop(sub.tenant, None)
        sub.close()

    def offer(self, tenant: str, streams: list[PushedStream]) -> None:
        """Hand pushed (already applied) streams to the tenant's subscriptions; never raises."""
        subs = self._by_tenant.get(tenant)
        if not subs:
            return
        for sub in subs.values():
            try:
                sub.offer(streams)
            except Exception:  # a failing tail must never fail (and so repeat) an applied push
                log.exception("tail %s: processing pushed entries failed", sub.sub_id)

    def expire(self) -> int:
        """Remove subscriptions nobody polled for `idle_timeout_s`; returns how many."""
        now = self._clock()
        with self._lock:
            stale = [s for s in self._subs.values() if s.idle_for(now) > self.settings.idle_timeout_s]
            for sub in stale:
                self._remove(sub)
        return len(stale)

    def __len__(self) -> int:
        return len(self._subs)


# ---------------------------------------------------------------- reading side


@dataclass(frozen=True)
class MergeSettings:
    delay_ns: int = 0  # delay_for: hold entries this long after arrival, to release them in order
    max_held: int = 10_000  # entries held for delay_for; beyond it the oldest are released early
    dedupe_keys: int = 200_000  # recently seen entries remembered to drop replica copies
    dedupe_window_ns: int = 60 * 1_000_000_000  # ... and for at most this long


class TailMerger:
    """Merges the batches of every ingester of one tail: de-duplicates, delays, orders."""

    def __init__(self, settings: MergeSettings | None = None, clock: Callable[[], int] = time.monotonic_ns):
        self.settings = settings or MergeSettings()
        self._clock = clock
        self._seen: OrderedDict[int, int] = OrderedDict()  # entry key -> time first seen
        self._held: deque[tuple[int, list[TailEntry]]] = deque()  # (arrival, entries)
        self._held_count = 0
        self._dropped: dict[tuple[tuple[tuple[str, str], ...], int], DroppedEntry] = {}
        self.duplicates = 0

    def mark_seen(self, entries: Iterable[TailEntry]) -> None:
        """Remember entries sent another way (the replay), so live copies of them are dropped."""
        now = self._clock()
        for entry in entries:
            self._remember(_key(entry), now)
        self._trim(now)

    def add(self, entries: Iterable[TailEntry], dropped: Iterable[DroppedEntry] = ()) -> None:
        now = self._clock()
        fresh = []
        for entry in entries:
            key = _key(entry)
            if key in self._seen:
                self.duplicates += 1
                continue
            self._remember(key, now)
            fresh.append(entry)
        self._trim(now)
        for record in dropped:
            if len(self._dropped) < self.settings.max_held:
                self._dropped[(record.labels.items, record.ts)] = record  # replicas drop the same entries
        if fresh:
            self._held.append((now, fresh))
            self._held_count += len(fresh)

    def release(self) -> tuple[list[TailEntry], list[DroppedEntry]]:
        """Entries due (held for delay_for, or pushed out by max_held), oldest first, and drop records."""
        due_before = self._clock() - self.settings.delay_ns
        out: list[TailEntry] = []
        while self._held and (self._held[0][0] <= due_before or self._held_count > self.settings.max_held):
            _, entries = self._held.popleft()
            self._held_count -= len(entries)
            out.extend(entries)
        out.sort(key=lambda e: (e.ts, e.labels.items))
        dropped = list(self._dropped.values())
        self._dropped.clear()
        return out, dropped

    def seconds_to_next(self) -> float | None:
        """Seconds until held entries become due; None when nothing is held."""
        if not self._held:
            return None
        due = self._held[0][0] + self.settings.delay_ns - self._clock()
        return max(0.0, due / 1e9)

    def _remember(self, key: int, now: int) -> None:
        self._seen[key] = now
        self._seen.move_to_end(key)

    def _trim(self, now: int) -> None:
        horizon = now - self.settings.dedupe_window_ns
        seen = self._seen
        while seen and (len(seen) > self.settings.dedupe_keys or next(iter(seen.values())) < horizon):
            seen.popitem(last=False)


def _key(entry: TailEntry) -> int:
    # A 64-bit hash instead of the entry itself keeps the window's memory small. Hash the label
    # items, not the Labels: its cached hash may come from another process (another hash seed).
    # All of an entry's labels: a replayed entry and its live copy may split them differently.
    return hash((entry.all_labels().items, entry.ts, entry.line))


def tail_message(
    entries: list[TailEntry], dropped: list[DroppedEntry], flags: tuple[str, ...] = (), categorize: bool = False
) -> dict[str, Any]:
    """The websocket message, as the reference writes it: one stream object per entry, in order,
    `dropped_entries` only when any, then `encodingFlags` when the request named any flags.

    With `categorize` an entry is `[ts, line, {"structuredMetadata"?, "parsed"?}]` and its
    stream shows the labels that are neither (the reference deletes them by name)."""
    message: dict[str, Any] = {"streams": [_tail_stream(e, categorize) for e in entries]}
    if dropped:
        message["dropped_entries"] = [{"labels": d.labels.to_dict(), "timestamp": str(d.ts)} for d in dropped]
    if flags:
        message["encodingFlags"] = list(flags)
    return message


def _tail_stream(entry: TailEntry, categorize: bool) -> dict[str, Any]:
    if not categorize:
        return {"stream": entry.labels.to_dict(), "values": [[str(entry.ts), entry.line]]}
    sm, parsed = entry.entry_labels or (Labels(), Labels())
    extra: dict[str, Any] = {}
    if len(sm):
        extra["structuredMetadata"] = sm.to_dict()
    if len(parsed):
        extra["parsed"] = parsed.to_dict()
    return {"stream": entry_stream_labels(entry).to_dict(), "values": [[str(entry.ts), entry.line, extra]]}


def entry_stream_labels(entry: TailEntry) -> Labels:
    """An entry's labels without its structured metadata and parsed labels (removed by name,
    as the reference's categorizing iterator does)."""
    if entry.entry_labels is None:
        return entry.labels
    sm, parsed = entry.entry_labels
    aside = {*sm.names(), *parsed.names()}
    return Labels((k, v) for k, v in entry.labels.items if k not in aside)
