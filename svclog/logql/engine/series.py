"""Step-aligned intermediate values of metric expressions.

A `SeriesSet` holds every series of a sample expression over all evaluation
times at once: a (series x steps) float matrix plus a presence mask, so
aggregations and binary operators work on whole columns instead of per step.
A `ScalarSteps` is a scalar expression's value at every step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from svclog.model import Labels, ValidationError


@dataclass
class SeriesSet:
    labels: list[Labels]
    values: np.ndarray  # float64 (n_series, n_steps)
    present: np.ndarray  # bool (n_series, n_steps)
    # ordering hint for instant vectors: "" (by labels), "asc" or "desc" (sort / sort_desc)
    order: str = ""

    @classmethod
    def empty(cls, n_steps: int) -> SeriesSet:
        return cls([], np.zeros((0, n_steps)), np.zeros((0, n_steps), dtype=bool))

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def n_steps(self) -> int:
        return int(self.values.shape[1])

    def compact(self) -> SeriesSet:
        """Drop series that are absent at every step."""
        keep = np.any(self.present, axis=1)
        if keep.all():
            return self
        return SeriesSet(
            [lb for lb, k in zip(self.labels, keep) if k], self.values[keep], self.present[keep], self.order
        )


@dataclass
class ScalarSteps:
    values: np.ndarray  # float64 (n_steps,)


def merge_same_labels(
    labels: list[Labels],
    values: np.ndarray,
    present: np.ndarray,
    what: str = "vector cannot contain metrics with the same labelset",
) -> SeriesSet:
    """Combine rows that carry the same labels; two present samples at one step are an error."""
    index: dict[Labels, int] = {}
    rows: list[int] = []
    for lb in labels:
        rows.append(index.setdefault(lb, len(index)))
    if len(index) == len(labels):
        return SeriesSet(list(labels), values, present)
    rows_arr = np.asarray(rows)
    n_out = len(index)
    counts = np.zeros((n_out, values.shape[1]), dtype=np.int64)
    np.add.at(counts, rows_arr, present.astype(np.int64))
    if (counts > 1).any():
        raise ValidationError(what)
    out_values = np.zeros((n_out, values.shape[1]))
    np.add.at(out_values, rows_arr, np.where(present, values, 0.0))
    # NaN samples would be lost by the masked add: put them back where present.
    nan_rows, nan_cols = np.nonzero(present & np.isnan(values))
    out_values[rows_arr[nan_rows], nan_cols] = np.nan
    return SeriesSet(list(index), out_values, counts > 0)
