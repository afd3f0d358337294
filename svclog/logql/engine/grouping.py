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
    labels: list[Labels], grouping: ast.Grouping | None, merge_empty: bool = False
) -> list[tuple[Labels, np.ndarray]]:
    """(group labels, row indices) for every group, in order of first appearance.

    A `without` group is named as Prometheus' labels.Builder rebuilds it, without its
    empty-valued labels, but keyed (as the reference's HashWithoutLabels keys it) with them:
    groups that differ only in an empty value answer separately under one name. With
    `merge_empty` such groups are one (the reference's frontend re-aggregating its shards)."""
    named = grouping is not None and grouping.without
    index: dict[Labels, list[int]] = {}
    for i, lb in enumerate(labels):
        key = group_labels(lb, grouping)
        index.setdefault(key.without_empty() if merge_empty and named else key, []).append(i)
    return [(key.without_empty() if named else key, np.asarray(rows, dtype=np.int64)) for key, rows in index.items()]
