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
from svclog.logql.source import LogSource, SelectRequest, StreamBlock
from svclog.logql.stages.batch import LogBatch

FIRST_WINDOW_PARTS = 32  # the first window is 1/32 of the range ...
MIN_WINDOW_NS = 1_000_000_000  # ... but at least a second
MAX_GROWTH = 8  # a window is at most 8x the one before


@dataclass
class Processed:
    """One block's pipeline output: its timestamps as numpy and the batch."""

    ts: np.ndarray
    batch: LogBatch


def read_in_windows(request: SelectRequest, params: QueryParams, source: LogSource,
                    process: Callable[[StreamBlock], LogBatch], guard: QueryGuard) -> list[Processed]:
    """Pipeline outputs of the blocks that can hold answer entries, in ascending time order
    (window by window, blocks in the source's order within a window), cut to those entries."""
    backward = params.direction == "backward"
    windows: list[list[Processed]] = []
    keys: list[np.ndarray] = []  # per processed block: its times as sort keys (ascending = better)
    total = 0
    width = max(MIN_WINDOW_NS, -(-(params.end - params.start) // FIRST_WINDOW_PARTS))
    lo, hi = params.start, params.end  # what is still unread
    while lo < hi:
        start, end = (max(lo, hi - width), hi) if backward else (lo, min(hi, lo + width))
        got = _read_window(replace(request, start=start, end=end), source, process, guard)
        windows.append(got)
        for part in got:
            keys.append(-part.ts if backward else part.ts)
            total += len(part.ts)
        if backward:
            hi = start
        else:
            lo = end
        if total >= params.limit and _threshold(keys, params) is not None:
            break
        width = _next_width(width, sum(len(p.ts) for p in got), params.limit - total)
    if backward:
        windows.reverse()  # ascending time: equal times of a series keep their push order
    parts = [part for window in windows for part in window]
    threshold = _threshold(keys, params)
    return _cut(parts, threshold, backward, guard) if threshold is not None else parts


def _read_window(request: SelectRequest, source: LogSource, process: Callable[[StreamBlock], LogBatch],
                 guard: QueryGuard) -> list[Processed]:
    out = []
    for block in source.select_logs(request):
        guard.check()
        batch = process(block)
        if len(batch):
            guard.charge(batch_bytes(batch))
            out.append(Processed(_to_numpy(batch.ts), batch))
    return out


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
