"""Query results in the reference's JSON shape (`data` of the query envelope)."""

from __future__ import annotations

import math
from functools import singledispatch
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql.engine.result import (
    EntryLabels,
    MatrixResult,
    ScalarResult,
    Series,
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


def format_values(values: np.ndarray) -> pa.StringArray:
    """`format_value` of every value, in Arrow's kernels: its cast writes the shortest digits that
    round-trip, as Go does, and positional except for the few it writes with an exponent, NaN or
    an infinity, which `format_value` writes. Per point in Python, a 100-series matrix of 720
    points held the gateway's GIL ~50 ms (np.format_float_positional)."""
    text = pc.cast(pa.array(values, pa.float64()), pa.string())
    odd = pc.match_substring_regex(text, "[eni]")  # 1e+16, nan, inf
    if not pc.any(odd).as_py():
        return text
    rows = np.flatnonzero(odd.to_numpy(zero_copy_only=False))
    fixed = pa.array([format_value(float(values[i])) for i in rows], pa.string())
    return pc.replace_with_mask(text, odd, fixed)


def sample_times(ts_ns: np.ndarray) -> list[int | float]:
    """`sample_time` of every timestamp, the loop in numpy."""
    ms = np.asarray(ts_ns, dtype=np.int64) // _NS_PER_MS
    whole = ms % 1000 == 0
    if whole.all():
        seconds: list[int | float] = (ms // 1000).tolist()
        return seconds
    times = (ms / 1000).astype(object)
    times[whole] = (ms[whole] // 1000).astype(object)
    mixed: list[int | float] = times.tolist()
    return mixed


def _sample_times_text(ts_ns: np.ndarray) -> pa.StringArray:
    """`sample_times` as orjson writes them: an integer, else the shortest float that round-trips
    (Arrow's cast writes the same digits; one written with an exponent goes through orjson)."""
    ms = np.asarray(ts_ns, dtype=np.int64) // _NS_PER_MS
    whole = ms % 1000 == 0
    if whole.all():
        return pc.cast(pa.array(ms // 1000), pa.string())
    text = pc.if_else(
        pa.array(whole),
        pc.cast(pa.array(ms // 1000), pa.string()),
        pc.cast(pa.array(ms / 1000), pa.string()),
    )
    odd = pc.match_substring_regex(text, "[eni]")
    if not pc.any(odd).as_py():
        return text
    rows = np.flatnonzero(odd.to_numpy(zero_copy_only=False))
    fixed = pa.array([orjson.dumps(sample_time(int(ts_ns[i]))).decode() for i in rows], pa.string())
    return pc.replace_with_mask(text, odd, fixed)


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
    if encoded_values and isinstance(result, MatrixResult):
        points = EncodedValues.of_series(result.series)
        return {
            "resultType": "matrix",
            "result": [{"metric": s.labels.to_dict(), "values": p} for s, p in zip(result.series, points)],
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

    @classmethod
    def of_series(cls, series: list[Series]) -> list[EncodedValues]:
        """Each matrix row's points (`[time, "value"]`), all rows' text made by one pass of
        Arrow's kernels, which let the GIL go: nothing per point in Python."""
        counts = [len(s.ts) for s in series]
        if not series or not sum(counts):
            return [cls([], 0) for _ in series]
        times = _sample_times_text(np.concatenate([s.ts for s in series]))
        values = format_values(np.concatenate([s.values for s in series]))
        points = pc.binary_join_element_wise("[", times, ',"', values, '"]', "")
        # one part per VALUES_SLICE points of a row: a long row is still written in pieces
        bounds = [0]
        for count in counts:
            row_start = bounds[-1]
            bounds.extend(
                min(at + VALUES_SLICE, row_start + count) for at in range(row_start, row_start + count, VALUES_SLICE)
            )
        slices = pa.ListArray.from_arrays(pa.array(bounds, pa.int32()), points)
        text = pc.binary_join(slices, ",").cast(pa.binary()).to_pylist()
        out, at = [], 0
        for count in counts:
            n = -(-count // VALUES_SLICE)
            out.append(cls(text[at : at + n], count))
            at += n
        return out

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
    if not result.series:
        return {"resultType": "matrix", "result": []}
    times = sample_times(np.concatenate([s.ts for s in result.series]))
    values = format_values(np.concatenate([s.values for s in result.series])).to_pylist()
    points = list(map(list, zip(times, values)))
    out, at = [], 0
    for s in result.series:
        out.append({"metric": s.labels.to_dict(), "values": points[at : at + len(s.ts)]})
        at += len(s.ts)
    return {"resultType": "matrix", "result": out}


@result_to_json.register
def _vector(result: VectorResult) -> dict[str, Any]:
    samples = result.samples
    times = sample_times(np.fromiter((s.ts for s in samples), np.int64, len(samples)))
    values = format_values(np.fromiter((s.value for s in samples), np.float64, len(samples))).to_pylist()
    return {
        "resultType": "vector",
        "result": [{"metric": s.labels.to_dict(), "value": [t, v]} for s, t, v in zip(samples, times, values)],
    }


@result_to_json.register
def _scalar(result: ScalarResult) -> dict[str, Any]:
    return {"resultType": "scalar", "result": [sample_time(result.ts), format_value(result.value)]}
