"""Per-window sums, means and variances over the [lo, hi) index windows of one series.

A window's result must depend on that window's samples only, as in the reference,
which sums each window directly. Differences of one running sum over the whole
series do not: a huge value wipes out the small ones after it (1e20, 1, 1 leaves
0 for the window of the two ones) and one NaN or Inf poisons every later window.
Sums come from np.add.reduceat over each window's own index range (C speed, a
function of the window's values alone); variances from shifted one-pass sums
where that is well conditioned, else from a two-pass over the window's samples.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

_CONDITION = 1e4  # the one-pass variance is kept while mean square / variance stays below this
_BLOCK_CELLS = 1 << 20  # padded cells the two-pass variance gathers at once


def window_sums(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
    """sum(x[lo:hi]) per window (0 when empty), added to `start` when given."""
    out = np.zeros(len(lo)) if start is None else np.array(start, dtype=np.float64)
    nonempty = hi > lo
    if not nonempty.any():
        return out
    bounds = np.empty(2 * int(nonempty.sum()), dtype=np.int64)
    bounds[0::2], bounds[1::2] = lo[nonempty], hi[nonempty]
    # the odd segments run from one window's end to the next one's start and are dropped
    with np.errstate(invalid="ignore", over="ignore"):
        out[nonempty] = out[nonempty] + np.add.reduceat(np.append(x, 0.0), bounds)[0::2]
    return out


def window_means(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Mean per window (NaN when empty); a sum that overflows falls back to the reference's running mean."""
    n = hi - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        mean: np.ndarray = window_sums(x, lo, hi) / n
    overflow = np.isinf(mean)
    if overflow.any():
        nonfinite = np.concatenate(([0], np.cumsum(~np.isfinite(x))))
        overflow &= nonfinite[hi] == nonfinite[lo]
        for i in np.flatnonzero(overflow).tolist():
            mean[i] = _running_mean(x[lo[i] : hi[i]].tolist())
    return mean


def _running_mean(values: list[float]) -> float:
    mean = 0.0
    for count, value in enumerate(values, 1):
        mean += value / count - mean / count
    return mean


def window_variances(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Population variance per window; NaN when empty or when the window holds a NaN or an Inf."""
    out = np.full(len(lo), np.nan)
    finite = np.isfinite(x)
    nonfinite = np.concatenate(([0], np.cumsum(~finite)))
    n = hi - lo
    ok = (n > 0) & (nonfinite[hi] == nonfinite[lo])
    if not ok.any():
        return out
    y = np.where(finite, x - float(np.mean(x[finite])), 0.0)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        mean = window_sums(y, lo, hi) / n
        square = window_sums(y * y, lo, hi) / n
        variance = square - mean * mean
        good = ok & np.isfinite(square) & (variance * _CONDITION >= square)
    out[good] = variance[good]
    rest = np.flatnonzero(ok & ~good)
    if len(rest):
        out[rest] = _two_pass_variances(x, lo[rest], hi[rest])
    return out


def _two_pass_variances(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    out = np.full(len(lo), np.nan)
    with np.errstate(invalid="ignore", over="ignore"):
        for rows, index, mask in _blocks(lo, hi):
            cells = np.where(mask, x[index], 0.0)
            n = mask.sum(axis=1)
            mean = _row_sums(cells) / n
            deviation = np.where(mask, cells - mean[:, None], 0.0)
            out[rows] = _row_sums(deviation * deviation) / n
    return out


def _blocks(lo: np.ndarray, hi: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Non-empty windows by increasing length, as (rows, gather index, mask) padded blocks."""
    count = hi - lo
    order = np.argsort(count, kind="stable")
    order = order[count[order] > 0]
    sizes = count[order]
    i = 0
    while i < len(order):
        ahead = sizes[i : i + _BLOCK_CELLS]
        cells = np.arange(1, len(ahead) + 1) * ahead  # sizes ascend: the last row sets the width
        take = max(int(np.searchsorted(cells, _BLOCK_CELLS, side="right")), 1)
        rows = order[i : i + take]
        offsets = np.arange(int(sizes[i + take - 1]))
        mask = offsets < count[rows, None]
        yield rows, np.where(mask, lo[rows, None] + offsets, lo[rows, None]), mask
        i += take


def _row_sums(cells: np.ndarray) -> np.ndarray:
    # cumsum adds left to right, so each row's zero padding changes nothing
    return np.cumsum(cells, axis=1)[:, -1]
