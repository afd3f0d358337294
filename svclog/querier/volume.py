"""Index statistics and log volumes over the streams matching a selector.

Volumes are exact byte counts of the entries in range (read through the same source
queries use, so ingesters and the store both count), grouped the way the reference
groups them: by the selector's label names, or `targetLabels`, or (aggregateBy=labels)
one series per label name with an empty value. Largest first, cut to `limit`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow.compute as pc

from svclog.logql.engine.json_codec import format_value
from svclog.logql.source import SelectRequest
from svclog.model import NS, Labels, LimitError, Matcher, ValidationError

MAX_STEPS = 11_001  # query_range's 11,000 points, both ends counted
MAX_SERIES_HIT = "the query hit the max number of series limit (limit: {} series)"


@dataclass(frozen=True)
class VolumeRequest:
    matchers: tuple[Matcher, ...]
    start: int
    end: int
    limit: int = 100
    target_labels: tuple[str, ...] = ()
    aggregate_by: str = "series"
    step: int | None = None  # None: one value (volume); else a matrix (volume_range)


def validate_aggregate_by(value: str | None) -> str:
    value = value or "series"
    if value not in ("series", "labels"):
        raise ValidationError(f"invalid aggregateBy {value!r}: must be series or labels")
    return value


def volume_fetch_limit(limit: int, max_series: int) -> int:
    """The series count to ask the querier for: one past `volume_max_series` shows it was hit."""
    return max(limit, max_series + 1)


def cap_volume_series(data: dict, limit: int, max_series: int) -> dict:
    """Enforce `volume_max_series` on an answer fetched with volume_fetch_limit, then cut to `limit`.

    As the reference, more matching series than the tenant's maximum is an error, not a cut."""
    result = data.get("result", [])
    if len(result) > max_series:
        raise LimitError(MAX_SERIES_HIT.format(max_series))
    return {**data, "result": result[:limit]}


def _group_keys(labels: Labels, req: VolumeRequest) -> list[Labels]:
    if req.aggregate_by == "labels":
        names = req.target_labels or tuple(labels.names())
        return [Labels([(name, "")]) for name in names if name in labels]
    names = req.target_labels or tuple(dict.fromkeys(m.name for m in req.matchers))
    return [labels.keep(names)]


def volumes(source, req: VolumeRequest) -> dict:
    """The `data` object of index/volume (vector) or index/volume_range (matrix)."""
    steps = None
    if req.step is not None:
        if req.step <= 0 or req.end < req.start:
            raise ValidationError("volume_range needs a positive step and end >= start")
        first = req.start - req.start % req.step
        if (req.end - first) // req.step + 1 > MAX_STEPS:  # checked before allocating the steps
            raise ValidationError(
                "exceeded maximum resolution of 11,000 points per timeseries. "
                "Try increasing the value of the step parameter"
            )
        steps = np.arange(first, req.end + 1, req.step, dtype=np.int64)
    totals: dict[Labels, float] = {}
    series: dict[Labels, np.ndarray] = {}
    for block in source.select_logs(SelectRequest(req.matchers, req.start, req.end)):
        sizes = pc.binary_length(block.line).to_numpy(zero_copy_only=False).astype(np.float64)
        for key in _group_keys(block.labels, req):
            totals[key] = totals.get(key, 0.0) + float(sizes.sum())
            if steps is not None:
                # an entry counts in the step bucket that starts at or before it
                index = np.searchsorted(steps, block.ts.to_numpy(), side="right") - 1
                buckets = np.bincount(np.clip(index, 0, len(steps) - 1), weights=sizes, minlength=len(steps))
                series[key] = series.get(key, 0) + buckets
    top = sorted(totals, key=lambda k: (-totals[k], k.items))[: req.limit]
    if steps is None:
        at = req.end / NS
        result = [{"metric": k.to_dict(), "value": [at, format_value(totals[k])]} for k in top]
        return {"resultType": "vector", "result": result}
    result = []
    for key in top:
        values = [
            [int(t // NS) if t % NS == 0 else t / NS, format_value(v)]
            for t, v in zip(steps.tolist(), series[key].tolist())
            if v > 0
        ]
        result.append({"metric": key.to_dict(), "values": values})
    return {"resultType": "matrix", "result": result}


def largest_replicas(rows: Iterable[tuple]) -> list[tuple]:
    """Per-stream stats rows (labels, entries, bytes, chunks) of every ingester: a stream's
    replicas count once, as the one holding the most entries."""
    best: dict[Labels, tuple] = {}
    for row in rows:
        if row[0] not in best or row[1] > best[row[0]][1]:
            best[row[0]] = row
    return list(best.values())


def index_stats(
    index, ingesters, tenants: list[str], matchers: tuple[Matcher, ...], start: int, end: int, guard=None
) -> dict:
    """Streams, chunks, entries and bytes: chunk refs from the index plus ingester memory.

    Chunk counts are per stored chunk (replicas that flushed the same stream each count),
    entries and bytes are those of whole overlapping chunks: an estimate, as the API allows.
    `guard` (a QueryGuard) stops it between tenants at its deadline or when cancelled.
    """
    streams: set = set()
    chunks = entries = size = 0
    for tenant in tenants:
        if guard is not None:
            guard.check()
        for labels, refs in index.chunk_refs(tenant, matchers, start, end).items():
            streams.add((tenant, labels))
            chunks += len(refs)
            entries += sum(r.entries for r in refs)
            size += sum(r.bytes for r in refs)
        if ingesters is not None:
            for labels, count, nbytes, nchunks in ingesters.stats(tenant, matchers, start, end):
                streams.add((tenant, labels))
                chunks += nchunks
                entries += count
                size += nbytes
    return {"streams": len(streams), "chunks": chunks, "entries": entries, "bytes": size}
