"""go-humanize's ParseBytes: `42 MB`, `42 mib`, `1,000`, `1.5KiB` -> bytes."""

from __future__ import annotations

import math

from svclog.gocompat.strconv import parse_float, quote

__all__ = ["ibytes", "parse_bytes"]

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "t": 1000**4,
    "tb": 1000**4,
    "p": 1000**5,
    "pb": 1000**5,
    "e": 1000**6,
    "eb": 1000**6,
    "ki": 1024,
    "kib": 1024,
    "mi": 1024**2,
    "mib": 1024**2,
    "gi": 1024**3,
    "gib": 1024**3,
    "ti": 1024**4,
    "tib": 1024**4,
    "pi": 1024**5,
    "pib": 1024**5,
    "ei": 1024**6,
    "eib": 1024**6,
}
# Go's strings.TrimSpace set (unicode.IsSpace)
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def parse_bytes(text: str) -> int:
    """humanize.ParseBytes; raises ValueError with its message on invalid input."""
    # It counts leading digits (unicode.IsDigit), dots and commas in runes but slices the
    # string in bytes there, so a non-ASCII digit leaves a broken UTF-8 prefix to ParseFloat.
    count = 0
    for ch in text:
        if not (ch.isdecimal() or ch in ".,"):
            break
        count += 1
    raw = text.encode("utf-8", "surrogatepass")
    head = raw[:count].replace(b",", b"")
    try:
        number_text = head.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"strconv.ParseFloat: parsing {_quote_bytes(head)}: invalid syntax") from None
    number = parse_float(number_text)  # its own error text (invalid syntax, value out of range)
    unit = text[count:].strip(_GO_SPACE).lower()
    if unit not in _UNITS:
        raise ValueError(f"unhandled size name: {unit}")
    value = number * _UNITS[unit]
    if value >= 2.0**64:
        raise ValueError(f"too large: {text}")
    return int(value)


def _quote_bytes(raw: bytes) -> str:
    """strconv.Quote of a byte string that may not be valid UTF-8 (bad bytes as \\xNN)."""
    return quote(raw.decode("utf-8", "surrogateescape"))


def ibytes(size: int) -> str:
    """humanize.IBytes: `82854982` -> `79 MiB`, `1536` -> `1.5 KiB`, `7` -> `7 B`."""
    if size < 10:
        return f"{size} B"
    exponent = min(int(math.floor(math.log(size) / math.log(1024))), 6)
    value = math.floor(size / 1024**exponent * 10 + 0.5) / 10
    suffix = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")[exponent]
    return f"{value:.0f} {suffix}" if value >= 10 else f"{value:.1f} {suffix}"
