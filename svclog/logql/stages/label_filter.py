"""Label filters: `| status >= 500`, `| level="error" or duration > 1s`, `| ip = ip("10.0.0.0/8")`.

Semantics of the reference, evaluated column-wise:
- string matchers compare the value, an absent label counting as ""; `__error__`
  reads the entry's error (`__error_details__` is not a label to matchers: always "");
  a regex runs as the reference runs it (regex_filter.py): often as substring or equality
  filters (`msg=~"miss.*"` keeps "cache miss"), else anchored, with `.` stopping at a newline;
- number/duration/bytes filters drop entries without the label and keep entries whose
  value does not convert, recording `LabelFilterErr` unless an error is already set;
- `ip()` filters keep entries that already carry an error;
- `or` evaluates its right side only where the left side failed, `and` evaluates both,
  so the error recorded by a conversion follows the reference's evaluation order.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import singledispatch

import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql import ast
from svclog.logql.goregexp.syntax import GoRegexError
from svclog.logql.stages import convert
from svclog.logql.stages.batch import (
    ERR_LABEL_FILTER,
    ERROR_DETAILS_LABEL,
    ERROR_LABEL,
    LogBatch,
)
from svclog.logql.stages.ip import ip_mask, parse_ip_pattern
from svclog.logql.stages.regex_filter import Always, Filter, check_regex, check_regexes, filter_mask, regex_filter
from svclog.model import Matcher, MatchType, ParseError

_COMPARE = {
    "==": pc.equal,
    "!=": pc.not_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
    "<": pc.less,
    "<=": pc.less_equal,
}


def anchored(regex: str) -> str:
    return f"^(?s:{regex})$"


def matcher_mask(matcher: Matcher, values: pa.Array) -> pa.Array:
    """Matcher over values (null counts as ""), with RE2 kernels: a stream selector's or drop/keep's
    matcher (Prometheus' semantics: anchored, `.` matching a newline)."""
    values = pc.fill_null(values, "")
    if matcher.type is MatchType.EQ:
        return pc.equal(values, matcher.value)
    if matcher.type is MatchType.NEQ:
        return pc.not_equal(values, matcher.value)
    hit = pc.match_substring_regex(values, anchored(matcher.value))
    return hit if matcher.type is MatchType.RE else pc.invert(hit)


class _State:
    """The error columns as they evolve while one filter expression is evaluated."""

    def __init__(self, batch: LogBatch):
        self.batch = batch
        self.error = batch.label(ERROR_LABEL)
        self.details = batch.label(ERROR_DETAILS_LABEL)
        self.changed = False

    def fork(self) -> _State:
        copy = _State.__new__(_State)
        copy.batch, copy.error, copy.details = self.batch, self.error, self.details
        copy.changed = self.changed
        return copy

    def record(self, failed: pa.Array, messages: pa.Array) -> None:
        """LabelFilterErr where conversion failed and no error was set yet."""
        fresh = pc.and_(pc.fill_null(failed, False), pc.is_null(self.error))
        if pc.any(fresh).as_py():
            self.error = pc.if_else(fresh, pa.scalar(ERR_LABEL_FILTER), self.error)
            self.details = pc.if_else(fresh, messages, self.details)
            self.changed = True


@singledispatch
def _eval(expr: object, state: _State) -> pa.Array:
    raise ParseError(f"unsupported label filter {expr!r}")


def string_filter(matcher: Matcher) -> Filter | None:
    """The reference's filter for a label filter's regex; None for `=`/`!=`, or when Go's parser
    rejects the regex alone (the reference then falls back to the label matcher)."""
    if matcher.type not in (MatchType.RE, MatchType.NRE):
        return None
    try:
        return regex_filter(matcher.value, label=True, negate=matcher.type is MatchType.NRE)
    except GoRegexError:
        return None


def reads_no_label(expr: ast.StringLabelFilter) -> bool:
    """Whether the reference builds this filter as a no-op: a positive regex it reduces to its
    TrueFilter (`x=~".*"`, `x=~""`) keeps every entry, reads no label and so asks no parser for one."""
    return isinstance(string_filter(expr.matcher), Always)


@_eval.register
def _(expr: ast.StringLabelFilter, state: _State) -> pa.Array:
    name = expr.matcher.name
    if name == ERROR_LABEL:
        values = state.error
    elif name == ERROR_DETAILS_LABEL:
        values = pa.nulls(len(state.batch), pa.string())
    else:
        values = state.batch.label(name)
    found = string_filter(expr.matcher)
    if found is None:
        return matcher_mask(expr.matcher, values)
    return filter_mask(found, pc.fill_null(values, ""))


def _converted(
    state: _State, name: str, op: str, target: float, parse: Callable[[pa.Array], tuple[pa.Array, pa.Array]]
) -> pa.Array:
    values = state.batch.label(name)
    numbers, errors = parse(values)
    failed = pc.and_(pc.is_valid(values), pc.is_valid(errors))
    state.record(failed, errors)
    if op not in _COMPARE:
        raise ParseError(f"unknown comparison {op!r}")
    result = pc.fill_null(_COMPARE[op](numbers, pa.scalar(float(target))), False)
    return pc.or_(result, failed)


@_eval.register
def _(expr: ast.NumericLabelFilter, state: _State) -> pa.Array:
    return _converted(state, expr.name, expr.op, expr.value, convert.parse_float_values)


@_eval.register
def _(expr: ast.DurationLabelFilter, state: _State) -> pa.Array:
    return _converted(state, expr.name, expr.op, expr.value, convert.parse_duration_ns_values)


@_eval.register
def _(expr: ast.BytesLabelFilter, state: _State) -> pa.Array:
    return _converted(state, expr.name, expr.op, expr.value, convert.parse_bytes_values)


@_eval.register
def _(expr: ast.IpLabelFilter, state: _State) -> pa.Array:
    values = state.batch.label(expr.name)
    hit = pc.fill_null(ip_mask(values, expr.pattern), False)
    if expr.op in ("!=",):
        hit = pc.and_(pc.invert(hit), pc.is_valid(values))
    return pc.or_(hit, pc.is_valid(state.error))


@_eval.register
def _(expr: ast.BinaryLabelFilter, state: _State) -> pa.Array:
    left = _eval(expr.left, state)
    if expr.op == "and":
        return pc.and_(left, _eval(expr.right, state))
    before = state.fork()
    right = _eval(expr.right, state)
    # The right side only ran where the left side failed.
    state.error = pc.if_else(left, before.error, state.error)
    state.details = pc.if_else(left, before.details, state.details)
    return pc.or_(left, right)


def label_filter_mask(expr: ast.LabelFilterExpr, batch: LogBatch) -> pa.Array:
    """Which entries pass; conversion errors are recorded on `batch` (`__error__`...)."""
    state = _State(batch)
    mask = pc.fill_null(_eval(expr, state), False)
    if state.changed and state.error.null_count < len(batch):
        batch.set_label(ERROR_LABEL, state.error)
        batch.set_label(ERROR_DETAILS_LABEL, state.details)
    return mask


def validate_label_filter(expr: ast.LabelFilterExpr) -> None:
    """Build-time checks: regexes compile, ip patterns parse."""
    if isinstance(expr, ast.BinaryLabelFilter):
        validate_label_filter(expr.left)
        validate_label_filter(expr.right)
    elif isinstance(expr, ast.StringLabelFilter) and expr.matcher.type in (MatchType.RE, MatchType.NRE):
        found = string_filter(expr.matcher)
        if found is None:
            check_regex(anchored(expr.matcher.value))
        else:
            check_regexes(found)
    elif isinstance(expr, ast.IpLabelFilter):
        parse_ip_pattern(expr.pattern)


class LabelFilterStage:
    def __init__(self, node: ast.LabelFilter):
        validate_label_filter(node.expr)
        self.expr = node.expr

    def process(self, batch: LogBatch) -> LogBatch:
        return batch.filter(label_filter_mask(self.expr, batch))
