"""Merging metric partials: results back onto the step grid, combined by label set,
then the frontend part of the merge tree evaluated with the engine's own operators."""

from __future__ import annotations

from collections.abc import Mapping
from functools import singledispatch

import numpy as np

from svclog.logql import ast
from svclog.logql.engine import binops, functions, vector_agg
from svclog.logql.engine.params import QueryParams
from svclog.logql.engine.result import (
    MatrixResult,
    QueryResult,
    Sample,
    ScalarResult,
    Series,
    VectorResult,
)
from svclog.logql.engine.samples import series_limit_error
from svclog.logql.engine.series import ScalarSteps, SeriesSet
from svclog.logql.rewrite.shard import Combine, Downstream
from svclog.model import Labels, ValidationError

Value = SeriesSet | ScalarSteps


def to_rows(result: QueryResult, steps: np.ndarray) -> SeriesSet:
    """A vector-valued partial as rows over the full evaluation grid `steps`."""
    if isinstance(result, VectorResult):
        labels = [s.labels for s in result.samples]
        values = np.array([[s.value] for s in result.samples], dtype=np.float64).reshape(len(labels), 1)
        return SeriesSet(labels, values, np.ones((len(labels), 1), dtype=bool))
    if not isinstance(result, MatrixResult):
        raise TypeError(f"a metric partial must be a vector or a matrix, not {type(result).__name__}")
    values = np.zeros((len(result.series), len(steps)))
    present = np.zeros((len(result.series), len(steps)), dtype=bool)
    for row, series in enumerate(result.series):
        cols = np.searchsorted(steps, series.ts)
        values[row, cols] = series.values
        present[row, cols] = True
    return SeriesSet([s.labels for s in result.series], values, present)


def combine(parts: list[SeriesSet], how: Combine, n_steps: int) -> SeriesSet:
    """Rows of all partials (time pieces and shards) with equal labels made one row.

    UNSHARDED/CONCAT partials never overlap at a step; SUM/MAX/MIN reduce where they do.
    Rows come out sorted by labels.
    """
    labels = [lb for part in parts for lb in part.labels]
    values = np.concatenate([p.values for p in parts]) if parts else np.zeros((0, n_steps))
    present = np.concatenate([p.present for p in parts]) if parts else np.zeros((0, n_steps), dtype=bool)
    keys = sorted(set(labels))
    index = {lb: i for i, lb in enumerate(keys)}
    rows = np.array([index[lb] for lb in labels], dtype=np.int64)
    out_present = np.zeros((len(keys), n_steps), dtype=bool)
    np.logical_or.at(out_present, rows, present)
    if how in (Combine.MAX, Combine.MIN):
        out = np.full((len(keys), n_steps), np.nan)
        (np.fmax if how is Combine.MAX else np.fmin).at(out, rows, np.where(present, values, np.nan))
    else:
        out = np.zeros((len(keys), n_steps))
        np.add.at(out, rows, np.where(present, values, 0.0))
    return SeriesSet(keys, out, out_present).compact()


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


def to_result(value: Value, params: QueryParams, steps: np.ndarray, max_series: int) -> QueryResult:
    """The final answer, shaped exactly as `evaluator.evaluate` shapes it."""
    if isinstance(value, ScalarSteps):
        if params.instant:
            return ScalarResult(int(steps[0]), float(value.values[0]))
        return MatrixResult([Series(Labels(), steps, value.values)])
    value = value.compact()
    if len(value) > max_series:
        raise series_limit_error(max_series)
    if params.instant:
        samples = [
            Sample(lb, int(steps[0]), float(v[0]))
            for lb, v, p in zip(value.labels, value.values, value.present)
            if p[0]
        ]
        return VectorResult(_order_samples(samples, value.order))
    series = [Series(lb, steps[p], v[p]) for lb, v, p in zip(value.labels, value.values, value.present)]
    return MatrixResult(sorted(series, key=lambda s: s.labels))


def _order_samples(samples: list[Sample], order: str) -> list[Sample]:
    samples = sorted(samples, key=lambda s: s.labels)
    if not order:
        return samples
    sign = 1.0 if order == "asc" else -1.0
    return sorted(samples, key=lambda s: (np.isnan(s.value), sign * s.value if not np.isnan(s.value) else 0.0))
