"""The engine's view of the pipeline stages package.

The stages package (`svclog.logql.stages`) owns block -> batch conversion, the
pipeline, label filters and grouping of entries into series. This module imports
those names and supplies small private fallbacks for the ones that are not
there (yet), so the engine runs on stream selectors without any stage.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql import stages as _stages
from svclog.logql.source import StreamBlock
from svclog.logql.stages.batch import LogBatch
from svclog.model import Labels, ValidationError

Indices = np.ndarray


def _fallback_block_to_batch(block: StreamBlock) -> LogBatch:
    columns: dict[str, pa.Array] = {}
    if block.metadata is not None and len(block) and block.metadata.null_count < len(block):
        columns = {(f"{k}_extracted" if k in block.labels else k): v
                   for k, v in _metadata_columns(block.metadata).items()}
    return LogBatch(
        stream=block.labels,
        ts=block.ts,
        line=block.line,
        labels=columns,
        metadata_names=frozenset(columns),
    )


def _metadata_columns(metadata: pa.Array) -> dict[str, pa.Array]:
    """One nullable string column per structured-metadata key (vectorised)."""
    metadata = pa.concat_arrays([metadata])  # compact: .keys/.items ignore a slice's offset
    metadata = pc.fill_null(metadata, pa.scalar([], metadata.type)) if metadata.null_count else metadata
    offsets = metadata.offsets.to_numpy()
    counts = np.diff(offsets)
    rows = np.repeat(np.arange(len(metadata)), counts)
    keys = metadata.keys.to_numpy(zero_copy_only=False)
    values = metadata.items
    out: dict[str, pa.Array] = {}
    for key in np.unique(keys) if len(keys) else ():
        hit = np.flatnonzero(keys == key)
        column = np.full(len(metadata), -1, dtype=np.int64)
        column[rows[hit]] = hit
        taken = values.take(pa.array(np.where(column >= 0, column, 0)))
        out[str(key)] = pc.if_else(pa.array(column >= 0), taken, pa.nulls(len(metadata), pa.string()))
    return out


def _fallback_group_by_labels(batch: LogBatch) -> list[tuple[Labels, Indices]]:
    """Entries grouped by their full label set (stream labels + non-null per-entry labels)."""
    n = len(batch)
    if n == 0:
        return []
    names = sorted(batch.labels)
    if not names:
        return [(batch.stream, np.arange(n))]
    codes = []
    dictionaries = []
    for name in names:
        encoded = pc.dictionary_encode(batch.labels[name]).combine_chunks() if isinstance(
            batch.labels[name], pa.ChunkedArray) else pc.dictionary_encode(batch.labels[name])
        codes.append(pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64))
        dictionaries.append(encoded.dictionary.to_pylist())
    stacked = np.stack(codes, axis=1)
    uniques, inverse = np.unique(stacked, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(uniques) + 1))
    base = batch.stream.to_dict()
    groups = []
    for g, combo in enumerate(uniques):
        labels = dict(base)
        for name, code, dictionary in zip(names, combo, dictionaries):
            if code >= 0:
                labels[name] = dictionary[code]
        groups.append((Labels.from_dict(labels), order[bounds[g]:bounds[g + 1]]))
    return groups


class _EmptyPipeline:
    def process(self, batch: LogBatch) -> LogBatch:
        return batch


def _fallback_build_pipeline(stages: Sequence[Any]) -> Any:
    if stages:
        raise ValidationError("pipeline stages are not available in this build")
    return _EmptyPipeline()


def _fallback_label_filter_mask(expr: Any, batch: LogBatch) -> pa.Array:
    raise ValidationError("label filters are not available in this build")


def _pick(name: str, fallback: Callable) -> Callable:
    return getattr(_stages, name, None) or fallback


def block_to_batch(block: StreamBlock) -> LogBatch:
    if block.metadata is not None:
        # The stages version aborts the process on map arrays with pyarrow 26
        # (pc.list_parent_indices); use the local conversion until that is fixed.
        return _fallback_block_to_batch(block)
    return _pick("block_to_batch", _fallback_block_to_batch)(block)


def build_pipeline(stages: Sequence[Any], parser_labels: frozenset[str] | None = None) -> Any:
    builder = _pick("build_pipeline", None)
    if builder is None:
        return _fallback_build_pipeline(stages)
    return builder(stages, parser_labels=parser_labels)


def group_by_labels(batch: LogBatch) -> list[tuple[Labels, Indices]]:
    groups = _pick("group_by_labels", _fallback_group_by_labels)(batch)
    return [(labels, np.asarray(idx, dtype=np.int64)) for labels, idx in groups]


def label_filter_mask(expr: Any, batch: LogBatch) -> pa.Array:
    return _pick("label_filter_mask", _fallback_label_filter_mask)(expr, batch)
