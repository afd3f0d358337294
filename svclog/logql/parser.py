"""LogQL text -> AST. `parse` is the entry point; every invalid input raises ParseError.

The grammar lives in grammar.lark and the tokens come from lexer.py; this module
builds the frozen AST from the parse (on each reduction, so deep nesting costs no
recursion) and applies the reference's semantic rules (checks.py).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, cast

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedInput

from svclog.gocompat.humanize import parse_bytes
from svclog.logql import ast, checks
from svclog.logql.lexer import LogQLLexer, parse_logql_duration
from svclog.model import Matcher, MatchType, ParseError, parse_prom_duration

__all__ = ["MAX_QUERY_LENGTH", "parse", "parse_log_query", "parse_selector"]

MAX_QUERY_LENGTH = 5120  # the reference rejects longer query texts

_CONVERSIONS = {"bytes", "duration", "duration_seconds"}


class _Stages(tuple[Any, ...]):
    """Several pipeline stages produced by one grammar stage (a split `!= "a" or "b"`)."""


class _LineFilter(_Stages):
    """The stages of one line filter, with where its `or` chain stops being valid.

    The reference's grammar lets `ip()` end an `or` segment: the first filter of a run of
    line filters may hold two segments (`lineFilter OR orFilter`), a later one only one.
    `stray_or` is the `or` token the reference rejects in each position, if any.
    """

    stray_or: tuple[Token | None, Token | None] = (None, None)


class _Offset(int):
    """An `offset` duration in nanoseconds, tagged so log_range can tell it from the range."""


def _number(text: str) -> float:
    try:
        return checks.parse_go_float(text)
    except ValueError as err:
        raise checks.fail(f"unable to parse literal as a float: {err}") from None


def _labels(items: list[Any]) -> tuple[str, ...]:
    for item in items:
        if isinstance(item, tuple):
            return item
    return ()


class _Builder(Transformer[Token, Any]):
    """One method per grammar rule (or alias), each returning an AST node or a helper value."""

    # ---------------------------------------------------------------- log queries

    def start(self, items: list[Any]) -> ast.Expr:
        return cast(ast.Expr, items[0])

    def log_query(self, items: list[Any]) -> ast.LogQuery:
        return ast.LogQuery(items[0], _flatten(items[1:]))

    def selector(self, items: list[Matcher]) -> ast.StreamSelector:
        return ast.StreamSelector(tuple(items))

    def matcher(self, items: list[Any]) -> Matcher:
        name, op, value = items
        return checks.make_matcher(str(name), op, str(value))

    def match_op(self, items: list[Token]) -> MatchType:
        return MatchType(str(items[0]))

    def line_filter(self, items: list[Any]) -> _Stages:
        op = str(items[0])
        values = tuple(item for item in items[1:] if isinstance(item, ast.FilterValue))
        if op.startswith("|"):
            stages = _LineFilter([ast.LineFilter(op, values)])
        else:
            # not (a or b) == not a and not b: the reference turns the chain into single filters
            stages = _LineFilter(ast.LineFilter(op, (value,)) for value in values)
        ors = [item for item in items[1:] if isinstance(item, Token) and item.type == "OR"]
        ips = [i for i, value in enumerate(values) if value.ip]
        # value i is followed by ors[i]; an `or` after a segment-ending ip() is a syntax error
        first, later = (ors[ips[n]] if len(ips) > n and ips[n] < len(ors) else None for n in (1, 0))
        stages.stray_or = (first, later)
        return stages

    def filter_op(self, items: list[Token]) -> str:
        return str(items[0])

    def filter_value(self, items: list[Token]) -> ast.FilterValue:
        if len(items) == 1:
            return ast.FilterValue(str(items[0]))
        return ast.FilterValue(str(items[1]), ip=True)

    def json_parser(self, items: list[Any]) -> ast.JsonParser:
        return ast.JsonParser(_extractions(items))

    def logfmt_parser(self, items: list[Any]) -> ast.LogfmtParser:
        flags = {str(item) for item in items if isinstance(item, Token) and item.type == "FLAG"}
        return ast.LogfmtParser("--strict" in flags, "--keep-empty" in flags, _extractions(items))

    def extractions(self, items: list[ast.LabelExtraction]) -> tuple[ast.LabelExtraction, ...]:
        return tuple(items)

    def extraction(self, items: list[Token]) -> ast.LabelExtraction:
        label = str(items[0])
        expression = str(items[2]) if len(items) == 3 else None
        # `a` and `a="a"` mean the same; keep one spelling so printing round-trips
        return ast.LabelExtraction(label, None if expression == label else expression)

    def regexp_parser(self, items: list[Token]) -> ast.RegexpParser:
        pattern = str(items[1])
        checks.check_regexp_parser(pattern)
        return ast.RegexpParser(pattern)

    def pattern_parser(self, items: list[Token]) -> ast.PatternParser:
        pattern = str(items[1])
        checks.check_pattern_parser(pattern)
        return ast.PatternParser(pattern)

    def unpack_parser(self, items: list[Token]) -> ast.UnpackParser:
        return ast.UnpackParser()

    def label_filter_stage(self, items: list[Any]) -> ast.LabelFilter:
        return ast.LabelFilter(items[0])

    def line_format(self, items: list[Token]) -> ast.LineFormat:
        return ast.LineFormat(str(items[1]))

    def label_format(self, items: list[Any]) -> ast.LabelFormat:
        ops = tuple(item for item in items if isinstance(item, ast.LabelFormatOp))
        checks.check_label_format(ops)
        return ast.LabelFormat(ops)

    def label_rename(self, items: list[Token]) -> ast.LabelFormatOp:
        return ast.LabelFormatOp(str(items[0]), str(items[2]), is_template=False)

    def label_template(self, items: list[Token]) -> ast.LabelFormatOp:
        return ast.LabelFormatOp(str(items[0]), str(items[2]), is_template=True)

    def decolorize(self, items: list[Token]) -> ast.Decolorize:
        return ast.Decolorize()

    def drop(self, items: list[Any]) -> ast.Drop:
        return ast.Drop(tuple(item for item in items if isinstance(item, ast.DropKeepItem)))

    def keep(self, items: list[Any]) -> ast.Keep:
        return ast.Keep(tuple(item for item in items if isinstance(item, ast.DropKeepItem)))

    def named_matcher(self, items: list[Any]) -> ast.DropKeepItem:
        item = items[0]
        if isinstance(item, Matcher):
            return ast.DropKeepItem(item.name, item)
        return ast.DropKeepItem(str(item))

    # ---------------------------------------------------------------- label filters

    def lf_string(self, items: list[Any]) -> ast.StringLabelFilter:
        name, op, value = items
        return ast.StringLabelFilter(checks.make_matcher(str(name), op, str(value)))

    def lf_ip(self, items: list[Any]) -> ast.IpLabelFilter:
        return ast.IpLabelFilter(str(items[0]), items[1], str(items[3]))

    def lf_duration(self, items: list[Any]) -> ast.DurationLabelFilter:
        raw = str(items[2])
        return ast.DurationLabelFilter(str(items[0]), items[1], parse_logql_duration(raw), raw)

    def lf_bytes(self, items: list[Any]) -> ast.BytesLabelFilter:
        raw = str(items[2])
        return ast.BytesLabelFilter(str(items[0]), items[1], parse_bytes(raw), raw)

    def lf_number(self, items: list[Any]) -> ast.NumericLabelFilter:
        value, raw = items[2]
        return ast.NumericLabelFilter(str(items[0]), items[1], value, raw)

    def lf_and(self, items: list[Any]) -> ast.BinaryLabelFilter:
        left, right = (item for item in items if not isinstance(item, Token))
        return ast.BinaryLabelFilter("and", left, right)

    def lf_or(self, items: list[Any]) -> ast.BinaryLabelFilter:
        left, right = (item for item in items if not isinstance(item, Token))
        return ast.BinaryLabelFilter("or", left, right)

    def ip_op(self, items: list[Token]) -> str:
        return str(items[0])

    def compare_op(self, items: list[Token]) -> str:
        op = str(items[0])
        return "==" if op == "=" else op

    def number(self, items: list[Token]) -> tuple[float, str]:
        raw = "".join(str(item) for item in items)
        value = _number(str(items[-1]))
        return (-value if items[0].type == "SUB" else value), raw

    # ---------------------------------------------------------------- log ranges

    def log_range(self, items: list[Any]) -> ast.LogRange:
        selector = items[0]
        stages: list[Any] = []
        range_ns = offset = 0
        unwrap = None
        for item in items[1:]:
            if isinstance(item, Token):
                range_ns = parse_prom_duration(str(item))
            elif isinstance(item, _Offset):
                offset = int(item)
            elif isinstance(item, ast.Unwrap):
                unwrap = item
            else:
                stages.append(item)
        return ast.LogRange(ast.LogQuery(selector, _flatten(stages)), range_ns, offset, unwrap)

    def paren_range(self, items: list[Any]) -> ast.LogRange:
        return cast(ast.LogRange, items[0])

    def offset(self, items: list[Token]) -> _Offset:
        return _Offset(parse_logql_duration(str(items[1])))

    def unwrap(self, items: list[Token]) -> ast.Unwrap:
        if len(items) == 2:
            return ast.Unwrap(str(items[1]))
        return ast.Unwrap(str(items[2]), conversion=str(items[1]))

    def unwrap_filter(self, items: list[Any]) -> ast.Unwrap:
        unwrap, extra = items
        return ast.Unwrap(unwrap.label, unwrap.conversion, unwrap.post_filters + (extra,))

    # ---------------------------------------------------------------- metric queries

    def binop(self, items: list[Any]) -> ast.SampleExpr:
        lhs, op, modifier, rhs = items
        return_bool, matching = modifier
        return checks.make_binop(str(op), lhs, rhs, return_bool, matching)

    def and_op(self, items: list[Token]) -> str:
        return str(items[0])

    cmp_op = add_op = mul_op = and_op

    def bin_modifier(self, items: list[Any]) -> tuple[bool, ast.VectorMatching | None]:
        return_bool = any(isinstance(item, Token) and item.type == "BOOL" for item in items)
        on_ignoring = next((item for item in items if isinstance(item, ast.VectorMatching)), None)
        if on_ignoring is None:
            return return_bool, None
        side = next((item for item in items if isinstance(item, str) and not isinstance(item, Token)), None)
        card = {"group_left": "many-to-one", "group_right": "one-to-many"}.get(side or "", "one-to-one")
        include = _labels(items)
        if not on_ignoring.on and not on_ignoring.labels and card == "one-to-one":
            return return_bool, None  # `ignoring ()` alone changes nothing
        return return_bool, ast.VectorMatching(on_ignoring.on, on_ignoring.labels, card, include)

    def on_ignoring(self, items: list[Any]) -> ast.VectorMatching:
        return ast.VectorMatching(on=items[0].type == "ON", labels=_labels(items))

    def group_side(self, items: list[Token]) -> str:
        return str(items[0]).lower()

    def literal(self, items: list[Any]) -> ast.Literal:
        return ast.Literal(items[0][0])

    def vector_literal(self, items: list[Token]) -> ast.VectorLiteral:
        return ast.VectorLiteral(_number(str(items[1])))

    def range_aggregation(self, items: list[Any]) -> ast.RangeAggregation:
        op = str(items[0])
        param = str(items[1]) if isinstance(items[1], Token) else None
        log_range = next(item for item in items if isinstance(item, ast.LogRange))
        grouping = next((item for item in items if isinstance(item, ast.Grouping)), None)
        return checks.make_range_aggregation(op, log_range, param, grouping)

    def vector_aggregation(self, items: list[Any]) -> ast.VectorAggregation:
        op = str(items[0])
        param = next((str(item) for item in items[1:] if isinstance(item, Token)), None)
        grouping = next((item for item in items if isinstance(item, ast.Grouping)), None)
        inner = next(item for item in items[1:] if not isinstance(item, (Token, ast.Grouping)))
        return checks.make_vector_aggregation(op, inner, grouping, param)

    def label_replace(self, items: list[Any]) -> ast.LabelReplace:
        _, inner, dst, replacement, src, regex = items
        checks.check_label_replace(str(regex))
        return ast.LabelReplace(inner, str(dst), str(replacement), str(src), str(regex))

    def grouping(self, items: list[Any]) -> ast.Grouping:
        return ast.Grouping(without=items[0].type == "WITHOUT", labels=_labels(items))

    def labels(self, items: list[Token]) -> tuple[str, ...]:
        return tuple(str(item) for item in items)


def _flatten(stages: list[Any]) -> tuple[ast.Stage, ...]:
    out: list[ast.Stage] = []
    first_of_run = True
    for stage in stages:
        if isinstance(stage, _LineFilter):
            stray = stage.stray_or[0 if first_of_run else 1]
            if stray is not None:
                line, col = stray.line or 0, stray.column or 0  # the lexer sets both on every token
                raise ParseError(f"parse error at line {line}, col {col}: syntax error: unexpected or", line, col)
        first_of_run = not isinstance(stage, _LineFilter)
        if isinstance(stage, _Stages):
            out.extend(stage)
        else:
            out.append(stage)
    return tuple(out)


def _extractions(items: list[Any]) -> tuple[ast.LabelExtraction, ...]:
    return next((item for item in items if isinstance(item, tuple) and not isinstance(item, Token)), ())


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = (Path(__file__).with_name("grammar.lark")).read_text()
    return Lark(grammar, parser="lalr", lexer=LogQLLexer, transformer=_Builder(), maybe_placeholders=False)


def build_tables() -> None:
    """Build the parser's tables now (~70 ms): a server calls it at start, on a thread, so that
    its first query does not wait for them."""
    _parser()


def _parse_tree(text: str) -> ast.Expr:
    if len(text) >= MAX_QUERY_LENGTH:
        raise checks.fail(f"input size too long ({len(text)} > {MAX_QUERY_LENGTH})")
    try:
        # the parser's inline transformer (_Builder) turns the tree into our AST as it parses
        return cast(ast.Expr, _parser().parse(text))
    except ParseError:
        raise
    except UnexpectedInput as err:
        raise checks.syntax_error(text, err) from None
    except RecursionError:
        raise checks.fail("query is nested too deeply") from None
    except Exception as err:  # noqa: BLE001 - a bug or an unforeseen input must still be a ParseError
        raise checks.fail(str(err) or type(err).__name__) from None


def parse(text: str, *, validate: bool = True) -> ast.Expr:
    """Parse a full LogQL query (log or metric) into the AST.

    With `validate` (the default) every stream selector must have a matcher that
    does not match the empty string, as the reference requires of queries.
    """
    expr = _parse_tree(text)
    if validate:
        checks.check_selectors(expr)
    return expr


def parse_log_query(text: str, *, validate: bool = True) -> ast.LogQuery:
    """A log query (selector and optional pipeline); metric queries are rejected."""
    expr = parse(text, validate=validate)
    if not isinstance(expr, ast.LogQuery):
        raise checks.fail("only log selector is supported")
    return expr


def parse_selector(text: str, *, validate: bool = True) -> ast.StreamSelector:
    """A bare stream selector like `{app="x", env=~"prod|dev"}` (series match[], labels query)."""
    query = parse_log_query(text, validate=validate)
    if query.stages:
        raise checks.fail("only label matchers is supported")
    return query.selector
