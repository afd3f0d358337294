"""Reading samples for a range aggregation: select, run the pipeline, unwrap, group into series.

Every series comes out as timestamps (int64 ns, ascending) and float values;
for a log range without unwrap the value of an entry is its size in bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql import ast
from svclog.logql.engine import block_workers
from svclog.logql.engine import stages_bridge as sb
from svclog.logql.engine.grouping import group_labels
from svclog.logql.engine.guard import QueryGuard
from svclog.logql.engine.hints import parser_labels
from svclog.logql.engine.log_windows import batch_bytes
from svclog.logql.engine.unwrap import unwrap_values
from svclog.logql.source import LogSource, SelectRequest, StreamBlock
from svclog.logql.stages.batch import LogBatch
from svclog.model import Labels, LimitError

R = TypeVar("R")

ERROR_LABEL = "__error__"
ERROR_DETAILS_LABEL = "__error_details__"


@dataclass
class SampleSeries:
    labels: Labels
    ts: np.ndarray  # int64 ns ascending
    values: np.ndarray  # float64


def leading_line_filters(query: ast.LogQuery) -> tuple[ast.LineFilter, ...]:
    out = []
    for stage in query.stages:
        if not isinstance(stage, ast.LineFilter):
            break
        out.append(stage)
    return tuple(out)


def remaining_stages(query: ast.LogQuery, source: LogSource) -> tuple[ast.Stage, ...]:
    """The pipeline the engine still has to run: a source that declares `applies_line_filters`
    has already dropped what the leading line filters would (running them twice costs a scan)."""
    # validated here, whoever runs them: a bad regex is a 400, reported for the whole query's runs
    sb.check_stages(query.stages)
    if getattr(source, "applies_line_filters", False):
        return query.stages[len(leading_line_filters(query)) :]
    return query.stages


@dataclass(frozen=True)
class SeriesCap:
    """The answer's series are the groups of these samples (a top-level range aggregation), so
    more than `limit` distinct groups fail the query at once instead of after the whole scan."""

    limit: int
    grouping: ast.Grouping | None

    def key(self, labels: Labels) -> Labels:
        return labels if self.grouping is None else group_labels(labels, self.grouping)


def series_limit_error(limit: int) -> LimitError:
    """The reference's words (v3.7) for a query answering more series than its limit."""
    return LimitError(
        f"maximum number of series ({limit}) reached for a single query; consider reducing query cardinality by "
        "adding more specific stream selectors, reducing the time range, or aggregating results with functions "
        "like sum(), count() or topk()"
    )


SERIES_OVERHEAD_BYTES = 256  # a series' Labels, dict slot and arrays list, beside its samples


def select_samples(
    log_range: ast.LogRange,
    source: LogSource,
    start: int,
    end: int,
    keep: frozenset[str] | None = None,
    guard: QueryGuard | None = None,
    cap: SeriesCap | None = None,
    required: frozenset[str] | None = None,
    values_read: bool = True,
) -> list[SampleSeries]:
    """Samples of every series of `log_range` with timestamps in [start, end).

    `keep` (hints.series_label_hints): the only labels the caller's answer depends on; series
    then carry just those (plus errors), and the parser extracts only what is kept or read.
    `guard` is checked per block and charged with what the samples hold; `cap` see SeriesCap.
    `required` (hints.required_labels): the labels the reference's parsers are told are required.
    Without `values_read` (an op that only counts entries: COUNTING_OPS) every value is 0, and a
    pipeline that reads no line asks the source for none."""
    guard = guard if guard is not None else QueryGuard()
    capped: set[Labels] = set()
    query = log_range.query
    values_read = values_read or log_range.unwrap is not None
    request = SelectRequest(
        matchers=query.selector.matchers,
        start=start,
        end=end,
        line_filters=leading_line_filters(query),
        lines_unread=not values_read and all(isinstance(stage, _LINE_FREE_STAGES) for stage in query.stages),
    )
    extract = parser_labels(log_range, keep) if keep is not None else None
    stages = remaining_stages(query, source)
    pipeline = sb.build_pipeline(stages, parser_labels=extract, required=required)
    run_blocks = block_workers.in_order if worth_helpers(stages, log_range.unwrap) else _inline
    parts: dict[Labels, list[tuple[np.ndarray, np.ndarray]]] = {}

    def sampled(block: StreamBlock) -> tuple[LogBatch, np.ndarray, int] | None:
        # the block's own work (no shared state): may run on a helper thread, see block_workers
        batch = pipeline.process(sb.block_to_batch(block))
        if len(batch) == 0:
            return None
        transient = batch_bytes(batch)  # the parsed columns, held while this block is grouped
        if log_range.unwrap is not None:
            values, batch = unwrap_values(batch, log_range.unwrap)
        elif values_read:
            values = _line_bytes(batch.line)
        else:
            values = np.zeros(len(batch))
        if keep is not None:
            _project(batch, keep)
        return batch, values, transient

    for done in run_blocks(_checked(source.select_logs(request), guard), sampled):
        if done is None:
            continue
        batch, values, transient = done
        guard.charge(transient)
        ts = _int64(batch.ts)
        kept = 0
        for labels, idx in sb.group_by_labels(batch):
            if len(idx):
                chunks = parts.get(labels)
                if chunks is None:
                    chunks = parts[labels] = []
                    kept += SERIES_OVERHEAD_BYTES + len(str(labels))
                    if cap is not None:
                        capped.add(cap.key(labels))
                        if len(capped) > cap.limit:
                            raise series_limit_error(cap.limit)
                chunks.append((ts[idx], values[idx]))
                kept += 16 * len(idx)  # int64 time and float64 value per sample
        guard.charge(kept)
        guard.release(transient)
    return [_merge(labels, chunks) for labels, chunks in parts.items()]


# Log-range ops whose samples are counted, never summed: an entry's value (its line's size) is unread
COUNTING_OPS = frozenset({"count_over_time", "rate", "absent_over_time"})
# Stages that read labels only: a pipeline of these alone never looks at a line
_LINE_FREE_STAGES = (ast.LabelFilter, ast.Drop, ast.Keep)


# Parsers: a block's work is then long kernels that release the GIL (RE2, Arrow, numpy), worth a
# helper thread. A block's work without them (count_over_time, bytes_over_time, rate
# after a pushed-down line filter) is a few short calls: handing it over cost more than it saved
# (count_by_level over 200k flushed lines in process: +25-35% CPU and slower, with or without load)
_HEAVY_STAGES = (ast.JsonParser, ast.LogfmtParser, ast.RegexpParser, ast.PatternParser, ast.UnpackParser)


def worth_helpers(stages: Iterable[ast.Stage], unwrap: ast.Unwrap | None) -> bool:
    """Does a block's own work (pipeline, unwrap) pay for running on a helper thread?"""
    return unwrap is not None or any(isinstance(stage, _HEAVY_STAGES) for stage in stages)


def _inline(items: Iterable[StreamBlock], work: Callable[[StreamBlock], R]) -> Iterator[R]:
    for item in items:
        yield work(item)


def _checked(blocks: Iterable[StreamBlock], guard: QueryGuard) -> Iterator[StreamBlock]:
    for block in blocks:
        guard.check()
        yield block


def _project(batch: LogBatch, keep: frozenset[str]) -> None:
    """Drop the per-entry labels outside `keep` (the stream's own stay: series stay per stream,
    as the reference's are, so float sums add in the same grouping), unless an entry failed:
    the error report names the series' labels, so a batch with errors keeps them all."""
    error = batch.labels.get(ERROR_LABEL)
    if error is not None and error.null_count < len(error):
        return
    for name in [n for n in batch.labels if n not in keep]:
        del batch.labels[name]
    # the reference's grouping leaves out a label a stage deleted, even if set again later
    for name in keep & batch.deleted.keys():
        batch.set_label(name, pc.if_else(batch.deleted[name], pa.scalar(None, pa.string()), batch.label(name)))


def _merge(labels: Labels, chunks: list[tuple[np.ndarray, np.ndarray]]) -> SampleSeries:
    if len(chunks) == 1:
        return SampleSeries(labels, *chunks[0])
    ts = np.concatenate([c[0] for c in chunks])
    values = np.concatenate([c[1] for c in chunks])
    order = np.argsort(ts, kind="stable")
    return SampleSeries(labels, ts[order], values[order])


def _int64(array: pa.Array) -> np.ndarray:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return np.asarray(array.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)


def _line_bytes(line: pa.Array) -> np.ndarray:
    return np.asarray(pc.binary_length(line).to_numpy(zero_copy_only=False), dtype=np.float64)
