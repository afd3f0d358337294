"""Go-compatible text conversions the LogQL parser and printer need.

The reference implementation is written in Go, so its canonical query text uses
Go's string quoting (strconv.Quote), float formatting (fmt %v and
strconv.FormatFloat 'f') and duration spellings (Prometheus model.Duration and
time.Duration). These helpers reproduce those spellings exactly.
"""
from __future__ import annotations

import math
from decimal import Decimal

from svclog.model import NS, format_go_duration

__all__ = [
    "format_float_f",
    "format_float_v",
    "format_go_duration",
    "format_prom_duration",
    "go_quote",
    "unquote_double",
]

_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
                   "v": "\v", "\\": "\\", '"': '"'}
_HEX = "0123456789abcdefABCDEF"


def unquote_double(body: str) -> str:
    """Decode the inside of a Go double-quoted string literal (raises ValueError when invalid).

    Byte escapes (`\\xff`, `\\377`) may form invalid UTF-8; those bytes are kept
    as surrogate escapes so that printing reproduces them.
    """
    out = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode("utf-8", "surrogateescape")
            i += 1
            continue
        kind = body[i + 1] if i + 1 < len(body) else ""
        if kind in _SIMPLE_ESCAPES:
            out += _SIMPLE_ESCAPES[kind].encode()
            i += 2
        elif kind in "01234567" and kind:
            digits = body[i + 1:i + 4]
            if len(digits) < 3 or any(d not in "01234567" for d in digits) or int(digits, 8) > 255:
                raise ValueError("invalid char escape")
            out.append(int(digits, 8))
            i += 4
        elif kind == "x":
            out.append(_hex_value(body[i + 2:i + 4], 2))
            i += 4
        elif kind in ("u", "U"):
            size = 4 if kind == "u" else 8
            code = _hex_value(body[i + 2:i + 2 + size], size)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise ValueError("invalid char escape")
            out += chr(code).encode()
            i += 2 + size
        else:
            raise ValueError("invalid char escape")
    return out.decode("utf-8", "surrogateescape")


def _hex_value(digits: str, size: int) -> int:
    if len(digits) != size or any(d not in _HEX for d in digits):
        raise ValueError("invalid char escape")
    return int(digits, 16)


_QUOTE_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                  "\t": "\\t", "\v": "\\v", "\\": "\\\\", '"': '\\"'}


def go_quote(value: str) -> str:
    """strconv.Quote: double-quoted, printable runes kept, everything else escaped."""
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch in _QUOTE_ESCAPES:
            out.append(_QUOTE_ESCAPES[ch])
        elif 0xDC80 <= code <= 0xDCFF:  # a raw byte that was not valid UTF-8
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch == " " or (ch.isprintable() and code != 0x7F):
            out.append(ch)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _shortest_digits(value: float) -> tuple[str, int]:
    """Shortest round-trip digits of |value| and the decimal exponent of the first digit."""
    _, digits, exp = Decimal(repr(abs(value))).normalize().as_tuple()
    text = "".join(map(str, digits))
    return text, len(text) + int(exp) - 1


def format_float_v(value: float) -> str:
    """Go fmt %v of a float64 (strconv 'g' with the shortest precision)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    digits, exp = _shortest_digits(value)
    if exp < -4 or exp >= 6:  # Go switches to %e at these exponents for shortest %g
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    return sign + _plain(digits, exp)


def format_float_f(value: float) -> str:
    """strconv.FormatFloat(value, 'f', -1, 64): plain decimal, shortest digits."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    digits, exp = _shortest_digits(value)
    return sign + _plain(digits, exp)


def _plain(digits: str, exp: int) -> str:
    if exp < 0:
        return "0." + "0" * (-exp - 1) + digits
    if exp + 1 >= len(digits):
        return digits + "0" * (exp + 1 - len(digits))
    return digits[:exp + 1] + "." + digits[exp + 1:]


_MS = NS // 1000
_PROM_UNITS = (("y", 365 * 86400 * 1000, True), ("w", 7 * 86400 * 1000, True),
               ("d", 86400 * 1000, False), ("h", 3600 * 1000, False), ("m", 60 * 1000, False),
               ("s", 1000, False), ("ms", 1, False))


def format_prom_duration(ns: int) -> str:
    """Prometheus model.Duration.String(): `5m`, `1h30m`, `1d`, `2w`, `250ms`, `0s`."""
    ms = ns // _MS
    if ms == 0:
        return "0s"
    out = []
    for unit, size, exact in _PROM_UNITS:
        if exact and ms % size:
            continue
        count, ms = divmod(ms, size)
        if count:
            out.append(f"{count}{unit}")
    return "".join(out)
