"""Query results in the reference's JSON shape (`data` of the query envelope)."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import singledispatch
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from svclog.cpu_priority import give_way
from svclog.logql.engine.json_strings import json_string_bodies
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
BATCH_ENTRIES = 10_000  # entries written per pass of the kernels (EncodedValues._written)


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
    return _rewrite_odd(text, lambda i: format_value(float(values[i])))


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
    return _rewrite_odd(text, lambda i: orjson.dumps(sample_time(int(ts_ns[i]))).decode())


def _rewrite_odd(text: pa.StringArray, write: Callable[[int], str]) -> pa.StringArray:
    """`text` with the rows Arrow's cast wrote with an exponent, NaN or an infinity (1e+16,
    nan, inf) written again by `write(row)`: few, and only those in Python."""
    odd = pc.match_substring_regex(text, "[eni]")
    if not pc.any(odd).as_py():
        return text
    rows = np.flatnonzero(odd.to_numpy(zero_copy_only=False))
    return pc.replace_with_mask(text, odd, pa.array([write(int(i)) for i in rows], pa.string()))


@singledispatch
def result_to_json(result: object) -> dict[str, Any]:
    """`{"resultType": ..., "result": [...]}` for a query result."""
    raise TypeError(f"not a query result: {type(result).__name__}")


def answer_to_json(result: object, encoded_values: bool) -> dict[str, Any]:
    """`result_to_json`; with `encoded_values` a streams answer's values come as JSON text already
    (EncodedValues), for an answer that goes straight into a JSON body."""
    if encoded_values and isinstance(result, StreamsResult):
        values = EncodedValues.of_streams(result.streams)
        return {
            "resultType": "streams",
            "result": [{"stream": s.labels.to_dict(), "values": v} for s, v in zip(result.streams, values)],
        }
    if encoded_values and isinstance(result, MatrixResult):
        points = EncodedValues.of_series(result.series)
        return {
            "resultType": "matrix",
            "result": [{"metric": s.labels.to_dict(), "values": p} for s, p in zip(result.series, points)],
        }
    return result_to_json(result)


class EncodedValues:
    """Values as the JSON text `_values` would encode to: the array's inner text in slices of
    `VALUES_SLICE` entries (`parts`), and how many entries. serve/json_body.py writes the parts
    as they are.

    Made by Arrow's kernels for all streams (or matrix rows) of an answer at once, in the
    answer's merge (lowered with it for a large query): kernels let the GIL go, where a
    100000-line answer's Python strings, tuples and orjson calls held the gateway's GIL ~45 ms
    and drove its collector; a light query's threads waited for both."""

    __slots__ = ("parts", "count")

    def __init__(self, parts: list[bytes], count: int):
        self.parts = parts
        self.count = count

    def __len__(self) -> int:
        return self.count

    @classmethod
    def of_streams(cls, streams: list[Stream]) -> list[EncodedValues]:
        """Each stream's entries (`["ns", "line"]`); with categorized labels, by orjson."""
        if any(s.entry_labels is not None for s in streams):
            return [cls._by_orjson(s) for s in streams]

        def entries(pieces: list[tuple[int, int, int]]) -> pa.Array:
            ts = np.concatenate([streams[i].ts[start:end] for i, start, end in pieces])
            lines = pa.concat_arrays([streams[i].lines.slice(start, end - start) for i, start, end in pieces])
            times = pc.cast(pa.array(ts, pa.int64()), pa.string())
            return pc.binary_join_element_wise('["', times, '","', json_string_bodies(lines), '"]', "")

        return cls._written([len(s.ts) for s in streams], entries)

    @classmethod
    def _by_orjson(cls, stream: Stream) -> EncodedValues:
        parts = [
            orjson.dumps(_values(stream, at, at + VALUES_SLICE))[1:-1] for at in range(0, len(stream.ts), VALUES_SLICE)
        ]
        return cls(parts, len(stream.ts))

    @classmethod
    def of_series(cls, series: list[Series]) -> list[EncodedValues]:
        """Each matrix row's points (`[time, "value"]`)."""

        def entries(pieces: list[tuple[int, int, int]]) -> pa.Array:
            times = _sample_times_text(np.concatenate([series[i].ts[start:end] for i, start, end in pieces]))
            values = format_values(np.concatenate([series[i].values[start:end] for i, start, end in pieces]))
            return pc.binary_join_element_wise("[", times, ',"', values, '"]', "")

        return cls._written([len(s.ts) for s in series], entries)

    @classmethod
    def _written(
        cls, counts: list[int], entries: Callable[[list[tuple[int, int, int]]], pa.Array]
    ) -> list[EncodedValues]:
        """Rows of `counts` entries each, a part per `VALUES_SLICE` entries of a row (a long row is
        still written in pieces). `entries(pieces)` makes the text of the (row, from, to) pieces'
        entries, one after the other; it is asked `BATCH_ENTRIES` entries at a time, pieces of
        several rows together, so the kernels' intermediate arrays stay small (made in one go,
        four 100000-line answers at once took the gateway's anonymous memory ~150 MB higher at
        its peak)."""
        out = [cls([], count) for count in counts]
        batch: list[tuple[int, int, int]] = []
        size = 0
        for row, count in enumerate(counts):
            for at in range(0, count, VALUES_SLICE):
                end = min(at + VALUES_SLICE, count)
                batch.append((row, at, end))
                size += end - at
                if size >= BATCH_ENTRIES:
                    give_way()  # a large answer in the gateway waits for small queries between batches
                    cls._append_parts(batch, entries(batch), out)
                    batch, size = [], 0
        if batch:
            cls._append_parts(batch, entries(batch), out)
        return out

    @staticmethod
    def _append_parts(pieces: list[tuple[int, int, int]], entries: pa.Array, out: list[EncodedValues]) -> None:
        """Each piece's entries joined by commas, appended to its row's parts."""
        bounds = np.cumsum([0] + [end - start for _, start, end in pieces], dtype=np.int32)
        parts = pc.binary_join(pa.ListArray.from_arrays(pa.array(bounds), entries), ",")
        for (row, _, _), text in zip(pieces, parts.cast(pa.binary()).to_pylist()):
            out[row].parts.append(text)

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
    stop = len(stream.ts) if stop is None else min(stop, len(stream.ts))
    rendered: dict[EntryLabels, dict[str, Any]] = {}
    if stream.entry_labels is not None:  # categorize-labels: a third element per entry, `{}` when it has neither kind
        for labels in stream.entry_labels[start:stop]:
            if labels not in rendered:
                rendered[labels] = _entry_labels(labels)
    out: list[tuple[Any, ...]] = []
    for at in range(start, stop, VALUES_SLICE):
        end = min(at + VALUES_SLICE, stop)
        times = map(str, stream.ts[at:end].tolist())
        lines = stream.lines.slice(at, end - at).to_pylist()
        if stream.entry_labels is None:
            out.extend(zip(times, lines))
        else:
            out.extend(zip(times, lines, map(rendered.__getitem__, stream.entry_labels[at:end])))
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
