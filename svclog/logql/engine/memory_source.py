"""MemorySource: an in-memory LogSource for tests, dev tools and ingester head data."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from svclog.logql.source import METADATA_TYPE, SelectRequest, StreamBlock
from svclog.model import Labels, Matcher, labels_match

EntryTuple = tuple[Any, ...]  # (ts_ns, line) or (ts_ns, line, metadata_dict)


class _StoredStream:
    """One stream's entries sorted by time (stably: push order among equal timestamps) and
    de-duplicated (same timestamp and line, the first copy kept)."""

    def __init__(self, labels: Labels, entries: Sequence[EntryTuple]):
        self.labels = labels
        rows = sorted(
            ((int(e[0]), e[1], dict(e[2]) if len(e) > 2 and e[2] else {}) for e in entries), key=lambda e: e[0]
        )
        unique = []
        seen: set[tuple[int, str]] = set()
        for ts, line, meta in rows:
            if (ts, line) not in seen:
                seen.add((ts, line))
                unique.append((ts, line, meta))
        self.ts_np = np.array([e[0] for e in unique], dtype=np.int64)
        self.ts = pa.array(self.ts_np, pa.int64())
        self.line = pa.array([e[1] for e in unique], pa.string())
        has_meta = any(e[2] for e in unique)
        self.metadata = pa.array([list(e[2].items()) for e in unique], METADATA_TYPE) if has_meta else None

    def block(self, start: int, end: int) -> StreamBlock | None:
        lo = int(np.searchsorted(self.ts_np, start, side="left"))
        hi = int(np.searchsorted(self.ts_np, end, side="left"))
        if hi <= lo:
            return None
        meta = None
        if self.metadata is not None:
            # a compact copy: consumers read .keys/.items, which ignore a slice's offset
            meta = pa.concat_arrays([self.metadata.slice(lo, hi - lo)])
        return StreamBlock(self.labels, self.ts.slice(lo, hi - lo), self.line.slice(lo, hi - lo), meta)


class MemorySource:
    """A LogSource over `{labels: [(ts_ns, line[, metadata]), ...]}`; labels a dict or `Labels`."""

    def __init__(self, streams: Mapping[Labels | Mapping[str, str], Sequence[EntryTuple]] | None = None):
        self._streams: dict[Labels, _StoredStream] = {}
        for labels, entries in (streams or {}).items():
            self.add(labels, entries)

    @classmethod
    def from_dicts(cls, streams: Iterable[tuple[Mapping[str, str], Sequence[EntryTuple]]]) -> MemorySource:
        source = cls()
        for labels, entries in streams:
            source.add(labels, entries)
        return source

    def add(self, labels: Labels | Mapping[str, str], entries: Sequence[EntryTuple]) -> None:
        """Add entries to a stream (merging with the entries it already has)."""
        key = labels if isinstance(labels, Labels) else Labels.from_dict(labels)
        old = self._streams.get(key)
        merged: list[tuple[int, str, dict[str, str]]] = []
        if old is not None:  # earlier entries first: equal timestamps keep push order
            metas = old.metadata.to_pylist() if old.metadata is not None else [None] * len(old.ts_np)
            merged = [(t, ln, dict(m or [])) for t, ln, m in zip(old.ts_np.tolist(), old.line.to_pylist(), metas)]
        merged += list(entries)
        self._streams[key] = _StoredStream(key, merged)

    def streams(self) -> list[Labels]:
        return list(self._streams)

    def select_logs(self, request: SelectRequest) -> Iterable[StreamBlock]:
        for labels, stored in self._streams.items():
            if not labels_match(labels, request.matchers):
                continue
            if request.shard is not None and labels.fingerprint() % request.shard[1] != request.shard[0]:
                continue
            block = stored.block(request.start, request.end)
            if block is not None:
                yield block

    def select_series(self, matchers: tuple[Matcher, ...], start: int, end: int) -> Iterable[Labels]:
        for labels, stored in self._streams.items():
            if labels_match(labels, matchers) and stored.block(start, end) is not None:
                yield labels
