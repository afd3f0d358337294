"""Go values as Python values: type names, truth, default (`%v`) formatting.

Mapping: string->str, bool->bool, int->int, int64->GoInt64, float64->float,
nil->None, time.Time->GoTime, map->Mapping (keys sorted when printed), slice->list.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from svclog.logql.template.gotime import GoTime


class GoInt64(int):
    """An int64 result (Sprig math); Go refuses it where a function wants `int`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return int.__repr__(self)

    __str__ = __repr__


def type_name(v: object) -> str:
    if v is None:
        return "<nil>"
    t = type(v)
    if t is str:
        return "string"
    if t is bool:
        return "bool"
    if t is GoInt64:
        return "int64"
    if t is int:
        return "int"
    if t is float:
        return "float64"
    if t is GoTime:
        return "time.Time"
    if isinstance(v, Mapping):
        return "map[string]interface {}"
    if isinstance(v, list):
        return "[]interface {}"
    return t.__name__


def truth(v: object) -> bool:
    """Go template truth: false, 0, nil and empty string/slice/map are false."""
    if v is None:
        return False
    if isinstance(v, (str, bool, int, float, Mapping, list)):
        return bool(v) if not isinstance(v, float) or not math.isnan(v) else True
    return True


def _float_digits(f: float) -> tuple[str, int]:
    """Shortest round-trip digits of |f| and the decimal point position (Go's digs.nd/dp)."""
    r = repr(abs(f))
    if "e" in r:
        mant, exp = r.split("e")
        digits = mant.replace(".", "")
        dp = int(exp) + 1
    else:
        ip, fp = r.split(".")
        if ip == "0":
            stripped = fp.lstrip("0")
            digits, dp = stripped, -(len(fp) - len(stripped))
        else:
            digits, dp = ip + fp, len(ip)
    digits = digits.rstrip("0")
    if not digits:
        return "0", 1
    return digits, dp


def format_float_shortest(f: float, exp_char: str = "e") -> str:
    """Go's %v / %g (shortest) for a float64."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    sign = "-" if f < 0 or (f == 0 and math.copysign(1.0, f) < 0) else ""
    digits, dp = _float_digits(f)
    if f == 0:
        return sign + "0"
    exp = dp - 1
    # Go's shortest %g switches to exponent form at exponent < -4 or >= 6 (not 21 as JSON).
    if exp < -4 or exp >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mant}{exp_char}{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if dp <= 0:
        return f"{sign}0.{'0' * -dp}{digits}"
    if dp >= len(digits):
        return sign + digits + "0" * (dp - len(digits))
    return f"{sign}{digits[:dp]}.{digits[dp:]}"


def format_v(v: object) -> str:
    """fmt's `%v` of a value."""
    t = type(v)
    if t is str:
        return v  # type: ignore[return-value]
    if t is bool:
        return "true" if v else "false"
    if t is int or t is GoInt64:
        return int.__repr__(v)
    if t is float:
        return format_float_shortest(v)  # type: ignore[arg-type]
    if v is None:
        return "<nil>"
    if isinstance(v, Mapping):
        return "map[" + " ".join(f"{k}:{format_v(v[k])}" for k in sorted(v)) + "]"
    if isinstance(v, list):
        return "[" + " ".join(format_v(x) for x in v) + "]"
    return str(v)
