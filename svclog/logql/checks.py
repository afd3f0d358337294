"""The reference parser's semantic rules, applied while the AST is built.

Each check raises ParseError with the reference's wording. Messages without a
position are prefixed `parse error : ` like the reference's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import cast

from lark.exceptions import UnexpectedInput

from svclog.logql import ast
from svclog.logql.goregexp import GoRegexError, parse_perl
from svclog.model import Matcher, MatchType, ParseError, compile_go_regexp, is_valid_label_name

EMPTY_MATCHERS_ERROR = (
    "queries require at least one regexp or equality matcher that does not have an "
    'empty-compatible value. For instance, app=~".*" does not meet this requirement, '
    'but app=~".+" will'
)

# Which range aggregations need, allow or refuse `| unwrap`, a parameter and grouping.
NEEDS_UNWRAP = {
    "avg_over_time",
    "sum_over_time",
    "max_over_time",
    "min_over_time",
    "stddev_over_time",
    "stdvar_over_time",
    "quantile_over_time",
    "first_over_time",
    "last_over_time",
    "rate_counter",
}
NO_UNWRAP = {"count_over_time", "bytes_over_time", "bytes_rate"}
GROUPING_ALLOWED = {
    "avg_over_time",
    "stddev_over_time",
    "stdvar_over_time",
    "quantile_over_time",
    "max_over_time",
    "min_over_time",
    "first_over_time",
    "last_over_time",
}
K_AGGREGATIONS = {"topk", "bottomk", "approx_topk"}
LOGICAL_OPS = {"and", "or", "unless"}
COMPARISON_OPS = {"==", "!=", ">", ">=", "<", "<="}


def fail(message: str) -> ParseError:
    return ParseError(f"parse error : {message}", 0, 0)


# ------------------------------------------------------------------ syntax errors

_TOKEN_NAMES = {
    "_LBRACE": "{",
    "_RBRACE": "}",
    "_LPAREN": "(",
    "_RPAREN": ")",
    "_COMMA": ",",
    "_PIPE": "|",
    "EQ": "=",
    "NEQ": "!=",
    "RE": "=~",
    "NRE": "!~",
    "NPA": "!>",
    "PIPE_EXACT": "|=",
    "PIPE_MATCH": "|~",
    "PIPE_PATTERN": "|>",
    "CMP_EQ": "==",
    "GT": ">",
    "GTE": ">=",
    "LT": "<",
    "LTE": "<=",
    "ADD": "+",
    "SUB": "-",
    "MUL": "*",
    "DIV": "/",
    "MOD": "%",
    "POW": "^",
    "LABEL_FMT": "label_format",
    "LINE_FMT": "line_format",
    "$END": "$end",
    "FLAG": "PARSER_FLAG",
}
_PLAIN_NAMES = {"IDENTIFIER", "STRING", "NUMBER", "DURATION", "BYTES", "RANGE"}


def _token_name(kind: str, value: str = "") -> str:
    if kind in _TOKEN_NAMES:
        return _TOKEN_NAMES[kind]
    if kind in _PLAIN_NAMES:
        return kind
    if kind == "ILLEGAL":
        return repr(value)
    if kind in ("RANGE_OP", "VECTOR_OP", "CONV_OP", "VECTOR", "LABEL_REPLACE", "IP") and value:
        return value.upper()
    return kind.lower()


def empty_query_error() -> ParseError:
    """What parsing an empty (or absent) query gives: the reference's parser has no position
    then and prints none, and its handlers parse a missing `query` as the empty one."""
    return ParseError("parse error : syntax error: unexpected $end")


def syntax_error(text: str, err: UnexpectedInput) -> ParseError:
    """A yacc-style message: `syntax error: unexpected X, expecting A or B`."""
    if not text:
        return empty_query_error()
    token = getattr(err, "token", None)
    kind = getattr(token, "type", "$END")
    if kind == "$END":
        line = text.count("\n") + 1
        column = len(text) - (text.rfind("\n") + 1) + 1
    else:
        line, column = token.line, token.column  # type: ignore[union-attr]
    message = f"syntax error: unexpected {_token_name(kind, str(token or ''))}"
    expected = sorted(getattr(err, "accepts", None) or getattr(err, "expected", None) or ())
    if 0 < len(expected) <= 4:  # like goyacc, list the alternatives only when there are few
        message += ", expecting " + " or ".join(_token_name(name) for name in expected)
    return ParseError(f"parse error at line {line}, col {column}: {message}", line, column)


# ------------------------------------------------------------------ literals and matchers

_DECIMAL = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_HEX_FLOAT = re.compile(r"^[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+$")


def parse_go_float(text: str) -> float:
    """strconv.ParseFloat(text, 64): decimal or hexadecimal (with p exponent) floats only."""
    if _DECIMAL.match(text):
        value = float(text)
    elif _HEX_FLOAT.match(text):
        value = float.fromhex(text)
    else:
        raise ValueError(f'strconv.ParseFloat: parsing "{text}": invalid syntax')
    if math.isinf(value):
        raise ValueError(f'strconv.ParseFloat: parsing "{text}": value out of range')
    return value


def make_matcher(name: str, op: MatchType, value: str) -> Matcher:
    if op in (MatchType.RE, MatchType.NRE):
        # the reference's matcher parses the value alone (then anchors it): its error shows the
        # value, and `a)|(b`, valid only inside ^(?s:...)$, is an error
        try:
            parse_perl(value)
        except GoRegexError as err:
            raise fail(str(err)) from None
    try:
        return Matcher(name, op, value)
    except ParseError as err:
        raise fail(err.message) from None


def check_selectors(expr: object) -> None:
    """Every selector must pick streams with at least one non-empty-matching matcher."""
    for node in ast.walk(expr):
        selects = isinstance(node, ast.StreamSelector) and any(not m.matches_empty() for m in node.matchers)
        if isinstance(node, ast.StreamSelector) and not selects:
            raise fail(EMPTY_MATCHERS_ERROR)


# ------------------------------------------------------------------ parser stages


def _regex_error(pattern: str) -> str | None:
    """Why RE2 (the reference's regex dialect) rejects `pattern`, or None if it is valid."""
    try:
        compile_go_regexp(pattern)
    except ParseError as err:
        return err.message
    return None


def named_groups(pattern: str) -> list[str]:
    """Names of `(?P<name>...)` / `(?<name>...)` groups, skipping escapes and [classes]."""
    names: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "]":
                i += 1
        elif ch == "(":
            match = re.match(r"\(\?P?<([^>=!][^>]*)>", pattern[i:])
            if match:
                names.append(match.group(1))
        i += 1
    return names


def check_regexp_parser(pattern: str) -> None:
    error = _regex_error(pattern)
    names = named_groups(pattern) if error is None else []
    if error is None and not names:
        error = "at least one named capture must be supplied"
    for name in names:
        if error is None and not is_valid_label_name(name):
            error = f"invalid extracted label name '{name}'"
    if error is None and len(set(names)) != len(names):
        error = "duplicate extracted label name"
    if error is not None:
        raise fail(f"invalid regexp parser: {error}")


_PATTERN_CAPTURE = re.compile(r"<([A-Za-z_][A-Za-z0-9_]*)>")


def check_pattern_parser(pattern: str) -> None:
    nodes: list[tuple[str, str]] = []  # ("capture", name) or ("literal", text)
    pos = 0
    for match in _PATTERN_CAPTURE.finditer(pattern):
        if match.start() > pos:
            nodes.append(("literal", pattern[pos : match.start()]))
        nodes.append(("capture", match.group(1)))
        pos = match.end()
    if pos < len(pattern):
        nodes.append(("literal", pattern[pos:]))
    names = [value for kind, value in nodes if kind == "capture" and value != "_"]
    error = None
    if not names:
        error = "at least one capture is required"
    # the reference only compares nodes pairwise from even positions
    for i in range(0, len(nodes) - 1, 2):
        if error is None and nodes[i][0] == nodes[i + 1][0] == "capture":
            error = "found consecutive capture: invalid expression"
    if error is None and len(set(names)) != len(names):
        duplicate = next(n for i, n in enumerate(names) if n in names[:i])
        error = f"duplicate capture name ({duplicate}): invalid expression"
    if error is not None:
        raise fail(f"invalid pattern parser: {error}")


def check_label_format(ops: Iterable[ast.LabelFormatOp]) -> None:
    seen: set[str] = set()
    for op in ops:
        if op.dst in seen:
            raise fail(f"multiple label name '{op.dst}' appears in formatting")
        seen.add(op.dst)


def check_label_replace(regex: str) -> None:
    error = _regex_error(f"^(?:{regex})$")
    if error is not None:
        raise fail(f"invalid regex in label_replace: {error}")


# ------------------------------------------------------------------ metric expressions


def make_range_aggregation(
    op: str, log_range: ast.LogRange, param: str | None, grouping: ast.Grouping | None
) -> ast.RangeAggregation:
    value = None
    if param is not None:
        if op != "quantile_over_time":
            raise fail(f"parameter {param} not supported for operation {op}")
        try:
            value = parse_go_float(param)
        except ValueError as err:
            raise fail(f"invalid parameter for operation {op}: {err}") from None
    elif op == "quantile_over_time":
        raise fail(f"parameter required for operation {op}")
    if grouping is not None and op not in GROUPING_ALLOWED:
        raise fail(f"grouping not allowed for {op} aggregation")
    if log_range.unwrap is not None and op in NO_UNWRAP:
        raise fail(f"invalid aggregation {op} with unwrap")
    if log_range.unwrap is None and op in NEEDS_UNWRAP:
        raise fail(f"invalid aggregation {op} without unwrap")
    return ast.RangeAggregation(op, log_range, value, grouping)


def make_vector_aggregation(
    op: str, inner: object, grouping: ast.Grouping | None, param: str | None
) -> ast.VectorAggregation:
    _check_sample(inner, op)
    value = None
    if op in K_AGGREGATIONS:
        if param is None:
            raise fail(f"parameter required for operation {op}")
        if not re.fullmatch(r"[+-]?\d+", param):
            raise fail(f"invalid parameter {op}({param},")
        if int(param) <= 0:
            raise fail(f"invalid parameter (must be greater than 0) {op}({param}")
        if op == "approx_topk" and grouping is not None:
            raise fail(f"grouping not allowed for {op} aggregation")
        value = float(int(param))
    elif param is not None:
        raise fail(f"unsupported parameter for operation {op}({param},")
    if op in ("sort", "sort_desc") and grouping is not None and grouping.labels:
        raise fail("sort and sort_desc doesn't allow grouping by ")
    if grouping is not None and not grouping.without and not grouping.labels:
        grouping = None  # `by ()` is the same as no grouping, and prints as none
    return ast.VectorAggregation(op, inner, grouping, value)  # type: ignore[arg-type]


def _check_sample(expr: object, op: str, side: str = "") -> ast.SampleExpr:
    if isinstance(expr, ast.LogQuery):
        where = f"{side} leg of binary operation ({op})" if side else f"argument of {op}"
        raise fail(f"unexpected type for {where}: log query")
    return cast(ast.SampleExpr, expr)  # the grammar gives only expressions here


def make_binop(
    op: str, lhs: object, rhs: object, return_bool: bool, matching: ast.VectorMatching | None
) -> ast.SampleExpr:
    left = _check_sample(lhs, op, "left")
    right = _check_sample(rhs, op, "right")
    if op in LOGICAL_OPS:
        for side, value in (("left", left), ("right", right)):
            if isinstance(value, ast.Literal):
                raise fail(f"unexpected literal for {side} leg of logical/set binary operation ({op}): {value.value:f}")
    if isinstance(left, ast.Literal) and isinstance(right, ast.Literal):
        # the reference folds constant expressions while parsing: (1 + 1) is 2
        return ast.Literal(fold_literals(op, left.value, right.value))
    return ast.BinaryOp(op, left, right, return_bool, matching)


def fold_literals(op: str, left: float, right: float) -> float:
    """Go float semantics: x/0 and x%0 are NaN, comparisons give 1 or 0."""
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if op == "/":
        return math.nan if right == 0 else left / right
    if op == "%":
        return math.nan if right == 0 or math.isinf(left) else math.fmod(left, right)
    if op == "^":
        return go_pow(left, right)
    results = {
        "==": left == right,
        "!=": left != right,
        ">": left > right,
        ">=": left >= right,
        "<": left < right,
        "<=": left <= right,
    }
    return 1.0 if results[op] else 0.0


def go_pow(base: float, exp: float) -> float:
    """math.Pow with Go's answers where Python's math.pow raises."""
    try:
        return math.pow(base, exp)
    except OverflowError:
        odd = float(exp).is_integer() and int(exp) % 2 == 1
        return -math.inf if base < 0 and odd else math.inf
    except ValueError:
        if base == 0:
            odd = float(exp).is_integer() and int(exp) % 2 == 1
            return -math.inf if odd and math.copysign(1.0, base) < 0 else math.inf
        return math.nan
