"""Go's float spellings: fmt %v of a float64 and strconv.FormatFloat(v, 'f', -1, 64), as the
reference's canonical query text and sample values print them."""

from __future__ import annotations

import math
from decimal import Decimal

__all__ = ["format_float_f", "format_float_v"]


def _shortest_digits(value: float) -> tuple[str, int]:
    """Shortest round-trip digits of |value| and the decimal exponent of the first digit."""
    _, digits, exp = Decimal(repr(abs(value))).normalize().as_tuple()
    text = "".join(map(str, digits))
    return text, len(text) + int(exp) - 1


def _special(value: float) -> str | None:
    """Go's spelling of NaN, the infinities and (signed) zero, which have no digits to format."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    return None


def format_float_v(value: float) -> str:
    """Go fmt %v of a float64 (strconv 'g' with the shortest precision)."""
    special = _special(value)
    if special is not None:
        return special
    sign = "-" if value < 0 else ""
    digits, exp = _shortest_digits(value)
    if exp < -4 or exp >= 6:  # Go switches to %e at these exponents for shortest %g
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    return sign + _plain(digits, exp)


def format_float_f(value: float) -> str:
    """strconv.FormatFloat(value, 'f', -1, 64): plain decimal, shortest digits."""
    special = _special(value)
    if special is not None:
        return special
    sign = "-" if value < 0 else ""
    digits, exp = _shortest_digits(value)
    return sign + _plain(digits, exp)


def _plain(digits: str, exp: int) -> str:
    if exp < 0:
        return "0." + "0" * (-exp - 1) + digits
    if exp + 1 >= len(digits):
        return digits + "0" * (exp + 1 - len(digits))
    return digits[: exp + 1] + "." + digits[exp + 1 :]
