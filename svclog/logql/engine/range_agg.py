"""Range aggregations (`count_over_time`, `rate`, `quantile_over_time`, ...) over step windows.

Each evaluation time t covers the samples with t - range < ts <= t (after
offset). Window bounds come from np.searchsorted over the sorted timestamps;
counts from the bounds; sums, means and variances per window as if each were
computed alone (window_sums); min/max from a sparse table; only quantiles loop,
once per step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from svclog.logql.engine.window_sums import window_means, window_sums, window_variances
from svclog.model import NS


@dataclass
class Windows:
    """Sample index bounds [lo, hi) of every step's window for one series."""

    ts: np.ndarray
    values: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    ends: np.ndarray  # window end (ns) per step
    range_ns: int
    param: float | None

    @property
    def count(self) -> np.ndarray:
        count: np.ndarray = self.hi - self.lo
        return count

    @property
    def range_seconds(self) -> float:
        return self.range_ns / NS


def windows(ts: np.ndarray, values: np.ndarray, ends: np.ndarray, range_ns: int, param: float | None = None) -> Windows:
    lo = np.searchsorted(ts, ends - range_ns, side="right")
    hi = np.searchsorted(ts, ends, side="right")
    return Windows(ts, values, lo, hi, ends, range_ns, param)


def _sum(w: Windows) -> np.ndarray:
    return window_sums(w.values, w.lo, w.hi)


def _avg(w: Windows) -> np.ndarray:
    return window_means(w.values, w.lo, w.hi)


def _stdvar(w: Windows) -> np.ndarray:
    return window_variances(w.values, w.lo, w.hi)


def _stddev(w: Windows) -> np.ndarray:
    out: np.ndarray = np.sqrt(_stdvar(w))
    return out


def _sparse_reduce(x: np.ndarray, w: Windows, reduce: np.ufunc) -> np.ndarray:
    """Range minimum/maximum queries over [lo, hi) for every window at once."""
    n = len(x)
    out = np.full(len(w.lo), np.nan)
    nonempty = w.hi > w.lo
    if n == 0 or not nonempty.any():
        return out
    table = [x]
    span = 1
    while span * 2 <= n:
        prev = table[-1]
        table.append(reduce(prev[:-span], prev[span:]))
        span *= 2
    lo, hi = w.lo[nonempty], w.hi[nonempty]
    level = np.floor(np.log2(hi - lo)).astype(np.int64)
    result = np.empty(len(lo))
    for k in np.unique(level):
        sel = level == k
        row = table[k]
        result[sel] = reduce(row[lo[sel]], row[hi[sel] - (1 << k)])
    out[nonempty] = result
    return out


def _min(w: Windows) -> np.ndarray:
    return _sparse_reduce(w.values, w, np.fmin)


def _max(w: Windows) -> np.ndarray:
    return _sparse_reduce(w.values, w, np.fmax)


def _first(w: Windows) -> np.ndarray:
    return w.values[np.minimum(w.lo, max(len(w.values) - 1, 0))] if len(w.values) else np.full(len(w.lo), np.nan)


def _last(w: Windows) -> np.ndarray:
    return w.values[np.maximum(w.hi - 1, 0)] if len(w.values) else np.full(len(w.lo), np.nan)


def quantile(q: float, values: np.ndarray) -> float:
    """Prometheus' quantile: linear interpolation between closest ranks of the sorted values."""
    if len(values) == 0 or np.isnan(q):
        return np.nan
    if q < 0:
        return -np.inf
    if q > 1:
        return np.inf
    rank = q * (len(values) - 1)
    lower = int(np.floor(rank))
    upper = min(lower + 1, len(values) - 1)
    weight = rank - lower
    # only the two ranks matter: a partial sort puts them in place (NaN orders last either way)
    ordered = np.partition(values, [lower, upper]) if len(values) > 64 else np.sort(values)
    return float(ordered[lower] * (1 - weight) + ordered[upper] * weight)


def _quantile(w: Windows) -> np.ndarray:
    q = np.nan if w.param is None else w.param
    return np.array([quantile(q, w.values[lo:hi]) for lo, hi in zip(w.lo.tolist(), w.hi.tolist())])


def _count(w: Windows) -> np.ndarray:
    return w.count.astype(np.float64)


def _rate_count(w: Windows) -> np.ndarray:
    return w.count / w.range_seconds


def _rate_sum(w: Windows) -> np.ndarray:
    return _sum(w) / w.range_seconds


def _rate_counter(w: Windows) -> np.ndarray:
    """The reference's counter rate: its port of Prometheus' extrapolatedRate with counter resets.

    The reference feeds nanosecond timestamps into code written for milliseconds;
    the arithmetic below reproduces its results exactly, units and all.
    """
    x, ts = w.values, w.ts.astype(np.float64)
    n = w.count
    out = np.zeros(len(n))
    ok = n >= 2
    if not ok.any() or len(x) == 0:
        return out
    # the reference starts from last - first and adds each value a later sample of the window fell below
    resets = np.concatenate(([0.0], np.where(x[1:] < x[:-1], x[:-1], 0.0)))
    lo, hi = w.lo[ok], w.hi[ok]
    first_v, last_v = x[lo], x[hi - 1]
    first_t, last_t = ts[lo], ts[hi - 1]
    with np.errstate(invalid="ignore", over="ignore"):
        result = window_sums(resets, lo + 1, hi, start=last_v - first_v)
    range_ms = w.range_ns // 1_000_000
    range_start = first_t - range_ms
    range_end = last_t
    to_start = (first_t - range_start) / 1000
    to_end = (range_end - last_t) / 1000
    sampled = (last_t - first_t) / 1000
    avg_between = sampled / (n[ok] - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        to_zero = sampled * (first_v / result)
    use_zero = (result > 0) & (first_v >= 0) & (to_zero < to_start)
    to_start = np.where(use_zero, to_zero, to_start)
    threshold = avg_between * 1.1
    extrapolate = sampled + np.where(to_start < threshold, to_start, avg_between / 2)
    extrapolate = extrapolate + np.where(to_end < threshold, to_end, avg_between / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        result = result * (extrapolate / sampled)
    out[ok] = result / w.range_seconds
    return out


# Ops over log ranges see line sizes in bytes as values; unwrapped ranges the label values.
RangeFn = Callable[[Windows], np.ndarray]
LOG_OPS: dict[str, RangeFn] = {
    "count_over_time": _count,
    "rate": _rate_count,
    "bytes_over_time": _sum,
    "bytes_rate": _rate_sum,
}
UNWRAP_OPS: dict[str, RangeFn] = {
    "rate": _rate_sum,
    "rate_counter": _rate_counter,
    "sum_over_time": _sum,
    "avg_over_time": _avg,
    "min_over_time": _min,
    "max_over_time": _max,
    "stdvar_over_time": _stdvar,
    "stddev_over_time": _stddev,
    "quantile_over_time": _quantile,
    "first_over_time": _first,
    "last_over_time": _last,
    "count_over_time": _count,
}
