"""Object keys and index periods: where chunks and index files live in the store."""

from __future__ import annotations

PERIOD_NS = 24 * 3600 * 1_000_000_000  # one index file set per tenant per day


def period_of(ts_ns: int) -> int:
    return ts_ns // PERIOD_NS


def periods_between(start_ns: int, end_ns: int) -> range:
    """Periods overlapping [start, end)."""
    return range(period_of(start_ns), period_of(max(start_ns, end_ns - 1)) + 1)


def chunk_key(tenant: str, fingerprint: int, min_ts: int, max_ts: int, checksum: int) -> str:
    return f"chunks/{tenant}/{fingerprint:016x}/{min_ts:x}-{max_ts:x}-{checksum:08x}"


def index_dir(tenant: str, period: int) -> str:
    return f"index/{tenant}/{period}"


def tenants_prefix() -> str:
    return "index"
