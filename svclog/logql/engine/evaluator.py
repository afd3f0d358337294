"""evaluate(expr, params, source): the one entry point of the LogQL engine.

Sample expressions evaluate to a `SeriesSet` (all steps at once) or to
`ScalarSteps`; dispatch over AST node types is a functools.singledispatch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import singledispatch

import numpy as np

from svclog.logql import ast
from svclog.logql.engine import binops, functions, vector_agg
from svclog.logql.engine.answer import shape_answer
from svclog.logql.engine.avg_split import split_avg_over_time
from svclog.logql.engine.frontend_merge import frontend_mergers, merged_aggregations
from svclog.logql.engine.grouping import group_labels
from svclog.logql.engine.guard import QueryGuard
from svclog.logql.engine.hints import ErrorPolicy, error_policies, required_labels, series_label_hints
from svclog.logql.engine.line_format_removal import remove_line_format
from svclog.logql.engine.logs import evaluate_logs
from svclog.logql.engine.params import QueryParams, step_times, validate
from svclog.logql.engine.range_agg import LOG_OPS, UNWRAP_OPS, windows
from svclog.logql.engine.result import (
    QueryResult,
)
from svclog.logql.engine.samples import COUNTING_OPS, ERROR_LABEL, SampleSeries, SeriesCap, select_samples
from svclog.logql.engine.series import ScalarSteps, SeriesSet
from svclog.logql.source import LogSource
from svclog.model import Labels, MatchType, ValidationError

DEFAULT_MAX_SERIES = 500


@dataclass(frozen=True)
class EvalContext:
    params: QueryParams
    source: LogSource
    steps: np.ndarray  # evaluation times, int64 ns
    label_hints: dict[int, frozenset[str]] = field(default_factory=dict)  # see hints.py
    guard: QueryGuard = field(default_factory=QueryGuard)
    caps: dict[int, SeriesCap] = field(default_factory=dict)  # range aggregations whose groups are the answer
    error_policies: dict[int, ErrorPolicy] = field(default_factory=dict)  # see hints.py
    required_labels: dict[int, frozenset[str]] = field(default_factory=dict)  # see hints.py
    mergers: dict[int, ast.VectorAggregation] = field(default_factory=dict)  # see frontend_merge.py
    merged: frozenset[int] = frozenset()  # see frontend_merge.merged_aggregations


def evaluate(
    expr: ast.Expr,
    params: QueryParams,
    source: LogSource,
    max_series: int = DEFAULT_MAX_SERIES,
    guard: QueryGuard | None = None,
) -> QueryResult:
    """`guard`: the query's deadline, cancellation and memory budget, checked as the engine reads."""
    validate(params)
    guard = guard if guard is not None else QueryGuard()
    if isinstance(expr, ast.LogQuery):
        if params.instant:
            raise ValidationError(
                "log queries are not supported as an instant query type, please change your query to a range query type"
            )
        return evaluate_logs(expr, params, source, guard)
    expr = remove_line_format(split_avg_over_time(expr))
    ctx = EvalContext(
        params,
        source,
        step_times(params),
        series_label_hints(expr),
        guard,
        _series_caps(expr, params, max_series),
        error_policies(expr),
        required_labels(expr),
        frontend_mergers(expr),
        merged_aggregations(expr),
    )
    return shape_answer(eval_sample(expr, ctx), params.instant, ctx.steps, max_series)


def _series_caps(expr: ast.Expr, params: QueryParams, max_series: int) -> dict[int, SeriesCap]:
    """A top-level range aggregation's groups are the answer's series when its windows cover
    every sample (step <= range): count them while reading, so the series limit fails fast."""
    if not isinstance(expr, ast.RangeAggregation) or expr.op == "absent_over_time":
        return {}
    if not params.instant and params.step > expr.range.range:
        return {}
    return {id(expr): SeriesCap(max_series, expr.grouping)}


@singledispatch
def eval_sample(node: object, ctx: EvalContext) -> SeriesSet | ScalarSteps:
    raise ValidationError(f"unsupported expression {type(node).__name__}")


@eval_sample.register
def _literal(node: ast.Literal, ctx: EvalContext) -> ScalarSteps:
    return ScalarSteps(np.full(len(ctx.steps), float(node.value)))


@eval_sample.register
def _vector(node: ast.VectorLiteral, ctx: EvalContext) -> SeriesSet:
    return functions.vector_literal(node.value, len(ctx.steps))


@eval_sample.register
def _label_replace(node: ast.LabelReplace, ctx: EvalContext) -> SeriesSet:
    inner = eval_sample(node.expr, ctx)
    if not isinstance(inner, SeriesSet):
        raise ValidationError("label_replace expects a vector")
    return functions.label_replace(node, inner)


@eval_sample.register
def _binary(node: ast.BinaryOp, ctx: EvalContext) -> SeriesSet | ScalarSteps:
    return binops.apply(node, eval_sample(node.lhs, ctx), eval_sample(node.rhs, ctx))


@eval_sample.register
def _vector_aggregation(node: ast.VectorAggregation, ctx: EvalContext) -> SeriesSet:
    inner = eval_sample(node.expr, ctx)
    if not isinstance(inner, SeriesSet):
        raise ValidationError(f"{node.op} expects a vector")
    return vector_agg.aggregate(node, inner, id(node) in ctx.merged)


@eval_sample.register
def _range_aggregation(node: ast.RangeAggregation, ctx: EvalContext) -> SeriesSet | ScalarSteps:
    log_range = node.range
    ends = ctx.steps - log_range.offset
    ops = UNWRAP_OPS if log_range.unwrap is not None else LOG_OPS
    if node.op not in ops and node.op != "absent_over_time":
        raise ValidationError(
            f"invalid aggregation {node.op} {'with' if log_range.unwrap is not None else 'without'} unwrap"
        )
    samples = select_samples(
        log_range,
        ctx.source,
        int(ends[0]) - log_range.range + 1,
        int(ends[-1]) + 1,
        keep=ctx.label_hints.get(id(node)),
        guard=ctx.guard,
        cap=ctx.caps.get(id(node)),
        required=ctx.required_labels.get(id(node)),
        values_read=node.op not in COUNTING_OPS,
    )
    # absent_over_time too fails on an error label it sees (the reference checks before answering)
    _check_errors(samples, ctx.error_policies.get(id(node), ErrorPolicy()), ends, log_range.range)
    if node.op == "absent_over_time":
        return _absent(log_range, samples, ends)
    samples = _group_samples(samples, node.grouping)
    fn = ops[node.op]
    n = len(samples)
    ctx.guard.charge(n * len(ends) * 9)  # the values (float64) and present (bool) matrices
    values = np.zeros((n, len(ends)))
    present = np.zeros((n, len(ends)), dtype=bool)
    for i, s in enumerate(samples):
        if i % 256 == 0:
            ctx.guard.check()
        w = windows(s.ts, s.values, ends, log_range.range, node.param)
        values[i] = fn(w)
        present[i] = w.count > 0
    result = SeriesSet([s.labels for s in samples], values, present).compact()
    merger = ctx.mergers.get(id(node))
    return result if merger is None else vector_agg.aggregate(merger, result)


def _group_samples(samples: list[SampleSeries], grouping: ast.Grouping | None) -> list[SampleSeries]:
    """`op(...) by (x)`: all samples of a group form one series (not an aggregate of aggregates)."""
    if grouping is None:
        return samples
    groups: dict[Labels, list[SampleSeries]] = {}
    for s in samples:
        groups.setdefault(group_labels(s.labels, grouping), []).append(s)
    out = []
    for key, members in groups.items():
        ts = np.concatenate([m.ts for m in members])
        vals = np.concatenate([m.values for m in members])
        order = np.argsort(ts, kind="stable")
        out.append(SampleSeries(key, ts[order], vals[order]))
    return out


def _check_errors(samples: list[SampleSeries], policy: ErrorPolicy, ends: np.ndarray, range_ns: int) -> None:
    """Fail on the first step whose window holds a sample with a disallowed error label.

    The reference checks each step's vector: a sample between windows (step > range) never
    reaches one, so its error does not fail the query."""
    first: tuple[int, SampleSeries, str] | None = None
    for s in samples:
        error = s.labels.get(ERROR_LABEL)
        if not error or policy.allows(error):
            continue
        step = _first_window(s.ts, ends, range_ns)
        if step is not None and (first is None or step < first[0]):
            first = (step, s, error)
    if first is not None:
        _, s, error = first
        raise ValidationError(
            f"pipeline error: '{error}' for series: '{s.labels}'.\n"
            f'Use a label filter to intentionally skip this error. (e.g | __error__!="{error}").\n'
            'To skip all potential errors you can match empty errors.(e.g __error__="")\n'
            'The label filter can also be specified after unwrap. (e.g | unwrap latency | __error__="" )\n'
        )


def _first_window(ts: np.ndarray, ends: np.ndarray, range_ns: int) -> int | None:
    """Index of the first step whose window (end - range, end] holds one of `ts` (sorted), or None."""
    idx = np.searchsorted(ends, ts, side="left")  # each sample's first end at or after it
    inside = idx < len(ends)
    hit = idx[inside][ends[idx[inside]] - range_ns < ts[inside]]
    return int(hit.min()) if len(hit) else None


def _absent(log_range: ast.LogRange, samples: list[SampleSeries], ends: np.ndarray) -> SeriesSet:
    seen = np.zeros(len(ends), dtype=bool)
    for s in samples:
        seen |= windows(s.ts, s.values, ends, log_range.range).count > 0
    labels: dict[str, str] = {}
    dropped: set[str] = set()
    for m in log_range.query.selector.matchers:
        if m.type is MatchType.EQ and m.name not in dropped:
            if m.name in labels:
                dropped.add(m.name)
                labels.pop(m.name)
            else:
                labels[m.name] = m.value
    return SeriesSet([Labels.from_dict(labels)], np.ones((1, len(ends))), ~seen[None, :]).compact()
