"""Reading a log query in time windows, in the requested direction, until `limit` entries are certain.

A log query answers the first `limit` entries in time order (newest first for backward). Every
entry of a later window is strictly worse than every entry of an earlier one (windows are
half-open time ranges, so equal timestamps never straddle two), so once the windows read hold
`limit` entries after the pipeline, nothing further can enter the answer and reading stops.
The rows kept are then cut to those whose time can still be in the answer (ties included),
so grouping and ordering cost what the answer needs, not what was read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql.engine.guard import QueryGuard, array_bytes
from svclog.logql.engine.params import QueryParams
from svclog.logql.source import CountsLinesRead, LogSource, SelectRequest, StreamBlock
from svclog.logql.stages.batch import LogBatch

FIRST_WINDOW_PARTS = 32  # the first window is 1/32 of the range ...
MIN_WINDOW_NS = 1_000_000_000  # ... but at least a second
MAX_GROWTH = 8  # a window (or slice) is at most 8x the one before
MIN_SLICE_ROWS = 4096  # rows the pipeline gets at once, at least (per-block overhead stays small) ...
MAX_SLICE_ROWS = 1 << 20  # ... and at most (the parsed columns of one slice stay bounded)


@dataclass
class Processed:
    """One block's pipeline output: its timestamps as numpy and the batch."""

    ts: np.ndarray
    batch: LogBatch


def read_in_windows(
    request: SelectRequest,
    params: QueryParams,
    source: LogSource,
    process: Callable[[StreamBlock], LogBatch],
    guard: QueryGuard,
) -> list[Processed]:
    """Pipeline outputs of the blocks that can hold answer entries, in ascending time order
    (slice by slice, blocks in the source's order within a slice), cut to those entries."""
    reader = _Reader(params, process, guard)
    width = _first_width(params)
    lo, hi = params.start, params.end  # what is still unread
    counter = source if isinstance(source, CountsLinesRead) else None
    while lo < hi:
        start, end = (max(lo, hi - width), hi) if reader.backward else (lo, min(hi, lo + width))
        before = reader.total
        read_before = counter.lines_read() if counter is not None else None
        if reader.feed(_select(source, replace(request, start=start, end=end), guard)):
            break
        if reader.backward:
            hi = start
        else:
            lo = end
        read_nothing = counter is not None and counter.lines_read() == read_before
        if read_nothing and reader.total == before:
            width = hi - lo  # nothing read, nothing found: the rest costs as little (CountsLinesRead)
        else:
            width = _next_width(width, reader.total - before, params.limit - reader.total)
    return reader.answer_rows()


def _select(source: LogSource, request: SelectRequest, guard: QueryGuard) -> list[StreamBlock]:
    blocks = []
    for block in source.select_logs(request):
        guard.check()
        blocks.append(block)
    return blocks


class _Reader:
    """Runs the pipeline over selected blocks a time slice at a time, in the query's direction,
    sizing each slice (in rows) to what is still needed; the pipeline (parsers are the costly
    part) thus sees about `limit` rows however many one select returned."""

    def __init__(self, params: QueryParams, process: Callable[[StreamBlock], LogBatch], guard: QueryGuard):
        self.params = params
        self.backward = params.direction == "backward"
        self.process = process
        self.guard = guard
        self.slices: list[list[Processed]] = []
        self.keys: list[np.ndarray] = []  # per processed block: its times as sort keys (ascending = better)
        self.total = 0
        self.slice_rows = max(MIN_SLICE_ROWS, params.limit + params.limit // 4)

    def feed(self, blocks: list[StreamBlock]) -> bool:
        """Process one select's blocks; True once the answer is certain (read no further)."""
        if not blocks:
            return False
        held = sum(array_bytes(b.ts, b.line, b.metadata) for b in blocks)
        self.guard.charge(held)  # the raw blocks, held until this select is processed
        try:
            return self._feed(blocks)
        finally:
            self.guard.release(held)

    def _feed(self, blocks: list[StreamBlock]) -> bool:
        times = [_to_numpy(b.ts) for b in blocks]
        keys = np.sort(np.concatenate([-t if self.backward else t for t in times]))
        pos = 0
        while pos < len(keys):
            # a slice ends on a time boundary: equal times never straddle two slices
            stop = int(np.searchsorted(keys, keys[min(len(keys), pos + self.slice_rows) - 1], side="right"))
            got = self._slice(blocks, times, int(keys[pos]), int(keys[stop - 1]))
            self.slices.append(got)
            produced = 0
            for part in got:
                self.keys.append(-part.ts if self.backward else part.ts)
                produced += len(part.ts)
            self.total += produced
            if self.total >= self.params.limit and _threshold(self.keys, self.params) is not None:
                return True
            self.slice_rows = _next_rows(stop - pos, produced, self.params.limit - self.total)
            pos = stop
        return False

    def _slice(self, blocks: list[StreamBlock], times: list[np.ndarray], first: int, last: int) -> list[Processed]:
        """The pipeline over every block's rows with sort keys in [first, last]."""
        t_lo, t_hi = (-last, -first) if self.backward else (first, last)
        out = []
        for block, ts in zip(blocks, times):
            lo = int(np.searchsorted(ts, t_lo, side="left"))
            hi = int(np.searchsorted(ts, t_hi, side="right"))
            if hi <= lo:
                continue
            self.guard.check()
            part = block if (lo, hi) == (0, len(ts)) else _slice_block(block, lo, hi)
            batch = self.process(part)
            if len(batch):
                self.guard.charge(batch_bytes(batch))
                out.append(Processed(_to_numpy(batch.ts), batch))
        return out

    def answer_rows(self) -> list[Processed]:
        slices = self.slices[::-1] if self.backward else self.slices  # ascending: ties keep push order
        parts = [part for got in slices for part in got]
        threshold = _threshold(self.keys, self.params)
        return _cut(parts, threshold, self.backward, self.guard) if threshold is not None else parts


def _slice_block(block: StreamBlock, lo: int, hi: int) -> StreamBlock:
    n = hi - lo
    metadata = block.metadata.slice(lo, n) if block.metadata is not None else None
    return StreamBlock(block.labels, block.ts.slice(lo, n), block.line.slice(lo, n), metadata)


def _next_rows(rows: int, produced: int, need: int) -> int:
    """Rows for the next slice: what should yield the entries still needed, by this slice's yield."""
    if produced <= 0:
        return min(rows * 4, MAX_SLICE_ROWS)
    wanted = rows * (need / produced) * 1.25
    return int(min(max(wanted, MIN_SLICE_ROWS), rows * MAX_GROWTH, MAX_SLICE_ROWS))


def _first_width(params: QueryParams) -> int:
    """A query known to read little reads its range in one select: each window costs a select
    of its own (an index lookup and a round trip to every ingester), more than reading the rest
    at once; a small query over 15 minutes (60 lines, limit 100) read three windows."""
    if params.reads_little:
        return max(MIN_WINDOW_NS, params.end - params.start)
    return max(MIN_WINDOW_NS, -(-(params.end - params.start) // FIRST_WINDOW_PARTS))


def _next_width(width: int, got: int, need: int) -> int:
    """Grow toward the width that should hold what is still needed (by this window's density)."""
    if got <= 0:
        return width * 4
    wanted = width * (need / got) * 1.25
    return int(min(max(wanted, width), width * MAX_GROWTH))


def _threshold(keys: list[np.ndarray], params: QueryParams) -> int | None:
    """The worst sort key that can be in the answer, once the keys read settle it (else None)."""
    if not keys:
        return None
    ordered = np.sort(np.concatenate(keys))
    limit = params.limit
    if not params.interval:
        return int(ordered[limit - 1]) if len(ordered) >= limit else None
    # interval: an entry is kept when it is at least `interval` past the last kept one
    pos, picked, last = 0, 0, None
    while pos < len(ordered) and picked < limit:
        last = int(ordered[pos])
        picked += 1
        pos = int(np.searchsorted(ordered, last + params.interval, side="left"))
    return last if picked >= limit else None


def _cut(parts: list[Processed], threshold: int, backward: bool, guard: QueryGuard) -> list[Processed]:
    """Only the rows whose time is no worse than the threshold (ties stay: their order is the
    engine's business)."""
    out = []
    for part in parts:
        keep = part.ts >= -threshold if backward else part.ts <= threshold
        if keep.all():
            out.append(part)
            continue
        held = batch_bytes(part.batch)
        if keep.any():
            batch = part.batch.filter(pa.array(keep))
            guard.charge(batch_bytes(batch))
            out.append(Processed(part.ts[keep], batch))
        guard.release(held)
    return out


def batch_bytes(batch: LogBatch) -> int:
    """Bytes a processed batch holds: times, lines and per-entry label columns."""
    return array_bytes(batch.ts, batch.line, *batch.labels.values())


def _to_numpy(array: pa.Array) -> np.ndarray:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return np.asarray(pc.cast(array, pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)
