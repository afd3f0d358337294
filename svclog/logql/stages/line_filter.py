"""Line filters: `|= "a"`, `!= "a"`, `|~ "re"`, `!~ "re"`, `|> "pattern"`, `!> "pattern"`.

Several operands (`|= "a" or "b"`) match when any operand matches, except that an operand
keeping every line is left out of the `or`, as the reference's `or` drops an always-true side:
`|= "" or "b"` keeps the lines with "b". The negated forms keep a line only when no operand
matches (`!= "a" or "b"` is not-a and not-b). `|=` is a substring search; a `|~` regex runs as
the reference runs it, often rewritten into substring filters (regex_filter.py); `ip("...")`
operands and patterns go through ip.py and pattern_parser.py.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql import ast
from svclog.logql.goregexp.syntax import GoRegexError
from svclog.logql.stages.batch import LogBatch
from svclog.logql.stages.ip import ip_mask, parse_ip_pattern
from svclog.logql.stages.pattern_parser import Pattern, pattern_line_mask
from svclog.logql.stages.regex_filter import (
    Always,
    Contains,
    Filter,
    check_regex,
    check_regexes,
    filter_mask,
    literal_regex,
    regex_filter,
)
from svclog.model import ParseError

__all__ = ["LineFilterStage", "check_regex", "line_filter_mask", "literal_regex", "operand_mask"]

_NEGATED = {"!=", "!~", "!>"}


def operand_filter(op: str, value: ast.FilterValue) -> Filter | None:
    """The reference's filter for a `|=`/`|~` operand (ignoring negation); None for ip and patterns."""
    if value.ip or op in ("|>", "!>"):
        return None
    if op in ("|=", "!="):
        return Contains(value.value.encode(), False) if value.value else Always()
    try:
        return regex_filter(value.value, label=False, negate=False)
    except GoRegexError as err:
        raise ParseError(str(err)) from None


def operand_mask(op: str, value: ast.FilterValue, lines: pa.Array) -> pa.Array:
    """Does each line match one operand (ignoring negation)?"""
    if value.ip:
        return ip_mask(lines, value.value)
    found = operand_filter(op, value)
    if found is None:
        return pattern_line_mask(lines, value.value)
    return filter_mask(found, lines)


def line_filter_mask(node: ast.LineFilter, lines: pa.Array) -> pa.Array:
    negated = node.op in _NEGATED
    values = node.values
    if not negated:
        # an operand keeping every line drops out of the `or` (`|= "" or "b"` keeps lines with b)
        values = tuple(v for v in values if not isinstance(operand_filter(node.op, v), Always))
    if not values:
        return pa.repeat(pa.scalar(not negated), len(lines))
    mask: pa.Array | None = None
    for value in values:
        hit = operand_mask(node.op, value, lines)
        if hit.null_count:  # a null line matches nothing (chunk lines are never null: no copy)
            hit = pc.fill_null(hit, False)
        mask = hit if mask is None else pc.or_(mask, hit)
    return pc.invert(mask) if negated else mask


class LineFilterStage:
    def __init__(self, node: ast.LineFilter):
        if node.op not in ("|=", "!=", "|~", "!~", "|>", "!>"):
            raise ParseError(f"unknown line filter operator {node.op!r}")
        for value in node.values:
            if value.ip:
                if node.op not in ("|=", "!="):
                    raise ParseError("ip: invalid operation")
                parse_ip_pattern(value.value)
            elif node.op in ("|~", "!~"):
                found = operand_filter(node.op, value)
                assert found is not None
                check_regexes(found)
            elif node.op in ("|>", "!>"):
                Pattern.parse(value.value, need_capture=False)
        self.node = node

    def process(self, batch: LogBatch) -> LogBatch:
        return batch.filter(line_filter_mask(self.node, batch.line))
