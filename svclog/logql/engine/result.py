"""What `evaluate` returns: the four LogQL result types (plain data, no JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

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

    def __reduce__(self) -> tuple[Any, ...]:
        """A long stream is pickled as one string and its lines' lengths. Unpickling 50000 lines
        one string object each is ~7 ms in one C call, holding the GIL of the gateway that
        fetches a large answer; cut out of the one string by a Python loop, the lines let the
        GIL go to other requests' threads between them."""
        if len(self.lines) < PACKED_LINES:
            return (Stream, (self.labels, self.ts, self.lines, self.entry_labels))
        lengths = np.fromiter(map(len, self.lines), np.int64, len(self.lines))
        return (_unpacked, (self.labels, self.ts, "".join(self.lines), lengths, self.entry_labels))


# streams of at least this many lines are pickled packed (Stream.__reduce__)
PACKED_LINES = 1000


def _unpacked(
    labels: Labels, ts: np.ndarray, text: str, lengths: np.ndarray, entry_labels: list[EntryLabels] | None
) -> Stream:
    ends = np.cumsum(lengths).tolist()
    lines = [text[start:end] for start, end in zip([0, *ends[:-1]], ends)]
    return Stream(labels, ts, lines, entry_labels)


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
