"""shape_answer: a metric expression's value as the query's answer (vector, matrix or scalar).

Rows may share a label set: a `without` aggregation names groups that differ only in an
empty-valued label alike (labels.Builder leaves the value out), and label_replace may rename
two series alike. The reference keeps such rows apart in an instant vector and joins them by
label set into one matrix series, whose steps then hold a sample per row (its engine's
JoinSampleVector appends each step's samples to the series of their label set). The order
of those samples within a step follows a Go map's iteration there, so it varies between
runs; here they go by value, NaN last.
"""

from __future__ import annotations

import numpy as np

from svclog.logql.engine.result import MatrixResult, QueryResult, Sample, ScalarResult, Series, VectorResult
from svclog.logql.engine.samples import series_limit_error
from svclog.logql.engine.series import ScalarSteps, SeriesSet
from svclog.model import Labels


def shape_answer(value: SeriesSet | ScalarSteps, instant: bool, steps: np.ndarray, max_series: int) -> QueryResult:
    if isinstance(value, ScalarSteps):
        if instant:
            return ScalarResult(int(steps[0]), float(value.values[0]))
        return MatrixResult([Series(Labels(), steps, value.values)])
    value = value.compact()
    if (len(value) if instant else len(set(value.labels))) > max_series:
        raise series_limit_error(max_series)
    if instant:
        samples = [
            Sample(lb, int(steps[0]), float(v[0]))
            for lb, v, p in zip(value.labels, value.values, value.present)
            if p[0]
        ]
        return VectorResult(_order_samples(samples, value.order))
    return MatrixResult(_join_rows(value, steps))


def _value_key(value: float) -> tuple[bool, float]:
    return (bool(np.isnan(value)), 0.0 if np.isnan(value) else value)


def _order_samples(samples: list[Sample], order: str) -> list[Sample]:
    samples = sorted(samples, key=lambda s: (s.labels, _value_key(s.value)))
    if not order:
        return samples
    # NaN last in both directions, like the reference's sort / sort_desc
    sign = 1.0 if order == "asc" else -1.0
    return sorted(samples, key=lambda s: (np.isnan(s.value), sign * s.value if not np.isnan(s.value) else 0.0))


def _join_rows(value: SeriesSet, steps: np.ndarray) -> list[Series]:
    rows: dict[Labels, list[int]] = {}
    for i, lb in enumerate(value.labels):
        rows.setdefault(lb, []).append(i)
    series = []
    for lb, members in sorted(rows.items(), key=lambda item: item[0]):
        if len(members) == 1:
            p = value.present[members[0]]
            series.append(Series(lb, steps[p], value.values[members[0]][p]))
            continue
        cols, vals = np.nonzero(value.present[members].T)[0], value.values[members].T[value.present[members].T]
        order = sorted(range(len(cols)), key=lambda k: (int(cols[k]), _value_key(float(vals[k]))))
        series.append(Series(lb, steps[cols[order]], vals[order]))
    return series
