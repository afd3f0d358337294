"""Range aggregation windows: every window's result equals computing that window alone.

The references below are direct ports of the reference's per-window loops (which
round differently from a pairwise sum, so they compare within the window's scale);
huge values, NaN and Inf must not leak from one window into another.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svclog.logql.engine.evaluator import evaluate
from svclog.logql.engine.memory_source import MemorySource
from svclog.logql.engine.params import QueryParams
from svclog.logql.engine.range_agg import UNWRAP_OPS, windows
from svclog.logql.engine.result import MatrixResult, VectorResult
from svclog.logql.engine.window_sums import window_sums, window_variances
from svclog.logql.parser import parse
from svclog.model import NS, Labels

WINDOW_OPS = (
    "sum_over_time",
    "avg_over_time",
    "stdvar_over_time",
    "stddev_over_time",
    "rate",
    "rate_counter",
    "count_over_time",
)


def ref_sum(values: list[float]) -> float:
    total = 0.0
    for v in values:
        total += v
    return total


def ref_avg(values: list[float]) -> float:
    mean = 0.0
    for count, v in enumerate(values, 1):
        if math.isinf(mean):
            if math.isinf(v) and (mean > 0) == (v > 0):
                continue
            if not math.isinf(v) and not math.isnan(v):
                continue
        mean += v / count - mean / count
    return mean


def ref_stdvar(values: list[float]) -> float:
    aux = mean = 0.0
    for count, v in enumerate(values, 1):
        delta = v - mean
        mean += delta / count
        aux += delta * (v - mean)
    return aux / len(values)


# below the smallest normal float (subnormals) relative precision is gone: a mean of
# [5e-324, 0.0] is 0.0 or 5e-324 by the order of rounding, both right
SUBNORMAL = sys.float_info.min
# a deviation is the root of a variance: one known to within SUBNORMAL gives one known to within
# its root (samples of 6e-161 have a variance of 7.5e-322, whose root moves by 1e-163 a rounding)
DEVIATION_FLOOR = math.sqrt(SUBNORMAL)


def same(got: float, want: float, tol: float = 0.0, scale: float = 0.0, floor: float = SUBNORMAL) -> bool:
    """Equal, NaN equal to NaN; with `tol`, close relative to the result or to the window's scale,
    or within `floor`."""
    if math.isnan(want) or math.isnan(got):
        return math.isnan(want) and math.isnan(got)
    if math.isinf(want) or tol == 0.0:
        return got == want
    return math.isclose(got, want, rel_tol=tol, abs_tol=tol * scale + floor)


values_st = st.one_of(
    st.floats(-1e3, 1e3, allow_nan=False),
    st.sampled_from([1e20, -1e20, 1e100, 1.0, 0.1, 3.0, math.nan, math.inf, -math.inf]),
)
series_st = st.lists(st.tuples(st.integers(0, 60), values_st), max_size=40)


def _series(points: list[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
    points = sorted(points, key=lambda p: p[0])
    return np.array([p[0] for p in points], dtype=np.int64) * NS, np.array([p[1] for p in points], dtype=np.float64)


@settings(max_examples=300, deadline=None)
@given(series_st, st.integers(1, 20), st.integers(1, 7))
def test_each_window_equals_the_reference_loop_over_that_window(points, range_s, step_s) -> None:
    ts, values = _series(points)
    ends = np.arange(0, 70, step_s, dtype=np.int64) * NS
    w = windows(ts, values, ends, range_s * NS)
    got = {op: UNWRAP_OPS[op](w) for op in WINDOW_OPS}
    for i in range(len(ends)):
        inside = values[w.lo[i] : w.hi[i]].tolist()
        if not inside:
            continue
        size = max(abs(v) for v in inside if not math.isnan(v)) if not all(map(math.isnan, inside)) else 0.0
        assert same(got["sum_over_time"][i], ref_sum(inside), 1e-12, size * len(inside))
        assert same(got["rate"][i], ref_sum(inside) / range_s, 1e-12, size * len(inside))
        assert same(got["avg_over_time"][i], ref_avg(inside), 1e-12, size * len(inside))
        assert same(got["stdvar_over_time"][i], ref_stdvar(inside), 1e-12, size * size * len(inside))
        assert same(got["stddev_over_time"][i], math.sqrt(ref_stdvar(inside)), 1e-6, size, DEVIATION_FLOOR)
        # the same op over the window's samples alone: bit for bit (variances shift by the series' mean)
        alone = windows(ts[w.lo[i] : w.hi[i]], values[w.lo[i] : w.hi[i]], ends[i : i + 1], range_s * NS)
        for op in WINDOW_OPS:
            tol = 1e-9 if op.startswith("std") else 0.0
            deviation = op == "stddev_over_time"
            scale = size if deviation else size * size  # a deviation is in the values' units
            floor = DEVIATION_FLOOR if deviation else SUBNORMAL
            assert same(got[op][i], UNWRAP_OPS[op](alone)[0], tol, scale, floor), op


def test_huge_value_does_not_swallow_later_windows() -> None:
    ts = np.array([1, 2, 3], dtype=np.int64) * NS
    w = windows(ts, np.array([1e20, 1.0, 1.0]), np.array([1, 3], dtype=np.int64) * NS, 2 * NS)
    assert UNWRAP_OPS["sum_over_time"](w).tolist() == [1e20, 2.0]
    assert UNWRAP_OPS["avg_over_time"](w).tolist() == [1e20, 1.0]
    assert UNWRAP_OPS["stdvar_over_time"](w).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_inf_stay_in_their_windows(bad: float) -> None:
    ts = np.array([1, 2, 5, 6], dtype=np.int64) * NS
    w = windows(ts, np.array([bad, 1.0, 2.0, 4.0]), np.array([2, 6], dtype=np.int64) * NS, 2 * NS)
    for op, later in (("sum_over_time", 6.0), ("avg_over_time", 3.0), ("stdvar_over_time", 1.0), ("rate", 3.0)):
        assert UNWRAP_OPS[op](w)[1] == later, op


def test_ill_conditioned_variances_take_the_two_pass() -> None:
    rng = np.random.default_rng(5)
    x = 1e9 + rng.normal(size=5000) * np.where(np.arange(5000) < 2500, 1e-3, 1.0)
    lo = np.sort(rng.integers(0, 5000, 300))
    hi = np.minimum(lo + rng.integers(0, 700, 300), 5000)
    got = window_variances(x, lo, hi)
    for value, a, b in zip(got, lo, hi):
        if b > a:
            assert value == pytest.approx(np.var(x[a:b] - 1e9), rel=1e-6, abs=1e-12)
        else:
            assert math.isnan(value)
    alone = [window_sums(x[a:b].copy(), np.array([0]), np.array([b - a]))[0] for a, b in zip(lo, hi)]
    assert window_sums(x, lo, hi).tolist() == alone


def test_overflowing_sum_falls_back_to_the_running_mean() -> None:
    ts = np.array([1, 2], dtype=np.int64) * NS
    w = windows(ts, np.array([1e308, 1e308]), np.array([2], dtype=np.int64) * NS, 5 * NS)
    assert UNWRAP_OPS["avg_over_time"](w).tolist() == [1e308]


# ---------------------------------------------------------------- range query == instant query at each step


def _source(points: list[tuple[int, float]]) -> MemorySource:
    entries = [(t * NS + i, f"v={v!r}".replace("inf", "Inf")) for i, (t, v) in enumerate(sorted(points))]
    return MemorySource({Labels.from_dict({"app": "x"}): entries})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    series_st,
    st.sampled_from(["sum_over_time", "avg_over_time", "stdvar_over_time", "stddev_over_time", "rate", "rate_counter"]),
    st.integers(1, 20),
)
def test_range_query_matches_instant_query_at_every_step(points, op, range_s) -> None:
    query = parse(f'{op}({{app="x"}} | logfmt | unwrap v [{range_s}s])')
    source = _source(points)
    matrix = evaluate(query, QueryParams.for_range(0, 70 * NS, 5 * NS), source)
    assert isinstance(matrix, MatrixResult)
    by_time = {int(t): float(v) for s in matrix.series for t, v in zip(s.ts, s.values)}
    for step in range(0, 71, 5):
        instant = evaluate(query, QueryParams.for_instant(step * NS), source)
        assert isinstance(instant, VectorResult)
        assert len(instant.samples) == (step * NS in by_time)
        tol = 1e-9 if op.startswith("std") else 0.0
        size = max([abs(v) for _, v in points if math.isfinite(v)], default=0.0)
        scale = size if op == "stddev_over_time" else size * size  # a deviation is in the values' units
        for sample in instant.samples:
            assert same(by_time[step * NS], sample.value, tol, scale), (step, sample.value)


def test_deviations_of_samples_whose_variance_is_subnormal_compare_within_its_root() -> None:
    """Hypothesis's find: four samples, one of 6.3e-161, whose variance (7.5e-322) is subnormal."""
    points = [(0, 0.0), (0, 0.0), (0, 0.0), (0, 6.341254160919432e-161)]
    ts, values = _series(points)
    w = windows(ts, values, np.array([0], dtype=np.int64), NS)  # the window ending at the samples
    assert w.hi[0] - w.lo[0] == 4
    got = UNWRAP_OPS["stddev_over_time"](w)[0]
    want = math.sqrt(ref_stdvar(values.tolist()))
    assert same(got, want, 1e-6, 6.341254160919432e-161, DEVIATION_FLOOR)
    assert abs(got - want) < DEVIATION_FLOOR
