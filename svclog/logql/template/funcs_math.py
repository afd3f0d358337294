"""Math and conversion template functions (Sprig semantics over spf13/cast conversions).

Integer math works on int64 after a lenient cast (bad input counts as 0); the `f`
variants go through exact decimals like Sprig, so `addf 0.1 0.2` is 0.3.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Context, Decimal

from svclog.gocompat.durations import parse_go_duration
from svclog.gocompat.humanize import parse_bytes
from svclog.logql.template.goconv import INT64_MIN, parse_float, parse_int, wrap_int64
from svclog.logql.template.values import GoInt64

_DEC = Context(prec=80)
_DIV_QUANTUM = Decimal(1).scaleb(-16)  # shopspring/decimal DivisionPrecision


def _trim_zero_decimal(s: str) -> str:
    """cast's trimZeroDecimal: "5.00" -> "5", other text unchanged."""
    head, dot, frac = s.rpartition(".")
    if dot and frac and set(frac) == {"0"}:
        return head
    return s


def to_int64(v: object) -> int:
    """cast.ToInt64 with the error ignored (Sprig's toInt64)."""
    if v is None:
        return 0
    t = type(v)
    if t is bool:
        return 1 if v else 0
    if t is int or t is GoInt64:
        return wrap_int64(v)  # type: ignore[arg-type]
    if t is float:
        f: float = v  # type: ignore[assignment]
        if math.isnan(f) or not -(2.0**63) <= f < 2.0**63:
            return INT64_MIN
        return int(f)
    if t is str:
        parsed = parse_int(_trim_zero_decimal(v), leading_zero_octal=False)  # type: ignore[arg-type]
        return 0 if parsed is None else parsed
    return 0


def to_float64(v: object) -> float:
    """cast.ToFloat64 with the error ignored."""
    if v is None:
        return 0.0
    t = type(v)
    if t is bool or t is int or t is GoInt64:
        return float(v)  # type: ignore[arg-type]
    if t is float:
        return v  # type: ignore[return-value]
    if t is str:
        parsed = parse_float(v)  # type: ignore[arg-type]
        return 0.0 if parsed is None else parsed
    return 0.0


def _i64(v: int) -> GoInt64:
    return GoInt64(wrap_int64(v))


def _go_div(a: int, b: int) -> tuple[int, int]:
    """Truncated division and remainder, as Go's / and % on int64."""
    if b == 0:
        raise ZeroDivisionError("runtime error: integer divide by zero")
    q = abs(a) // abs(b)
    q = q if (a < 0) == (b < 0) else -q
    return q, a - q * b


def add(*vals: object) -> GoInt64:
    return _i64(sum(to_int64(v) for v in vals))


def mul(a: object, *vals: object) -> GoInt64:
    out = to_int64(a)
    for v in vals:
        out = wrap_int64(out * to_int64(v))
    return _i64(out)


def _dec(v: object) -> Decimal:
    f = to_float64(v)
    if math.isnan(f) or math.isinf(f):
        raise ValueError(f"Cannot create a Decimal from {f}")
    return Decimal(repr(f))


def _decimal_op(op: str, first: object, rest: tuple[object, ...]) -> float:
    acc = _dec(first)
    for v in rest:
        d = _dec(v)
        if op == "+":
            acc = _DEC.add(acc, d)
        elif op == "-":
            acc = _DEC.subtract(acc, d)
        elif op == "*":
            acc = _DEC.multiply(acc, d)
        else:
            if d == 0:
                raise ZeroDivisionError("decimal division by zero")
            acc = _DEC.divide(acc, d).quantize(_DIV_QUANTUM, rounding=ROUND_HALF_UP, context=_DEC)
    return float(acc)


def go_max_f(a: float, b: float) -> float:
    if math.isinf(a) and a > 0 or math.isinf(b) and b > 0:
        return math.inf
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == b == 0:
        return a if math.copysign(1, a) > 0 else b
    return max(b, a)


def go_min_f(a: float, b: float) -> float:
    if math.isinf(a) and a < 0 or math.isinf(b) and b < 0:
        return -math.inf
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == b == 0:
        return a if math.copysign(1, a) < 0 else b
    return min(b, a)


def maxf(a: object, *vals: object) -> float:
    out = to_float64(a)
    for v in vals:
        out = go_max_f(out, to_float64(v))
    return out


def minf(a: object, *vals: object) -> float:
    out = to_float64(a)
    for v in vals:
        out = go_min_f(out, to_float64(v))
    return out


def _ceil(a: object) -> float:
    f = to_float64(a)
    return f if math.isinf(f) or math.isnan(f) else float(math.ceil(f))


def _floor(a: object) -> float:
    f = to_float64(a)
    return f if math.isinf(f) or math.isnan(f) else float(math.floor(f))


def go_round(a: object, places: int, *round_on: float) -> float:
    """Sprig round: round up when the fraction reaches round_on (default .5)."""
    on = round_on[0] if round_on else 0.5
    pow10 = math.pow(10, places)
    digit = pow10 * to_float64(a)
    if math.isinf(digit) or math.isnan(digit):
        return digit / pow10
    frac = math.modf(digit)[0]
    return (math.ceil(digit) if frac >= on else math.floor(digit)) / pow10


def convert_bytes(s: str) -> float:
    """go-humanize ParseBytes ("1.5 KiB", "42MB", "1,000")."""
    return float(parse_bytes(s))


def convert_duration(s: str) -> float:
    """time.ParseDuration(s).Seconds()."""
    ns = parse_go_duration(s)
    sec, nsec = _go_div(ns, 1_000_000_000)
    return sec + nsec / 1e9


MATH_FUNCS: dict[str, tuple[object, tuple[str, ...], str | None]] = {
    "int": (lambda v: to_int64(v), ("any",), None),
    "float64": (to_float64, ("any",), None),
    "add": (add, (), "any"),
    "sub": (lambda a, b: _i64(to_int64(a) - to_int64(b)), ("any", "any"), None),
    "mul": (mul, ("any",), "any"),
    "div": (lambda a, b: _i64(_go_div(to_int64(a), to_int64(b))[0]), ("any", "any"), None),
    "mod": (lambda a, b: _i64(_go_div(to_int64(a), to_int64(b))[1]), ("any", "any"), None),
    "addf": (lambda *v: _decimal_op("+", 0.0, v), (), "any"),
    "subf": (lambda a, *v: _decimal_op("-", a, v), ("any",), "any"),
    "mulf": (lambda a, *v: _decimal_op("*", a, v), ("any",), "any"),
    "divf": (lambda a, *v: _decimal_op("/", a, v), ("any",), "any"),
    "max": (lambda a, *v: _i64(max([to_int64(a), *map(to_int64, v)])), ("any",), "any"),
    "min": (lambda a, *v: _i64(min([to_int64(a), *map(to_int64, v)])), ("any",), "any"),
    "maxf": (maxf, ("any",), "any"),
    "minf": (minf, ("any",), "any"),
    "ceil": (_ceil, ("any",), None),
    "floor": (_floor, ("any",), None),
    "round": (go_round, ("any", "int"), "float"),
    "bytes": (convert_bytes, ("str",), None),
    "duration": (convert_duration, ("str",), None),
    "duration_seconds": (convert_duration, ("str",), None),
}
