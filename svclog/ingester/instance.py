"""TenantInstance: one tenant's streams inside an ingester, found by label set."""
from __future__ import annotations

from typing import Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from svclog.ingester.stream import MemoryStream
from svclog.model import Labels, LimitError, Matcher, StreamColumns, labels_match


class TenantInstance:
    def __init__(self, tenant: str, max_streams: int = 0):
        self.tenant = tenant
        self.max_streams = max_streams
        self.streams: dict[Labels, MemoryStream] = {}

    def push(self, streams: Iterable[StreamColumns], now_ns: int) -> tuple[int, int]:
        """Append entries; returns (lines, bytes). New streams beyond the limit are refused."""
        lines = size = 0
        for data in streams:
            stream = self.streams.get(data.labels)
            if stream is None:
                if self.max_streams and len(self.streams) >= self.max_streams:
                    raise LimitError(
                        f"Maximum active stream limit exceeded, reduce the number of active streams "
                        f"(reduce labels or reduce label values), or contact your administrator to see "
                        f"if the limit can be increased, user: '{self.tenant}'")
                stream = self.streams[data.labels] = MemoryStream(data.labels, now_ns)
            raw = data.raw_bytes()
            stream.append(data.ts, data.lines, data.metadata, raw, now_ns)
            lines += len(data)
            size += raw
        return lines, size

    def matching(self, matchers: Iterable[Matcher], shard: tuple[int, int] | None = None) -> Iterator[MemoryStream]:
        matchers = tuple(matchers)
        for stream in list(self.streams.values()):
            if shard is not None and stream.fingerprint % shard[1] != shard[0]:
                continue
            if labels_match(stream.labels, matchers):
                yield stream

    def select(self, matchers: Iterable[Matcher], start: int, end: int,
               shard: tuple[int, int] | None = None) -> list[tuple[Labels, pa.Table]]:
        out = []
        for stream in self.matching(matchers, shard):
            tables = stream.tables(start, end)
            if tables:
                out.append((stream.labels, pa.concat_tables(tables) if len(tables) > 1 else tables[0]))
        return out

    def stream_stats(self, matchers: Iterable[Matcher], start: int, end: int) -> list[tuple[Labels, int, int, int]]:
        """(labels, entries, bytes, chunks) of matching streams with entries in [start, end)."""
        out = []
        for stream in self.matching(matchers):
            tables = stream.tables(start, end)
            if tables:
                lines = sum(t.num_rows for t in tables)
                size = sum(int(pc.sum(pc.binary_length(t.column("line"))).as_py() or 0) for t in tables)
                out.append((stream.labels, lines, size, len(stream.sealed) + (1 if len(stream.head) else 0)))
        return out

    def series(self, matchers: Iterable[Matcher], start: int, end: int) -> list[Labels]:
        return [s.labels for s in self.matching(matchers) if s.tables(start, end)]

    def drop_empty(self) -> None:
        for labels in [k for k, s in self.streams.items() if s.is_empty()]:
            del self.streams[labels]
