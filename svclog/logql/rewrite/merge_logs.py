"""Merging log partials: a k-way merge by time (direction), then labels, then arrival,
cut at the limit and grouped back into streams, as the un-split query orders them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from svclog.cpu_priority import give_way
from svclog.logql.engine.params import QueryParams
from svclog.logql.engine.result import NO_ENTRY_LABELS, Stream, StreamsResult
from svclog.model import Labels


def merge_streams(partials: list[StreamsResult], params: QueryParams) -> StreamsResult:
    """The first `params.limit` entries of all partials in the query's direction.

    Partials are time pieces and shards of one query; each is already ordered and
    limited, so the overall first `limit` entries are among theirs.
    """
    streams = [s for part in partials for s in part.streams if len(s.ts)]
    if not streams or params.limit == 0:
        return StreamsResult([])
    give_way()  # between the steps of a large merge in the gateway, small queries go first
    keys: list[Labels] = sorted({s.labels for s in streams})
    rank = {lb: i for i, lb in enumerate(keys)}
    ts = np.concatenate([np.asarray(s.ts, dtype=np.int64) for s in streams])
    sid = np.concatenate([np.full(len(s.ts), rank[s.labels], dtype=np.int64) for s in streams])
    lines = pa.concat_arrays([s.lines for s in streams])
    # categorize-labels partials carry each entry's other labels; merge them alongside the lines
    categorized = any(s.entry_labels is not None for s in streams)
    entry_labels = (
        [e for s in streams for e in (s.entry_labels or [NO_ENTRY_LABELS] * len(s.ts))] if categorized else None
    )
    give_way()
    arrival = np.arange(len(ts))
    newest_first = params.direction == "backward"
    order = np.lexsort((arrival, sid, -ts if newest_first else ts))[: params.limit]
    if len(order) == 0:
        return StreamsResult([])
    # one stable sort groups the picked rows by series, in answer order within each: linear in
    # the rows however many series (a parser can make every entry its own)
    picked = sid[order]
    by_series = np.argsort(picked, kind="stable")
    groups, rows_all = picked[by_series], order[by_series]
    give_way()
    picked_lines = lines.take(pa.array(rows_all))  # one kernel for all series, the GIL let go
    give_way()
    bounds = np.flatnonzero(np.diff(groups)) + 1
    out = []
    for lo, hi in zip([0, *bounds.tolist()], [*bounds.tolist(), len(rows_all)]):
        rows = rows_all[lo:hi]
        out.append(
            Stream(
                keys[int(groups[lo])],
                ts[rows],
                picked_lines.slice(lo, hi - lo),
                list(map(entry_labels.__getitem__, rows.tolist())) if entry_labels is not None else None,
            )
        )
    return StreamsResult(out)
