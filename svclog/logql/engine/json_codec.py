"""Query results in the reference's JSON shape (`data` of the query envelope)."""

from __future__ import annotations

import math
from functools import singledispatch
from typing import Any

import numpy as np
import orjson

from svclog.logql.engine.result import (
    EntryLabels,
    MatrixResult,
    ScalarResult,
    Stream,
    StreamsResult,
    VectorResult,
)

_NS_PER_MS = 1_000_000
VALUES_SLICE = 2000


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


def answer_to_json(result: object, encoded_values: bool) -> dict[str, Any]:
    """`result_to_json`; with `encoded_values` a streams answer's values come as JSON text already
    (EncodedValues), for an answer that goes straight into a JSON body."""
    if encoded_values and isinstance(result, StreamsResult):
        return {
            "resultType": "streams",
            "result": [{"stream": s.labels.to_dict(), "values": EncodedValues.of(s)} for s in result.streams],
        }
    return result_to_json(result)


class EncodedValues:
    """A stream's values as the JSON text `_values` would encode to: the array's inner text in
    slices of `VALUES_SLICE` entries (`parts`), and how many entries.

    Made a slice at a time, each slice's entry tuples freed before the next: kept, a
    100000-line answer's 100000 tuples drove the gateway's collector (collections of every
    generation, ~1.5 s of pauses in 30 s of four such queries at a time, each holding the GIL),
    and its encoding ran in the event loop. Made here, in the answer's merge, it runs on the
    merge's thread, lowered with it for a large query. serve/json_body.py writes the parts as
    they are."""

    __slots__ = ("parts", "count")

    def __init__(self, parts: list[bytes], count: int):
        self.parts = parts
        self.count = count

    def __len__(self) -> int:
        return self.count

    @classmethod
    def of(cls, stream: Stream) -> EncodedValues:
        parts = [
            orjson.dumps(_values(stream, at, at + VALUES_SLICE))[1:-1]
            for at in range(0, len(stream.lines), VALUES_SLICE)
        ]
        return cls(parts, len(stream.lines))

    def text(self) -> bytes:
        return b"[" + b",".join(self.parts) + b"]"


@result_to_json.register
def _streams(result: StreamsResult) -> dict[str, Any]:
    return {
        "resultType": "streams",
        "result": [{"stream": s.labels.to_dict(), "values": _values(s)} for s in result.streams],
    }


def _values(stream: Stream, start: int = 0, stop: int | None = None) -> list[tuple[Any, ...]]:
    """Entries [start, stop) as tuples (JSON encodes each as the array `[ts, line]`), built by
    `zip` and `map` in C: a 40000-line answer took a per-entry Python loop of the gateway's GIL
    before. Built `VALUES_SLICE` entries per call: one call over a 100000-line stream held that
    GIL ~40 ms, in which no other tenant's request moved."""
    stop = len(stream.lines) if stop is None else min(stop, len(stream.lines))
    rendered: dict[EntryLabels, dict[str, Any]] = {}
    if stream.entry_labels is not None:  # categorize-labels: a third element per entry, `{}` when it has neither kind
        for labels in stream.entry_labels[start:stop]:
            if labels not in rendered:
                rendered[labels] = _entry_labels(labels)
    out: list[tuple[Any, ...]] = []
    for at in range(start, stop, VALUES_SLICE):
        end = min(at + VALUES_SLICE, stop)
        times = map(str, stream.ts[at:end].tolist())
        if stream.entry_labels is None:
            out.extend(zip(times, stream.lines[at:end]))
        else:
            out.extend(zip(times, stream.lines[at:end], map(rendered.__getitem__, stream.entry_labels[at:end])))
    return out


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
