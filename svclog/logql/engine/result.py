"""What `evaluate` returns: the four LogQL result types (plain data, no JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from svclog.model import Labels


class EntryLabels(NamedTuple):
    """An entry's labels beside its stream's, for the categorize-labels encoding."""

    structured_metadata: Labels
    parsed: Labels


NO_ENTRY_LABELS = EntryLabels(Labels(), Labels())


@dataclass(frozen=True)
class Stream:
    """One series of log entries, ordered as the query's direction asks.

    `lines` is an Arrow string array: a large answer travels from the querier to the gateway as
    its buffers (no Python string per line to pickle and unpickle) and is merged and written as
    JSON by Arrow's kernels (json_codec.EncodedValues), which let the gateway's GIL go.

    With categorized labels `labels` are the stream labels only and `entry_labels`
    holds each entry's structured metadata and parsed labels; otherwise it is None.
    """

    labels: Labels
    ts: np.ndarray  # int64 ns
    lines: pa.Array  # string
    entry_labels: list[EntryLabels] | None = None

    @classmethod
    def of(cls, labels: Labels, ts: Any, lines: list[str], entry_labels: list[EntryLabels] | None = None) -> Stream:
        """A stream from plain lists (tests, hand-made answers)."""
        return cls(labels, np.asarray(ts, dtype=np.int64), pa.array(lines, pa.string()), entry_labels)

    def texts(self) -> list[str]:
        texts: list[str] = self.lines.to_pylist()
        return texts


@dataclass(frozen=True)
class StreamsResult:
    streams: list[Stream] = field(default_factory=list)

    @property
    def result_type(self) -> str:
        return "streams"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with every stream's lines in one array. A stream's lines are mostly a slice of
        the query's one taken array, and Arrow pickles a slice with its parent's whole buffers:
        each stream of a 100000-line answer would carry all of them."""
        if not self.streams:
            return (StreamsResult, ([],))
        lines = pa.concat_arrays([s.lines for s in self.streams])
        heads = [(s.labels, s.ts, s.entry_labels) for s in self.streams]
        return (_streams_from, (heads, lines))


def _streams_from(heads: list[tuple[Labels, np.ndarray, list[EntryLabels] | None]], lines: pa.Array) -> StreamsResult:
    streams, at = [], 0
    for labels, ts, entry_labels in heads:
        streams.append(Stream(labels, ts, lines.slice(at, len(ts)), entry_labels))
        at += len(ts)
    return StreamsResult(streams)


@dataclass(frozen=True)
class Series:
    """One matrix row: samples at evaluation times, oldest first."""

    labels: Labels
    ts: np.ndarray  # int64 ns
    values: np.ndarray  # float64


@dataclass(frozen=True)
class MatrixResult:
    series: list[Series] = field(default_factory=list)

    @property
    def result_type(self) -> str:
        return "matrix"


@dataclass(frozen=True)
class Sample:
    labels: Labels
    ts: int  # ns
    value: float


@dataclass(frozen=True)
class VectorResult:
    """An instant vector; `samples` is in the order the query defines (sort, sort_desc) or by labels."""

    samples: list[Sample] = field(default_factory=list)

    @property
    def result_type(self) -> str:
        return "vector"


@dataclass(frozen=True)
class ScalarResult:
    ts: int  # ns
    value: float

    @property
    def result_type(self) -> str:
        return "scalar"


QueryResult = StreamsResult | MatrixResult | VectorResult | ScalarResult
