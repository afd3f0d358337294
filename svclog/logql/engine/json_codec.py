"""Query results in the reference's JSON shape (`data` of the query envelope)."""

from __future__ import annotations

import math
from functools import singledispatch
from typing import Any

import numpy as np

from svclog.logql.engine.result import (
    EntryLabels,
    MatrixResult,
    ScalarResult,
    Stream,
    StreamsResult,
    VectorResult,
)

_NS_PER_MS = 1_000_000


def format_value(value: float) -> str:
    """Go's strconv.FormatFloat(v, 'f', -1, 64), with Prometheus' NaN/+Inf/-Inf spellings."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return np.format_float_positional(float(value), trim="-")


def sample_time(ts_ns: int) -> int | float:
    """Sample timestamps are seconds with millisecond precision; whole seconds print as integers."""
    ms = int(ts_ns) // _NS_PER_MS
    seconds, rest = divmod(ms, 1000)
    return seconds if rest == 0 else ms / 1000


@singledispatch
def result_to_json(result: object) -> dict[str, Any]:
    """`{"resultType": ..., "result": [...]}` for a query result."""
    raise TypeError(f"not a query result: {type(result).__name__}")


@result_to_json.register
def _streams(result: StreamsResult) -> dict[str, Any]:
    return {
        "resultType": "streams",
        "result": [{"stream": s.labels.to_dict(), "values": _values(s)} for s in result.streams],
    }


def _values(stream: Stream) -> list[tuple[Any, ...]]:
    """Each entry as a tuple (JSON encodes it as the array `[ts, line]`), built by `zip` and `map`
    in C: a 40000-line answer took a per-entry Python loop of the gateway's GIL before."""
    times = map(str, stream.ts.tolist())
    if stream.entry_labels is None:
        return list(zip(times, stream.lines))
    # categorize-labels: a third element per entry, `{}` when it has neither kind
    rendered: dict[EntryLabels, dict[str, Any]] = {}
    for labels in stream.entry_labels:
        if labels not in rendered:
            rendered[labels] = _entry_labels(labels)
    return list(zip(times, stream.lines, map(rendered.__getitem__, stream.entry_labels)))


def _entry_labels(labels: EntryLabels) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if len(labels.structured_metadata):
        out["structuredMetadata"] = labels.structured_metadata.to_dict()
    if len(labels.parsed):
        out["parsed"] = labels.parsed.to_dict()
    return out


@result_to_json.register
def _matrix(result: MatrixResult) -> dict[str, Any]:
    return {
        "resultType": "matrix",
        "result": [
            {
                "metric": s.labels.to_dict(),
                "values": [[sample_time(t), format_value(v)] for t, v in zip(s.ts.tolist(), s.values.tolist())],
            }
            for s in result.series
        ],
    }


@result_to_json.register
def _vector(result: VectorResult) -> dict[str, Any]:
    return {
        "resultType": "vector",
        "result": [
            {"metric": s.labels.to_dict(), "value": [sample_time(s.ts), format_value(s.value)]} for s in result.samples
        ],
    }


@result_to_json.register
def _scalar(result: ScalarResult) -> dict[str, Any]:
    return {"resultType": "scalar", "result": [sample_time(result.ts), format_value(result.value)]}
