"""What `evaluate` returns: the four LogQL result types (plain data, no JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from svclog.model import Labels


class EntryLabels(NamedTuple):
    """An entry's labels beside its stream's, for the categorize-labels encoding."""

    structured_metadata: Labels
    parsed: Labels


NO_ENTRY_LABELS = EntryLabels(Labels(), Labels())


@dataclass(frozen=True)
class Stream:
    """One series of log entries, ordered as the query's direction asks.

    With categorized labels `labels` are the stream labels only and `entry_labels`
    holds each entry's structured metadata and parsed labels; otherwise it is None.
    """

    labels: Labels
    ts: np.ndarray  # int64 ns
    lines: list[str]
    entry_labels: list[EntryLabels] | None = None


@dataclass(frozen=True)
class StreamsResult:
    streams: list[Stream] = field(default_factory=list)

    @property
    def result_type(self) -> str:
        return "streams"


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
