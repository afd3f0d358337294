"""The pretty form GET /format_query returns: the reference's `syntax.Prettify`.

An expression whose one-line form (printer.reference_text) fits in 100 bytes
prints as that line, indented two spaces per level. A longer one breaks:
pipeline stages go one per line a level deeper, aggregations put their
arguments on their own lines between `op(` and `)`, binary operations put the
operator on a line of its own between the operands (which go a level deeper and
lose their parentheses), and a log range keeps `[range]` on its query's last line.

Two quirks of the reference are kept on purpose: when a chain of line filters is
itself too long, the filter ending each over-long prefix prints its first value
only (its `or` alternatives are dropped), and `| decolorize` is not indented.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from svclog.gocompat.durations import format_prom_duration
from svclog.gocompat.fmt import format_float_v
from svclog.gocompat.strconv import quote as go_quote
from svclog.logql import ast
from svclog.logql.printer import reference_text

__all__ = ["MAX_LINE", "prettify"]

MAX_LINE = 100  # bytes of one-line text above which an expression breaks


def prettify(expr: ast.Expr) -> str:
    return _pretty(expr, 0)


def _indent(level: int) -> str:
    return "  " * level


def _too_long(text: str) -> bool:
    return len(text.encode()) > MAX_LINE


def _pretty(node: object, level: int) -> str:
    return _TABLE[type(node)](node, level)


def _one_line(node: object, level: int) -> str:
    return _indent(level) + reference_text(node)


def _log_query(node: ast.LogQuery, level: int) -> str:
    line = reference_text(node)
    if not node.stages or not _too_long(line):
        return _indent(level) + line
    stages = [_stage(stage, level + 1) for stage in _stage_groups(node.stages)]
    return "\n".join([_one_line(node.selector, level), *stages])


def _stage_groups(stages: tuple[ast.Stage, ...]) -> list[object]:
    """Consecutive line filters form one stage (a chain) in the reference's AST."""
    groups: list[object] = []
    for stage in stages:
        if isinstance(stage, ast.LineFilter) and groups and isinstance(groups[-1], list):
            groups[-1].append(stage)
        else:
            groups.append([stage] if isinstance(stage, ast.LineFilter) else stage)
    return groups


def _stage(stage: object, level: int) -> str:
    if isinstance(stage, list):
        return _line_filters(stage, level)
    if isinstance(stage, ast.Decolorize):
        return reference_text(stage)
    return _one_line(stage, level)


def _line_filters(chain: list[ast.LineFilter], level: int) -> str:
    line = " ".join(reference_text(f) for f in chain)
    if not _too_long(line):
        return _indent(level) + line
    last = chain[-1]
    head = _line_filters(chain[:-1], level) + "\n" if len(chain) > 1 else ""
    return head + _indent(level) + reference_text(ast.LineFilter(last.op, last.values[:1]))


def _unwrap(node: ast.Unwrap, level: int) -> str:
    target = f"{node.conversion}({node.label})" if node.conversion else node.label
    lines = [f"{_indent(level)}| unwrap {target}"]
    lines += [f"{_indent(level)}| {reference_text(f)}" for f in node.post_filters]
    return "\n".join(lines)


def _log_range(node: ast.LogRange, level: int) -> str:
    text = _log_query(node.query, level)
    if node.unwrap is not None:
        text += "\n" + _unwrap(node.unwrap, level + 1)
    text += f" [{format_prom_duration(node.range)}]"
    if node.offset:
        text += f" offset {format_prom_duration(node.offset)}"
    return text


def _grouping(grouping: ast.Grouping | None) -> str:
    if grouping is None:
        return ""
    text = " without" if grouping.without else " by" if grouping.labels else ""
    return text + (f" ({', '.join(grouping.labels)})" if grouping.labels else "")


def _call(head: str, args: list[str], level: int) -> str:
    return head + "(\n" + ",\n".join(args) + "\n" + _indent(level) + ")"


def _range_aggregation(node: ast.RangeAggregation, level: int) -> str:
    if not _too_long(reference_text(node)):
        return _one_line(node, level)
    args = [] if node.param is None else [_indent(level + 1) + format_float_v(node.param)]
    args.append(_log_range(node.range, level + 1))
    return _call(_indent(level) + node.op, args, level) + _grouping(node.grouping)


def _vector_aggregation(node: ast.VectorAggregation, level: int) -> str:
    if not _too_long(reference_text(node)):
        return _one_line(node, level)
    param = int(node.param or 0)
    args = [f"{_indent(level + 1)}{param}"] if node.op in ("topk", "bottomk") or param else []
    args.append(_pretty(node.expr, level + 1))
    return _call(_indent(level) + node.op + _grouping(node.grouping), args, level)


def _operator(node: ast.BinaryOp) -> str:
    op = node.op + (" bool" if node.return_bool else "")
    matching = node.matching
    if matching is None or not matching.labels:
        return op
    group = {"many-to-one": "group_left", "one-to-many": "group_right"}.get(matching.card, "")
    if matching.include:
        group += f" ({', '.join(matching.include)})"
    word = "on" if matching.on else "ignoring"
    return f"{op} {word} ({', '.join(matching.labels)}) {group}"


def _binary_op(node: ast.BinaryOp, level: int) -> str:
    if not _too_long(reference_text(node)):
        return _one_line(node, level)
    return "\n".join([_pretty(node.lhs, level + 1), _indent(level) + _operator(node), _pretty(node.rhs, level + 1)])


def _label_replace(node: ast.LabelReplace, level: int) -> str:
    if not _too_long(reference_text(node)):
        return _one_line(node, level)
    strings = (node.dst, node.replacement, node.src, node.regex)
    args = [_pretty(node.expr, level + 1)] + [_indent(level + 1) + go_quote(s) for s in strings]
    return _call(_indent(level) + "label_replace", args, level)


# keyed by node type: each function takes exactly the node type it is filed under
_TABLE: dict[type, Callable[[Any, int], str]] = {
    ast.LogQuery: _log_query,
    ast.RangeAggregation: _range_aggregation,
    ast.VectorAggregation: _vector_aggregation,
    ast.BinaryOp: _binary_op,
    ast.LabelReplace: _label_replace,
    ast.Literal: _one_line,
    ast.VectorLiteral: _one_line,
}
