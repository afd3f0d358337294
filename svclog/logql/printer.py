"""AST -> canonical one-line LogQL text, the reference's String() form.

`print_expr` is lossless: `parse(print_expr(parse(q))) == parse(q)`. The one
place it differs from the reference is the spelling of number, duration and
byte label-filter values, which it keeps as written (the reference re-spells
them, and for byte sizes loses precision: `1MiB` prints as `1.0MB`).
`reference_text` is the reference's exact String() text; `format_query` (what
GET /format_query returns) is its pretty form, built in format.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from svclog.gocompat.durations import format_go_duration, format_prom_duration
from svclog.gocompat.fmt import format_float_f, format_float_v
from svclog.gocompat.strconv import quote as go_quote
from svclog.logql import ast
from svclog.model import Matcher

__all__ = ["format_query", "humanize_bytes", "print_expr", "reference_text"]


def print_expr(node: object) -> str:
    """Canonical text of any AST node (a whole query, a stage, a label filter...)."""
    return _Printer(reference=False).text(node)


def reference_text(node: object) -> str:
    """The reference's one-line String() of any AST node: filter values re-spelled as it does."""
    return _Printer(reference=True).text(node)


def format_query(text: str) -> str:
    """Parse `text` and print it exactly as the reference's format_query does (its pretty form)."""
    from svclog.logql.format import prettify  # format builds on this module
    from svclog.logql.parser import parse  # the parser never imports the printer

    return prettify(parse(text))


def humanize_bytes(size: int) -> str:
    """go-humanize Bytes() without the space: 110B, 20kB, 1.0MB."""
    if size < 10:
        return f"{size}B"
    exponent = min(math.floor(math.log(size) / math.log(1000)), 6)
    suffix = ("B", "kB", "MB", "GB", "TB", "PB", "EB")[exponent]
    value = math.floor(size / 1000**exponent * 10 + 0.5) / 10
    return f"{value:.0f}{suffix}" if value >= 10 else f"{value:.1f}{suffix}"


def _matcher(m: Matcher) -> str:
    return f"{m.name}{m.type.value}{go_quote(m.value)}"


def _grouping(grouping: ast.Grouping) -> str:
    word = "without" if grouping.without else "by"
    return f" {word} ({','.join(grouping.labels)})"


class _Printer:
    def __init__(self, reference: bool):
        self.reference = reference  # True: the reference's lossy spelling of filter values
        # keyed by node type: each printer takes exactly the type it is filed under
        self.table: dict[type, Callable[[Any], str]] = {
            ast.StreamSelector: self.selector,
            ast.LogQuery: self.log_query,
            ast.LineFilter: self.line_filter,
            ast.JsonParser: self.json_parser,
            ast.LogfmtParser: self.logfmt_parser,
            ast.RegexpParser: self.regexp_parser,
            ast.PatternParser: self.pattern_parser,
            ast.UnpackParser: lambda _: "| unpack",
            ast.LabelFilter: self.label_filter_stage,
            ast.LineFormat: self.line_format,
            ast.LabelFormat: self.label_format,
            ast.Drop: self.drop,
            ast.Keep: self.keep,
            ast.Decolorize: lambda _: "| decolorize",
            ast.StringLabelFilter: self.string_filter,
            ast.NumericLabelFilter: self.numeric_filter,
            ast.DurationLabelFilter: self.duration_filter,
            ast.BytesLabelFilter: self.bytes_filter,
            ast.IpLabelFilter: self.ip_filter,
            ast.BinaryLabelFilter: self.binary_filter,
            ast.Unwrap: self.unwrap,
            ast.LogRange: self.log_range,
            ast.RangeAggregation: self.range_aggregation,
            ast.VectorAggregation: self.vector_aggregation,
            ast.BinaryOp: self.binary_op,
            ast.Literal: self.literal,
            ast.VectorLiteral: self.vector_literal,
            ast.LabelReplace: self.label_replace,
            ast.Grouping: _grouping,
        }

    def text(self, node: object) -> str:
        printer = self.table.get(type(node))
        if printer is None:
            raise TypeError(f"cannot print {type(node).__name__}")
        return printer(node)

    # ---------------------------------------------------------------- log queries

    def selector(self, node: ast.StreamSelector) -> str:
        return "{" + ", ".join(_matcher(m) for m in node.matchers) + "}"

    def log_query(self, node: ast.LogQuery) -> str:
        parts = [self.selector(node.selector)] + [self.text(stage) for stage in node.stages]
        return " ".join(parts)

    def line_filter(self, node: ast.LineFilter) -> str:
        values = (f"ip({go_quote(v.value)})" if v.ip else go_quote(v.value) for v in node.values)
        return f"{node.op} " + " or ".join(values)

    @staticmethod
    def _extractions(params: tuple[ast.LabelExtraction, ...]) -> str:
        return ",".join(f"{p.label}={go_quote(p.label if p.expression is None else p.expression)}" for p in params)

    def json_parser(self, node: ast.JsonParser) -> str:
        return "| json " + self._extractions(node.params) if node.params else "| json"

    def logfmt_parser(self, node: ast.LogfmtParser) -> str:
        flags = [flag for flag, on in (("--strict", node.strict), ("--keep-empty", node.keep_empty)) if on]
        if not node.params:
            return " ".join(["| logfmt", *flags])
        return "| logfmt " + "".join(flag + " " for flag in flags) + self._extractions(node.params)

    def regexp_parser(self, node: ast.RegexpParser) -> str:
        return f"| regexp {go_quote(node.pattern)}"

    def pattern_parser(self, node: ast.PatternParser) -> str:
        return f"| pattern {go_quote(node.pattern)}"

    def label_filter_stage(self, node: ast.LabelFilter) -> str:
        return "| " + self.text(node.expr)

    def line_format(self, node: ast.LineFormat) -> str:
        return f"| line_format {go_quote(node.template)}"

    def label_format(self, node: ast.LabelFormat) -> str:
        ops = (f"{op.dst}={go_quote(op.src) if op.is_template else op.src}" for op in node.ops)
        return "| label_format " + ",".join(ops)

    @staticmethod
    def _drop_keep(word: str, items: tuple[ast.DropKeepItem, ...]) -> str:
        return f"| {word} " + ",".join(_matcher(i.matcher) if i.matcher else i.name for i in items)

    def drop(self, node: ast.Drop) -> str:
        return self._drop_keep("drop", node.items)

    def keep(self, node: ast.Keep) -> str:
        return self._drop_keep("keep", node.items)

    # ---------------------------------------------------------------- label filters

    def string_filter(self, node: ast.StringLabelFilter) -> str:
        return _matcher(node.matcher)

    def numeric_filter(self, node: ast.NumericLabelFilter) -> str:
        value = format_float_f(node.value) if self.reference else node.raw
        return f"{node.name}{node.op}{value}"

    def duration_filter(self, node: ast.DurationLabelFilter) -> str:
        value = format_go_duration(node.value) if self.reference else node.raw
        return f"{node.name}{node.op}{value}"

    def bytes_filter(self, node: ast.BytesLabelFilter) -> str:
        value = humanize_bytes(node.value) if self.reference else node.raw
        return f"{node.name}{node.op}{value}"

    def ip_filter(self, node: ast.IpLabelFilter) -> str:
        return f"{node.name}{node.op}ip({go_quote(node.pattern)})"

    def binary_filter(self, node: ast.BinaryLabelFilter) -> str:
        joiner = " , " if node.op == "and" else " or "
        return f"( {self.text(node.left)}{joiner}{self.text(node.right)} )"

    # ---------------------------------------------------------------- metric queries

    def unwrap(self, node: ast.Unwrap) -> str:
        target = f"{node.conversion}({node.label})" if node.conversion else node.label
        return f" | unwrap {target}" + "".join(f" | {self.text(f)}" for f in node.post_filters)

    def log_range(self, node: ast.LogRange) -> str:
        out = self.log_query(node.query)
        if node.unwrap is not None:
            out += self.unwrap(node.unwrap)
        out += f"[{format_prom_duration(node.range)}]"
        if node.offset:
            out += f" offset {format_go_duration(node.offset)}"
        return out

    def range_aggregation(self, node: ast.RangeAggregation) -> str:
        param = "" if node.param is None else format_float_f(node.param) + ","
        grouping = "" if node.grouping is None else _grouping(node.grouping)
        return f"{node.op}({param}{self.log_range(node.range)}){grouping}"

    def vector_aggregation(self, node: ast.VectorAggregation) -> str:
        grouping = node.grouping
        # a plain `by ()` groups everything into one series, like no grouping; it prints as none
        show = grouping is not None and (grouping.without or bool(grouping.labels))
        param = "" if node.param is None else f"{int(node.param)},"
        return f"{node.op}{_grouping(grouping) if show else ''}({param}{self.text(node.expr)})"  # type: ignore[arg-type]

    def binary_op(self, node: ast.BinaryOp) -> str:
        op = node.op + (" bool" if node.return_bool else "")
        matching = node.matching
        if matching is not None:
            group = {"many-to-one": "group_left", "one-to-many": "group_right"}.get(matching.card, "")
            if matching.include:
                group += f" ({','.join(matching.include)})"
            word = "on" if matching.on else "ignoring"
            # the reference drops a bare `ignoring ()` even with group_x; keep it when lossless
            if matching.on or matching.labels or (group and not self.reference):
                op = f"{op} {word} ({','.join(matching.labels)}) {group}"
        return f"({self.text(node.lhs)} {op} {self.text(node.rhs)})"

    def literal(self, node: ast.Literal) -> str:
        # "-0" would lex as a duration; the reference prints it anyway, the lossless form does not
        if node.value == 0 and not self.reference:
            return "0"
        return format_float_v(node.value)

    def vector_literal(self, node: ast.VectorLiteral) -> str:
        value = node.value
        if math.isinf(value):
            return "vector(+Inf)" if value > 0 else "vector(-Inf)"
        return "vector(NaN)" if math.isnan(value) else f"vector({value:f})"

    def label_replace(self, node: ast.LabelReplace) -> str:
        args = [self.text(node.expr)] + [go_quote(s) for s in (node.dst, node.replacement, node.src, node.regex)]
        return "label_replace(" + ",".join(args) + ")"
