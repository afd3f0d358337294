"""Log queries: select, run the pipeline, then order, limit and thin (interval) the entries.

The range is read in time windows in the query's direction until `limit` entries are certain
(log_windows.py), so `limit` bounds the work; rows are grouped into series with one sort.

Entries of all series are merged into one time order (direction), ties broken
by series labels, then push order (reversed for backward), the first `limit` are kept and grouped back into streams.

With `categorize_labels` a series is keyed by its labels split into categories
(stream, structured metadata, parsed); the result groups entries by stream labels
only and each entry carries the other two, as the reference's categorize-labels
encoding reports them.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from svclog.logql import ast
from svclog.logql.engine import stages_bridge as sb
from svclog.logql.engine.guard import QueryGuard
from svclog.logql.engine.log_windows import read_in_windows
from svclog.logql.engine.params import QueryParams
from svclog.logql.engine.result import EntryLabels, Stream, StreamsResult
from svclog.logql.engine.samples import leading_line_filters, remaining_stages
from svclog.logql.source import LogSource, SelectRequest
from svclog.logql.stages.grouping import CategorizedLabels
from svclog.model import Labels


def evaluate_logs(
    query: ast.LogQuery, params: QueryParams, source: LogSource, guard: QueryGuard | None = None
) -> StreamsResult:
    guard = guard if guard is not None else QueryGuard()
    request = SelectRequest(
        matchers=query.selector.matchers, start=params.start, end=params.end, line_filters=leading_line_filters(query)
    )
    pipeline = sb.build_pipeline(remaining_stages(query, source))
    if params.limit == 0:
        return StreamsResult([])
    group = sb.group_by_categories if params.categorize_labels else sb.group_by_labels
    parts = read_in_windows(request, params, source, lambda block: pipeline.process(sb.block_to_batch(block)), guard)
    # each row gets the id of its series; keys are only built for the rows that can be answered
    series: dict[Hashable, int] = {}
    ts_parts, line_parts, id_parts = [], [], []
    for part in parts:
        guard.check()
        ids = np.empty(len(part.ts), dtype=np.int64)
        for key, idx in group(part.batch):
            ids[idx] = series.setdefault(key, len(series))
        ts_parts.append(part.ts)
        line_parts.append(part.batch.line)
        id_parts.append(ids)
    if not series:
        return StreamsResult([])
    lines = pa.chunked_array(line_parts, pa.string())
    return _order_and_limit(list(series), np.concatenate(ts_parts), np.concatenate(id_parts), lines, params)


def _order_and_limit(
    keys: list[Any], ts: np.ndarray, series_of_row: np.ndarray, lines: pa.ChunkedArray, params: QueryParams
) -> StreamsResult:
    ranked = sorted(range(len(keys)), key=keys.__getitem__)  # Labels, or CategorizedLabels (stream first)
    rank = np.empty(len(keys), dtype=np.int64)
    rank[np.asarray(ranked, dtype=np.int64)] = np.arange(len(keys), dtype=np.int64)
    keys = [keys[i] for i in ranked]
    sid = rank[series_of_row]
    backward = params.direction == "backward"
    # equal timestamps: series (label) order, then a series' rows in push order (its blocks hold
    # them so), reversed for backward as the reference reads its chunks backward
    if backward:
        rev = np.arange(len(ts) - 1, -1, -1)
        order = rev[np.lexsort((sid[rev], -ts[rev]))]
    else:
        order = np.lexsort((sid, ts))
    if params.interval:
        order = _thin(ts, order, params.interval, backward, params.limit)
    else:
        order = order[: params.limit]
    if params.categorize_labels:
        return _categorized_streams(keys, ts, sid, lines, order)
    return StreamsResult([Stream(keys[s], ts[rows], picked) for s, rows, picked in _runs(sid[order], order, lines)])


def _categorized_streams(
    keys: list[CategorizedLabels], ts: np.ndarray, sid: np.ndarray, lines: pa.ChunkedArray, order: np.ndarray
) -> StreamsResult:
    """The picked entries grouped by stream labels alone, each with its other labels."""
    stream_ids: dict[Labels, int] = {}
    stream_of_series = np.array([stream_ids.setdefault(key.stream, len(stream_ids)) for key in keys], dtype=np.int64)
    streams = list(stream_ids)
    entry_labels = [EntryLabels(key.structured_metadata, key.parsed) for key in keys]
    return StreamsResult(
        [
            Stream(streams[s], ts[rows], picked, [entry_labels[i] for i in sid[rows].tolist()])
            for s, rows, picked in _runs(stream_of_series[sid[order]], order, lines)
        ]
    )


def _runs(
    group_of_picked: np.ndarray, order: np.ndarray, lines: pa.ChunkedArray
) -> Iterator[tuple[int, np.ndarray, pa.Array]]:
    """(group, rows, their lines) per group in group order, rows in answer order: one stable
    sort and one take for all groups, so the cost is linear in the rows whatever the groups."""
    if len(order) == 0:
        return
    by_group = np.argsort(group_of_picked, kind="stable")
    groups, rows = group_of_picked[by_group], order[by_group]
    texts = lines.take(pa.array(rows)).combine_chunks()
    bounds = np.flatnonzero(np.diff(groups)) + 1
    starts = [0, *bounds.tolist()]
    ends = [*bounds.tolist(), len(rows)]
    for lo, hi in zip(starts, ends):
        yield int(groups[lo]), rows[lo:hi], texts.slice(lo, hi - lo)


def _thin(ts: np.ndarray, order: np.ndarray, interval: int, backward: bool, limit: int) -> np.ndarray:
    """The reference's interval: keep an entry when it is at least `interval` past the last kept one."""
    ordered_ts = ts[order]
    keys = -ordered_ts if backward else ordered_ts
    picked: list[int] = []
    pos = 0
    while pos < len(order) and len(picked) < limit:
        picked.append(pos)
        pos = int(np.searchsorted(keys, keys[pos] + interval, side="left"))
    return order[np.asarray(picked, dtype=np.int64)]
