"""LogQL abstract syntax tree: frozen, plain-data nodes.

The parser builds these, the printer prints them, rewrites map Expr -> Expr with
`dataclasses.replace`, and the engine evaluates them. Nothing here executes.
Durations are integer nanoseconds; raw texts are kept where the printer must
reproduce what the user wrote (byte sizes, duration filters).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields, is_dataclass

from svclog.model import Matcher

# ---------------------------------------------------------------- log selection


@dataclass(frozen=True)
class StreamSelector:
    matchers: tuple[Matcher, ...]


@dataclass(frozen=True)
class FilterValue:
    """One operand of a line filter: a literal string, or `ip("...")` when `ip` is set."""

    value: str
    ip: bool = False


@dataclass(frozen=True)
class LineFilter:
    """`|= "a" or "b"`; op is one of |= != |~ !~ |> !> ; several values mean `or`."""

    op: str
    values: tuple[FilterValue, ...]


@dataclass(frozen=True)
class LabelExtraction:
    """`label="expression"` parameter of json/logfmt; expression None means the short form `label`."""

    label: str
    expression: str | None = None


@dataclass(frozen=True)
class JsonParser:
    params: tuple[LabelExtraction, ...] = ()


@dataclass(frozen=True)
class LogfmtParser:
    strict: bool = False
    keep_empty: bool = False
    params: tuple[LabelExtraction, ...] = ()


@dataclass(frozen=True)
class RegexpParser:
    pattern: str


@dataclass(frozen=True)
class PatternParser:
    pattern: str


@dataclass(frozen=True)
class UnpackParser:
    pass


# ---- label filter expressions (used by LabelFilter stages and after unwrap)


@dataclass(frozen=True)
class StringLabelFilter:
    """`name = "v"`, `name != "v"`, `name =~ "re"`, `name !~ "re"`."""

    matcher: Matcher


@dataclass(frozen=True)
class NumericLabelFilter:
    """`name op number`; op is one of == != > >= < <= (a bare `=` is stored as `==`)."""

    name: str
    op: str
    value: float
    raw: str


@dataclass(frozen=True)
class DurationLabelFilter:
    name: str
    op: str
    value: int  # nanoseconds
    raw: str


@dataclass(frozen=True)
class BytesLabelFilter:
    name: str
    op: str
    value: int  # bytes
    raw: str


@dataclass(frozen=True)
class IpLabelFilter:
    """`name = ip("cidr or range")` / `name != ip(...)`."""

    name: str
    op: str
    pattern: str


@dataclass(frozen=True)
class BinaryLabelFilter:
    """`a and b`, `a or b` (a comma or whitespace between filters means `and`)."""

    op: str  # "and" | "or"
    left: LabelFilterExpr
    right: LabelFilterExpr


LabelFilterExpr = (
    StringLabelFilter | NumericLabelFilter | DurationLabelFilter | BytesLabelFilter | IpLabelFilter | BinaryLabelFilter
)


@dataclass(frozen=True)
class LabelFilter:
    """A pipeline stage `| <label filter expression>`."""

    expr: LabelFilterExpr


@dataclass(frozen=True)
class LineFormat:
    template: str


@dataclass(frozen=True)
class LabelFormatOp:
    """`dst=src` (rename, is_template False) or `dst="{{ template }}"` (is_template True)."""

    dst: str
    src: str
    is_template: bool


@dataclass(frozen=True)
class LabelFormat:
    ops: tuple[LabelFormatOp, ...]


@dataclass(frozen=True)
class DropKeepItem:
    """A bare label name, or a matcher (`name="v"`, `name=~"re"`, ...) for drop/keep."""

    name: str
    matcher: Matcher | None = None


@dataclass(frozen=True)
class Drop:
    items: tuple[DropKeepItem, ...]


@dataclass(frozen=True)
class Keep:
    items: tuple[DropKeepItem, ...]


@dataclass(frozen=True)
class Decolorize:
    pass


Stage = (
    LineFilter
    | JsonParser
    | LogfmtParser
    | RegexpParser
    | PatternParser
    | UnpackParser
    | LabelFilter
    | LineFormat
    | LabelFormat
    | Drop
    | Keep
    | Decolorize
)


@dataclass(frozen=True)
class LogQuery:
    """A stream selector and its pipeline: a log query."""

    selector: StreamSelector
    stages: tuple[Stage, ...] = ()


# ---------------------------------------------------------------- metric expressions


@dataclass(frozen=True)
class Unwrap:
    """`| unwrap [conversion(]label[)]` with optional trailing label filters."""

    label: str
    conversion: str = ""  # "" | "duration" | "duration_seconds" | "bytes"
    post_filters: tuple[LabelFilterExpr, ...] = ()


@dataclass(frozen=True)
class LogRange:
    """`<log query> [range] offset <d>`, optionally unwrapped."""

    query: LogQuery
    range: int  # nanoseconds
    offset: int = 0  # nanoseconds
    unwrap: Unwrap | None = None


@dataclass(frozen=True)
class Grouping:
    without: bool
    labels: tuple[str, ...]


@dataclass(frozen=True)
class RangeAggregation:
    """`op(<log range>)`, e.g. rate, count_over_time, quantile_over_time(0.9, ...) by (x)."""

    op: str
    range: LogRange
    param: float | None = None
    grouping: Grouping | None = None


@dataclass(frozen=True)
class VectorAggregation:
    """`op by (x) ([param,] expr)`; param is k for topk/bottomk/approx_topk."""

    op: str
    expr: Expr
    grouping: Grouping | None = None
    param: float | None = None


@dataclass(frozen=True)
class VectorMatching:
    on: bool  # True: on(...), False: ignoring(...)
    labels: tuple[str, ...]
    card: str = "one-to-one"  # "one-to-one" | "many-to-one" (group_left) | "one-to-many" (group_right)
    include: tuple[str, ...] = ()


@dataclass(frozen=True)
class BinaryOp:
    op: str  # + - * / % ^ == != > >= < <= and or unless
    lhs: Expr
    rhs: Expr
    return_bool: bool = False
    matching: VectorMatching | None = None


@dataclass(frozen=True)
class Literal:
    value: float


@dataclass(frozen=True)
class VectorLiteral:
    """`vector(1)`."""

    value: float


@dataclass(frozen=True)
class LabelReplace:
    """`label_replace(expr, "dst", "replacement", "src", "regex")`."""

    expr: Expr
    dst: str
    replacement: str
    src: str
    regex: str


SampleExpr = RangeAggregation | VectorAggregation | BinaryOp | Literal | VectorLiteral | LabelReplace
Expr = LogQuery | SampleExpr


def is_log_query(expr: Expr) -> bool:
    return isinstance(expr, LogQuery)


def walk(node: object) -> Iterator[object]:
    """Every node below and including `node`, depth first."""
    yield node
    if is_dataclass(node):
        for f in fields(node):
            child = getattr(node, f.name)
            if isinstance(child, tuple):
                for item in child:
                    if is_dataclass(item):
                        yield from walk(item)
            elif is_dataclass(child):
                yield from walk(child)
