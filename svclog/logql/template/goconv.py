"""Go strconv-style number parsing (ParseInt with base 0, ParseFloat), used by literals and casts."""

from __future__ import annotations

import re

_INT_DIGITS = re.compile(
    r"[+-]?(?:0[xX]_?[0-9a-fA-F]+(?:_[0-9a-fA-F]+)*|0[oO]_?[0-7]+(?:_[0-7]+)*"
    r"|0[bB]_?[01]+(?:_[01]+)*|[0-9]+(?:_[0-9]+)*)"
)
_DEC_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_HEX_FLOAT = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+")
_SPECIAL = {
    "inf": float("inf"),
    "+inf": float("inf"),
    "-inf": float("-inf"),
    "infinity": float("inf"),
    "+infinity": float("inf"),
    "-infinity": float("-inf"),
    "nan": float("nan"),
}
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def parse_int(text: str, leading_zero_octal: bool = True) -> int | None:
    """strconv.ParseInt(text, 0, 64); None when invalid or out of range.

    Go reads "0755" as octal; cast-style callers pass leading_zero_octal=False to get decimal.
    """
    if not _INT_DIGITS.fullmatch(text):
        return None
    body = text.lstrip("+-")
    if len(body) > 1 and body[0] == "0" and body[1] not in "xXoObB":
        digits = body.replace("_", "")
        if leading_zero_octal and any(c not in "01234567" for c in digits):
            return None
        v = int(digits, 8 if leading_zero_octal else 10)
        v = -v if text.startswith("-") else v
    else:
        v = int(text, 0)
    return v if INT64_MIN <= v <= INT64_MAX else None


def parse_float(text: str) -> float | None:
    """strconv.ParseFloat(text, 64); None when invalid or out of range."""
    special = _SPECIAL.get(text.lower())
    if special is not None:
        return special
    try:
        if _DEC_FLOAT.fullmatch(text):
            v = float(text)
        elif _HEX_FLOAT.fullmatch(text):
            sign = -1.0 if text.startswith("-") else 1.0
            v = sign * float.fromhex(text.lstrip("+-"))
        else:
            return None
    except (ValueError, OverflowError):
        return None
    return None if v in (float("inf"), float("-inf")) else v


def wrap_int64(v: int) -> int:
    """Two's complement wrap, as int64 arithmetic overflows in Go."""
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= (1 << 63) else v
