"""Label hints: which labels a range aggregation's series must carry, and which a parser must extract.

A range aggregation normally keys its series by every label an entry ends up with; after
`| logfmt` that includes per-line values such as a trace id, so every line becomes its own
series and every key of every line is extracted. Two shapes make most of that work
unobservable, and for them the evaluator may keep fewer labels (`series_label_hints`):

- `op(...) by (a, b)`: the samples are regrouped by `a, b` before `op` runs;
- `sum by (a, b) (op(...))` with an additive `op` (count, rate, bytes, sum): summing per-series
  values over any finer split of the same group gives the same number.

A parser followed only by filters then needs to extract just the labels that are kept or
read later (`parser_labels`). Queries of any other shape run without hints.
"""
from __future__ import annotations

from svclog.logql import ast

ADDITIVE_OPS = frozenset({"count_over_time", "rate", "bytes_over_time", "bytes_rate", "sum_over_time"})
HINTED_PARSERS = (ast.LogfmtParser, ast.JsonParser)
ALL_PARSERS = (ast.LogfmtParser, ast.JsonParser, ast.RegexpParser, ast.PatternParser, ast.UnpackParser)
ERROR_LABELS = frozenset({"__error__", "__error_details__"})


def series_label_hints(expr: object) -> dict[int, frozenset[str]]:
    """id(range aggregation node) -> the labels its series need; absent: all of them."""
    hints: dict[int, frozenset[str]] = {}
    conflicting: set[int] = set()

    def note(node: ast.RangeAggregation, labels: frozenset[str]) -> None:
        key = id(node)
        if key in hints and hints[key] != labels:
            conflicting.add(key)  # one node object in two contexts: play safe
        hints[key] = labels

    for node in ast.walk(expr):
        if isinstance(node, ast.RangeAggregation) and node.op != "absent_over_time":
            grouping = node.grouping
            if grouping is not None and not grouping.without:
                note(node, frozenset(grouping.labels))
        if isinstance(node, ast.VectorAggregation) and node.op == "sum":
            inner = node.expr
            grouping = node.grouping
            if (isinstance(inner, ast.RangeAggregation) and inner.grouping is None
                    and inner.op in ADDITIVE_OPS and (grouping is None or not grouping.without)):
                note(inner, frozenset(grouping.labels) if grouping is not None else frozenset())
    for key in conflicting:
        hints.pop(key)
    return hints


def parser_labels(log_range: ast.LogRange, keep: frozenset[str]) -> frozenset[str] | None:
    """The labels the pipeline's parser must produce when series keep only `keep`; None when
    the pipeline needs everything (no parser, several, or a stage after it that may read or
    rewrite any label)."""
    stages = log_range.query.stages
    parsers = [i for i, stage in enumerate(stages) if isinstance(stage, ALL_PARSERS)]
    if len(parsers) != 1 or not isinstance(stages[parsers[0]], HINTED_PARSERS):
        return None
    needed = set(keep)
    for stage in stages[parsers[0] + 1:]:
        if isinstance(stage, ast.LineFilter):
            continue
        if not isinstance(stage, ast.LabelFilter):
            return None
        needed |= _filter_names(stage)
    unwrap = log_range.unwrap
    if unwrap is not None:
        needed.add(unwrap.label)
        for post in unwrap.post_filters:
            needed |= _filter_names(post)
    return frozenset(needed - ERROR_LABELS)


def _filter_names(node: object) -> set[str]:
    names = set()
    for part in ast.walk(node):
        if isinstance(part, ast.StringLabelFilter):
            names.add(part.matcher.name)
        elif isinstance(part, (ast.NumericLabelFilter, ast.DurationLabelFilter, ast.BytesLabelFilter,
                               ast.IpLabelFilter)):
            names.add(part.name)
    return names
