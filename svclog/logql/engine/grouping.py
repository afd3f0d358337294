"""Grouping of series by `by (...)` / `without (...)` label lists."""

from __future__ import annotations

import numpy as np

from svclog.logql import ast
from svclog.model import Labels


def group_labels(labels: Labels, grouping: ast.Grouping | None) -> Labels:
    """The label set a series contributes to: everything is dropped when there is no grouping."""
    if grouping is None:
        return Labels()
    if grouping.without:
        return labels.without(grouping.labels)
    return labels.keep(grouping.labels)


def group_rows(
    labels: list[Labels], grouping: ast.Grouping | None, without_empty: bool = False
) -> list[tuple[Labels, np.ndarray]]:
    """(group labels, row indices) for every group, in order of first appearance; with
    `without_empty` the group labels leave out empty-valued labels."""
    index: dict[Labels, list[int]] = {}
    for i, lb in enumerate(labels):
        key = group_labels(lb, grouping)
        index.setdefault(key.without_empty() if without_empty else key, []).append(i)
    return [(key, np.asarray(rows, dtype=np.int64)) for key, rows in index.items()]
