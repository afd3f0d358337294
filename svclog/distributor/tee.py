"""SampledTee: a bounded, batched copy of accepted streams for the pattern ingester.

Pattern mining costs far more per line than ingestion, so the distributor sends at most
`max_lines_per_second` lines per tenant: above that rate it keeps every k-th line of each
stream and sends it with weight k, so pattern counts stay estimates of the real counts.
Copies are buffered (bounded) and handed to `sink` in one call per flush, never blocking
a push; what does not fit is dropped and counted, as is a batch the sink fails on (logged
at most once a minute).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence

from svclog.model import ColumnStream, Labels, StreamColumns

log = logging.getLogger(__name__)

Batch = tuple[str, list[StreamColumns], int]
_LOG_EVERY_S = 60.0


class SampledTee:
    def __init__(
        self,
        sink: Callable[[list[Batch]], None],
        *,
        max_lines_per_second: int = 2000,
        max_buffered_lines: int = 20_000,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.sink = sink
        self.rate = max_lines_per_second
        self.max_buffered = max_buffered_lines
        self.clock = clock
        self.dropped_lines = 0
        self.failed_flushes = 0
        self._failures_unlogged = 0
        self._logged_at: float | None = None
        self._buffer: list[Batch] = []
        self._buffered = 0
        self._seen: dict[str, tuple[int, int, int]] = {}  # tenant -> (second, lines this second, last second)
        self._lock = threading.Lock()

    def _stride(self, tenant: str, lines: int) -> int:
        second = int(self.clock())
        current, count, previous = self._seen.get(tenant, (second, 0, 0))
        if current != second:
            current, count, previous = second, 0, (count if second - current == 1 else 0)
        count += lines
        self._seen[tenant] = (current, count, previous)
        expected = max(count, previous)  # this second's lines so far, or last second's rate
        return max(1, math.ceil(expected / self.rate))

    def offer(self, tenant: str, streams: Sequence[ColumnStream]) -> None:
        total = sum(len(s) for s in streams)
        with self._lock:
            stride = self._stride(tenant, total)
            sampled = [s.columns() for s in streams] if stride == 1 else [s.sample(stride) for s in streams]
            size = sum(len(s) for s in sampled)
            if self._buffered + size > self.max_buffered:
                self.dropped_lines += total
                return
            self._buffer.append((tenant, sampled, stride))
            self._buffered += size

    def flush(self) -> int:
        """Hand the buffered copies to the sink; returns how many pushes they came from."""
        with self._lock:
            batches, self._buffer, self._buffered = self._buffer, [], 0
        if batches:
            try:
                self.sink(merged(batches))
            except Exception:
                with self._lock:
                    self.dropped_lines += sum(len(s) * weight for _, streams, weight in batches for s in streams)
                raise
        return len(batches)

    def run_forever(self, interval: float = 0.5, stop: threading.Event | None = None) -> None:
        stop = stop or threading.Event()
        while not stop.wait(interval):
            try:
                self.flush()
            except Exception as err:  # noqa: BLE001 - the ingester may be restarting: batch lost, logged
                self._report_failure(err)

    def _report_failure(self, err: Exception) -> None:
        """Count a failed flush; log it unless one was logged within the last minute."""
        self.failed_flushes += 1
        self._failures_unlogged += 1
        now = self.clock()
        if self._logged_at is not None and now - self._logged_at < _LOG_EVERY_S:
            return
        log.warning(
            "pattern tee: %d flush(es) failed since the last report, their lines dropped (%d dropped in all): %r",
            self._failures_unlogged,
            self.dropped_lines,
            err,
            exc_info=err,
        )
        self._logged_at, self._failures_unlogged = now, 0


def merged(batches: list[Batch]) -> list[Batch]:
    """One stream per tenant, weight and label set, its pushes' copies joined in push order. A
    flush holds ~40 pushes of ~25 streams at the bench's rate: pickling ~1000 small StreamColumns
    for the call cost ~5 ms a flush in the sender and ~4 ms in the pattern ingester, ~100
    joined ones ~1 ms each."""
    groups: dict[tuple[str, int], dict[Labels, StreamColumns]] = {}
    for tenant, streams, weight in batches:
        by_labels = groups.setdefault((tenant, weight), {})
        for stream in streams:
            have = by_labels.get(stream.labels)
            by_labels[stream.labels] = stream if have is None else have.concat(stream)
    return [(tenant, list(by_labels.values()), weight) for (tenant, weight), by_labels in groups.items()]
