"""What the engine reads: a two-method protocol implemented by queriers (and by tests).

A source yields one `StreamBlock` per matching stream: entries sorted by timestamp
ascending, de-duplicated, restricted to [start, end). Where the data lives (head
blocks, chunks in the object store, several tenants) is the source's business.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import pyarrow as pa

from svclog.model import Labels, Matcher

if TYPE_CHECKING:
    from svclog.logql import ast

# Arrow type of per-entry structured metadata.
METADATA_TYPE = pa.map_(pa.string(), pa.string())


@dataclass(frozen=True)
class StreamBlock:
    labels: Labels
    ts: pa.Array  # int64 nanoseconds, ascending
    line: pa.Array  # string (or large_string)
    metadata: pa.Array | None = None  # METADATA_TYPE per entry, None when no entry has any

    def __len__(self) -> int:
        return len(self.ts)


@dataclass(frozen=True)
class SelectRequest:
    matchers: tuple[Matcher, ...]
    start: int  # ns, inclusive
    end: int  # ns, exclusive
    # Hints a source may use to read less; the engine re-applies them, so ignoring them is correct.
    line_filters: tuple[ast.LineFilter, ...] = ()  # leading ast.LineFilter stages of the pipeline
    shard: tuple[int, int] | None = None  # (index, count): only streams with fingerprint % count == index
    # the caller reads no line (only timestamps, labels and metadata): a source may hand out
    # empty lines instead of decoding them
    lines_unread: bool = False


@dataclass(frozen=True)
class IngesterScan:
    """What ingesters read to answer one select, counted before line filters (the counts of
    the lines they send back are smaller when the request pushed filters down to them)."""

    head_lines: int = 0  # from head (unsealed) blocks
    head_bytes: int = 0
    chunk_lines: int = 0  # from sealed chunks not flushed yet
    chunk_bytes: int = 0
    chunks: int = 0  # chunks (head and sealed) overlapping the request

    def __add__(self, other: IngesterScan) -> IngesterScan:
        return IngesterScan(
            self.head_lines + other.head_lines,
            self.head_bytes + other.head_bytes,
            self.chunk_lines + other.chunk_lines,
            self.chunk_bytes + other.chunk_bytes,
            self.chunks + other.chunks,
        )


@dataclass
class SourceStats:
    """Counters a source fills while reading; reported in the query response `stats`.

    Merging sub-queries' stats adds every counter except `ingester_reached` (see MAX_MERGED)."""

    ingester_lines: int = 0  # scanned (head + sealed chunks), before line filters
    ingester_bytes: int = 0
    ingester_head_lines: int = 0  # the part of ingester_lines read from head blocks
    ingester_head_bytes: int = 0
    ingester_lines_sent: int = 0  # what the ingesters sent back (after pushed-down filters)
    ingester_reached: int = 0  # ingesters reached: each select asks all of them, so the most one select reached
    ingester_batches: int = 0  # answers received from ingesters
    ingester_chunks: int = 0
    store_lines: int = 0
    store_bytes: int = 0
    store_compressed_bytes: int = 0
    store_chunks_ref: int = 0
    store_chunks_downloaded: int = 0
    store_download_seconds: float = 0.0
    duplicates: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    MAX_MERGED = frozenset({"ingester_reached"})


class LogSource(Protocol):
    def select_logs(self, request: SelectRequest) -> Iterable[StreamBlock]:
        """Entries of every stream matching the request."""
        ...

    def select_series(self, matchers: tuple[Matcher, ...], start: int, end: int) -> Iterable[Labels]:
        """Label sets of the streams matching the matchers with entries in [start, end)."""
        ...


@runtime_checkable
class CountsLinesRead(Protocol):
    """A source that can say how many lines it has read so far (decoded or scanned, before line
    filters). A log query's time window that read none (every chunk ruled out by the token index,
    no unflushed rows in range) says nothing about where its matches lie, and reading the rest of
    the range costs as little: the engine then reads the rest in one select instead of growing
    its windows 4x (a needle over an hour took four selects)."""

    def lines_read(self) -> int: ...
