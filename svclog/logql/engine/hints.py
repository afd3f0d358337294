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

from dataclasses import dataclass

from svclog.logql import ast
from svclog.logql.engine import stages_bridge as sb
from svclog.logql.template import Template, TemplateError

ADDITIVE_OPS = frozenset({"count_over_time", "rate", "bytes_over_time", "bytes_rate", "sum_over_time"})
HINTED_PARSERS = (ast.LogfmtParser, ast.JsonParser)
ALL_PARSERS = (ast.LogfmtParser, ast.JsonParser, ast.RegexpParser, ast.PatternParser, ast.UnpackParser)
ERROR_LABELS = frozenset({"__error__", "__error_details__"})
EXTRACTED_SUFFIX = "_extracted"
# The errors the reference's parsers mark as wanted (`__preserve_error__`) when the query reads `__error__`
PARSER_ERRORS = frozenset({"JSONParserErr", "LogfmtParserErr"})


@dataclass(frozen=True)
class ErrorPolicy:
    """Which pipeline errors a range aggregation may carry into its result instead of failing.

    The reference builds its sample extractor with the labels the query can observe (the
    aggregation's grouping, or an enclosing `sum`'s for additive ops) and those its stages read:
    - with no label observable at all (`sum(count_over_time(... | json [5m]))`), parsers do not run,
      so their errors cannot happen (`parsers_idle`);
    - with a `by` grouping (own or enclosing `sum`) and `__error__` among those labels, parser errors
      are results (`sum by (__error__) (...)`, `... | __error__!="" ...` under `sum by (app)`);
    - otherwise any error label at a step fails the query, even if a filter selected it.
    """

    parsers_idle: bool = False
    keep_parser_errors: bool = False

    def allows(self, error: str) -> bool:
        return error in PARSER_ERRORS and (self.parsers_idle or self.keep_parser_errors)


def error_policies(expr: object) -> dict[int, ErrorPolicy]:
    """id(range aggregation node) -> its ErrorPolicy (absent: every error fails the query)."""
    enclosing = _enclosing_sum_groupings(expr)
    policies: dict[int, ErrorPolicy] = {}
    for node in ast.walk(expr):
        if not isinstance(node, ast.RangeAggregation):
            continue
        grouping = node.grouping if node.grouping is not None else enclosing.get(id(node))
        absent = node.op == "absent_over_time"
        # measured on the reference: a line_format template's fields never make absent_over_time's
        # parsers run (its parser errors pass), while label_format's do
        read = _read_labels(node.range, line_format=not absent)
        if absent or (grouping is not None and not grouping.without and not grouping.labels):
            policies[id(node)] = ErrorPolicy(parsers_idle=not read, keep_parser_errors="__error__" in read)
        elif grouping is not None and not grouping.without and grouping.labels:
            observed = read | set(grouping.labels)
            policies[id(node)] = ErrorPolicy(keep_parser_errors="__error__" in observed)
    return policies


def required_labels(expr: object) -> dict[int, frozenset[str]]:
    """id(range aggregation node) -> the labels the reference's parsers are told are required,
    where it tells them: with a `by (...)` grouping (own, or an enclosing sum's for additive ops)
    the grouping plus what the stages and unwrap read; with nothing observable (`by ()`,
    absent_over_time) what they read. Once an entry has all of them parsed, later parsers
    skip it (stages.pipeline.SkipWhenExtracted): `| logfmt | json` under `sum by (level)` runs
    json only on the entries logfmt found no level in."""
    enclosing = _enclosing_sum_groupings(expr)
    required: dict[int, frozenset[str]] = {}
    for node in ast.walk(expr):
        if not isinstance(node, ast.RangeAggregation):
            continue
        grouping = node.grouping if node.grouping is not None else enclosing.get(id(node))
        absent = node.op == "absent_over_time"
        no_labels = absent or (grouping is not None and not grouping.without and not grouping.labels)
        if not no_labels and (grouping is None or grouping.without):
            continue
        names = _read_labels(node.range, line_format=not absent)
        if not no_labels and grouping is not None:
            names |= set(grouping.labels)
        # a required `x_extracted` is also asked for as `x`, the key it is parsed from
        names |= {name[: -len(EXTRACTED_SUFFIX)] for name in names if name.endswith(EXTRACTED_SUFFIX)}
        if names:
            required[id(node)] = frozenset(names)
    return required


def _enclosing_sum_groupings(expr: object) -> dict[int, ast.Grouping]:
    """id(range aggregation) -> the grouping of the `sum` right around it, when the reference
    hands that grouping down (an additive op without a grouping of its own)."""
    enclosing: dict[int, ast.Grouping] = {}
    for node in ast.walk(expr):
        if isinstance(node, ast.VectorAggregation) and node.op == "sum":
            inner = node.expr
            if isinstance(inner, ast.RangeAggregation) and inner.grouping is None and inner.op in ADDITIVE_OPS:
                enclosing[id(inner)] = node.grouping or ast.Grouping(without=False, labels=())
    return enclosing


def _read_labels(log_range: ast.LogRange, line_format: bool = True) -> set[str]:
    """The labels the pipeline's stages and unwrap read (the reference's required label names)."""
    names: set[str] = set()
    for stage in log_range.query.stages:
        if isinstance(stage, ast.LabelFilter):
            names |= _filter_names(stage)
        elif isinstance(stage, ast.LineFormat) and line_format:
            names |= _template_fields(stage.template)
        elif isinstance(stage, ast.LabelFormat):
            for op in stage.ops:
                names |= _template_fields(op.src) if op.is_template else {op.src}
    if log_range.unwrap is not None:
        names.add(log_range.unwrap.label)
        for post in log_range.unwrap.post_filters:
            names |= _filter_names(post)
    return names


def _template_fields(template: str) -> set[str]:
    """Labels a template reads by name (the reference lists its field nodes); an invalid template
    reads none here: its stage reports the error when the query runs."""
    try:
        return set(Template.parse(template).referenced_labels())
    except TemplateError:
        return set()


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
        if isinstance(node, ast.RangeAggregation) and node.op == "absent_over_time":
            note(node, frozenset())  # only presence counts; parsers extract what stages read
        elif isinstance(node, ast.RangeAggregation):
            grouping = node.grouping
            if grouping is not None and not grouping.without:
                note(node, frozenset(grouping.labels))
        if isinstance(node, ast.VectorAggregation) and node.op == "sum":
            inner = node.expr
            grouping = node.grouping
            if (
                isinstance(inner, ast.RangeAggregation)
                and inner.grouping is None
                and inner.op in ADDITIVE_OPS
                and (grouping is None or not grouping.without)
            ):
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
    for stage in stages[parsers[0] + 1 :]:
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
            if not sb.reads_no_label(part):
                names.add(part.matcher.name)
        elif isinstance(
            part, (ast.NumericLabelFilter, ast.DurationLabelFilter, ast.BytesLabelFilter, ast.IpLabelFilter)
        ):
            names.add(part.name)
    return names
