"""Merging metric partials: results back onto the step grid, combined by label set,
then the frontend part of the merge tree evaluated with the engine's own operators."""

from __future__ import annotations

from collections.abc import Mapping
from functools import singledispatch

import numpy as np

from svclog.logql import ast
from svclog.logql.engine import binops, functions, vector_agg
from svclog.logql.engine.result import (
    MatrixResult,
    QueryResult,
    VectorResult,
)
from svclog.logql.engine.series import ScalarSteps, SeriesSet
from svclog.logql.rewrite.shard import Combine, Downstream
from svclog.model import Labels, ValidationError

Value = SeriesSet | ScalarSteps


def to_rows(result: QueryResult, steps: np.ndarray) -> SeriesSet:
    """A vector-valued partial as rows over the full evaluation grid `steps`."""
    if isinstance(result, VectorResult):
        names = [s.labels for s in result.samples]
        values = np.array([[s.value] for s in result.samples], dtype=np.float64).reshape(len(names), 1)
        return SeriesSet(names, values, np.ones((len(names), 1), dtype=bool))
    if not isinstance(result, MatrixResult):
        raise TypeError(f"a metric partial must be a vector or a matrix, not {type(result).__name__}")
    labels: list[Labels] = []
    value_rows: list[np.ndarray] = []
    present_rows: list[np.ndarray] = []
    for series in result.series:
        # a series holding k samples at a step is k rows joined (engine/answer.py): the k-th
        # sample of every step goes back into the k-th row
        cols = np.searchsorted(steps, series.ts)
        rank = np.zeros(len(cols), dtype=np.int64)
        if len(cols) > 1 and (np.diff(cols) == 0).any():
            first = np.searchsorted(cols, cols, side="left")
            rank = np.arange(len(cols)) - first
        for k in range(int(rank.max()) + 1 if len(rank) else 1):
            at = rank == k
            row_values = np.zeros(len(steps))
            row_present = np.zeros(len(steps), dtype=bool)
            row_values[cols[at]] = series.values[at]
            row_present[cols[at]] = True
            labels.append(series.labels)
            value_rows.append(row_values)
            present_rows.append(row_present)
    if not labels:
        return SeriesSet.empty(len(steps))
    return SeriesSet(labels, np.stack(value_rows), np.stack(present_rows))


def combine(parts: list[SeriesSet], how: Combine, n_steps: int) -> SeriesSet:
    """Rows of all partials (time pieces and shards) with equal labels made one row; the k-th of
    several rows sharing a label set in a partial (engine/answer.py) joins the k-th of the others.

    UNSHARDED/CONCAT partials never overlap at a step; SUM/MAX/MIN reduce where they do (their
    partials hold no rows sharing a label set: shard.py runs such a leaf un-sharded).
    Rows come out sorted by labels.
    """
    keyed: list[tuple[Labels, int]] = []
    for part in parts:
        seen: dict[Labels, int] = {}
        for lb in part.labels:
            seen[lb] = seen.get(lb, -1) + 1
            keyed.append((lb, seen[lb]))
    values = np.concatenate([p.values for p in parts]) if parts else np.zeros((0, n_steps))
    present = np.concatenate([p.present for p in parts]) if parts else np.zeros((0, n_steps), dtype=bool)
    keys = sorted(set(keyed))
    index = {key: i for i, key in enumerate(keys)}
    rows = np.array([index[key] for key in keyed], dtype=np.int64)
    out_present = np.zeros((len(keys), n_steps), dtype=bool)
    np.logical_or.at(out_present, rows, present)
    if how in (Combine.MAX, Combine.MIN):
        out = np.full((len(keys), n_steps), np.nan)
        (np.fmax if how is Combine.MAX else np.fmin).at(out, rows, np.where(present, values, np.nan))
    else:
        out = np.zeros((len(keys), n_steps))
        np.add.at(out, rows, np.where(present, values, 0.0))
    return SeriesSet([lb for lb, _ in keys], out, out_present).compact()


@singledispatch
def eval_tree(node: object, leaves: Mapping[Downstream, SeriesSet], n_steps: int) -> Value:
    raise ValidationError(f"unsupported expression {type(node).__name__}")


@eval_tree.register
def _downstream(node: Downstream, leaves: Mapping[Downstream, SeriesSet], n_steps: int) -> Value:
    return leaves[node]


@eval_tree.register
def _literal(node: ast.Literal, leaves: Mapping[Downstream, SeriesSet], n_steps: int) -> Value:
    return ScalarSteps(np.full(n_steps, float(node.value)))


@eval_tree.register
def _vector(node: ast.VectorLiteral, leaves: Mapping[Downstream, SeriesSet], n_steps: int) -> Value:
    return functions.vector_literal(node.value, n_steps)


@eval_tree.register
def _binary(node: ast.BinaryOp, leaves: Mapping[Downstream, SeriesSet], n_steps: int) -> Value:
    return binops.apply(node, eval_tree(node.lhs, leaves, n_steps), eval_tree(node.rhs, leaves, n_steps))


@eval_tree.register
def _label_replace(node: ast.LabelReplace, leaves: Mapping[Downstream, SeriesSet], n_steps: int) -> Value:
    inner = eval_tree(node.expr, leaves, n_steps)
    if not isinstance(inner, SeriesSet):
        raise ValidationError("label_replace expects a vector")
    return functions.label_replace(node, inner)


@eval_tree.register
def _aggregation(node: ast.VectorAggregation, leaves: Mapping[Downstream, SeriesSet], n_steps: int) -> Value:
    inner = eval_tree(node.expr, leaves, n_steps)
    if not isinstance(inner, SeriesSet):
        raise ValidationError(f"{node.op} expects a vector")
    return vector_agg.aggregate(node, inner)
