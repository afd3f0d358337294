"""Per-stream ingestion rate limit (`per_stream_rate_limit` / `_burst`): a token bucket per stream.

A push's slice of a stream is taken whole when it fits (one comparison, the common case);
otherwise the longest prefix of entries that fits is kept and the rest refused with the
reference's 429 message.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from itertools import accumulate

from svclog.ingester.payload import BatchStream, PushedStream
from svclog.model import Labels, RateLimitError, StreamColumns


class StreamRateLimitError(RateLimitError):
    """Entries of a stream went over its per-stream rate limit (429, as the reference)."""


class StreamRate:
    """A token bucket in bytes: `rate` per second, at most `burst` saved up."""

    __slots__ = ("burst", "rate", "tokens", "updated")

    def __init__(self, rate: float, burst: float, now: float):
        self.rate, self.burst, self.tokens, self.updated = rate, burst, burst, now

    def refill(self, rate: float, burst: float, now: float) -> None:
        if (rate, burst) != (self.rate, self.burst):  # limits changed (runtime overrides)
            self.rate, self.burst, self.tokens = rate, burst, min(self.tokens, burst)
        self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
        self.updated = now


def limit_stream(bucket: StreamRate, data: PushedStream) -> tuple[PushedStream | None, int]:
    """(the part of `data` the bucket allows, bytes refused)."""
    size = data.raw_bytes()
    if size <= bucket.tokens:
        bucket.tokens -= size
        return data, 0
    sizes = list(accumulate(data.line_sizes() if isinstance(data, BatchStream) else map(len, data.lines)))
    keep = bisect_right(sizes, bucket.tokens)
    if keep == 0:
        return None, size
    bucket.tokens -= sizes[keep - 1]
    if isinstance(data, BatchStream):
        return data.slice(keep), size - sizes[keep - 1]
    md = data.metadata[:keep] if data.metadata is not None else None
    return StreamColumns(data.labels, data.ts[:keep], data.lines[:keep], md), size - sizes[keep - 1]


class StreamRateLimits:
    """The buckets of one tenant's streams; `rate` <= 0 disables the limit."""

    def __init__(self) -> None:
        self._buckets: dict[Labels, StreamRate] = {}

    def admit(
        self, streams: list[PushedStream], rate: float, burst: float
    ) -> tuple[list[PushedStream], StreamRateLimitError | None]:
        if rate <= 0:
            return streams, None
        now = time.monotonic()
        kept: list[PushedStream] = []
        refused: tuple[Labels, int] | None = None
        for data in streams:
            bucket = self._buckets.get(data.labels)
            if bucket is None:
                bucket = self._buckets[data.labels] = StreamRate(rate, max(burst, rate), now)
            else:
                bucket.refill(rate, max(burst, rate), now)
            allowed, over = limit_stream(bucket, data)
            if allowed is not None:
                kept.append(allowed)
            if over:
                refused = (data.labels, over)
        if refused is None:
            return kept, None
        labels, over = refused
        return kept, StreamRateLimitError(
            f"Per stream rate limit exceeded (limit: {base2_bytes(int(rate))}/sec) while attempting to ingest "
            f"for stream '{labels}' totaling {base2_bytes(over)}, consider splitting a stream via additional "
            f"labels or contact your Loki administrator to see if the limit can be increased"
        )

    def forget(self, labels: Labels) -> None:
        self._buckets.pop(labels, None)


_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def base2_bytes(n: int) -> str:
    """A byte count as the reference prints sizes: `3MiB`, `1KiB210B`, `0B`."""
    if n == 0:
        return "0B"
    parts = []
    for unit in _UNITS:
        if n % 1024:
            parts.append(f"{n % 1024}{unit}")
        n //= 1024
        if not n:
            break
    return "".join(reversed(parts))
