"""Go's strconv: Quote / QuoteToASCII / QuoteRune, the inside of a double-quoted literal, ParseFloat.

Strings that came from bytes which are not valid UTF-8 carry those bytes as surrogate escapes
(`bytes.decode("utf-8", "surrogateescape")`); they quote as `\\xNN`, as Go quotes a bad byte.
"""

from __future__ import annotations

import math
import re

__all__ = ["parse_float", "quote", "quote_rune", "unquote_double"]

_NAMED = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def escape_rune(ch: str, quote_char: str = '"', ascii_only: bool = False) -> str:
    """One rune as strconv writes it inside a quoted literal."""
    code = ord(ch)
    if ch == quote_char or ch == "\\":
        return "\\" + ch
    if 0xDC80 <= code <= 0xDCFF:  # a raw byte that was not valid UTF-8
        return f"\\x{code - 0xDC00:02x}"
    if (ch == " " or ch.isprintable()) and code != 0x7F and not (ascii_only and code >= 0x80):
        return ch
    if ch in _NAMED:
        return _NAMED[ch]
    if code < 0x80:
        return f"\\x{code:02x}"
    if 0xD800 <= code <= 0xDFFF:  # a lone surrogate is not a rune: Go writes the replacement character
        code = 0xFFFD
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def quote(value: str, ascii_only: bool = False) -> str:
    """strconv.Quote (QuoteToASCII with `ascii_only`): how label values print in label strings."""
    return '"' + "".join(escape_rune(ch, '"', ascii_only) for ch in value) + '"'


def quote_rune(code: int, ascii_only: bool = False) -> str:
    """strconv.QuoteRune (QuoteRuneToASCII): an invalid code point quotes as U+FFFD."""
    ch = chr(code) if 0 <= code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
    return "'" + escape_rune(ch, "'", ascii_only) + "'"


_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"'}
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
            digits = body[i + 1 : i + 4]
            if len(digits) < 3 or any(d not in "01234567" for d in digits) or int(digits, 8) > 255:
                raise ValueError("invalid char escape")
            out.append(int(digits, 8))
            i += 4
        elif kind == "x":
            out.append(_hex_value(body[i + 2 : i + 4], 2))
            i += 4
        elif kind in ("u", "U"):
            size = 4 if kind == "u" else 8
            code = _hex_value(body[i + 2 : i + 2 + size], size)
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


# ---------------------------------------------------------------- ParseFloat

_GO_SPECIAL = re.compile(r"[+-]?(?:inf|infinity)|nan", re.IGNORECASE | re.ASCII)
_GO_DECIMAL = re.compile(r"[+-]?(?=[0-9_.]*[0-9])[0-9_]*\.?[0-9_]*(?:[eE][+-]?[0-9][0-9_]*)?")
_GO_HEX = re.compile(r"[+-]?0[xX](?=[0-9a-fA-F_.]*[0-9a-fA-F])[0-9a-fA-F_]*\.?[0-9a-fA-F_]*[pP][+-]?[0-9][0-9_]*")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def _underscores_ok(text: str) -> bool:
    """Go's underscoreOK: `_` only between digits, or between a base prefix and a digit."""
    if text[:1] in "+-":
        text = text[1:]
    saw, i, hex_digits = "^", 0, False
    if len(text) >= 2 and text[0] == "0" and text[1] in "bBoOxX":
        saw, i, hex_digits = "0", 2, text[1] in "xX"
    for ch in text[i:]:
        if "0" <= ch <= "9" or (hex_digits and ch in _HEX_DIGITS):
            saw = "0"
        elif ch == "_":
            if saw != "0":
                return False
            saw = "_"
        elif saw == "_":
            return False
        else:
            saw = "!"
    return saw != "_"


def parse_float(text: str) -> float:
    """Go's strconv.ParseFloat(text, 64); raises ValueError with Go's error text."""
    if _GO_SPECIAL.fullmatch(text):
        return float(text)
    hex_form = _GO_HEX.fullmatch(text) is not None
    if not (hex_form or _GO_DECIMAL.fullmatch(text)) or ("_" in text and not _underscores_ok(text)):
        raise ValueError(f"strconv.ParseFloat: parsing {quote(text)}: invalid syntax")
    plain = text.replace("_", "")
    try:
        value = float.fromhex(plain) if hex_form else float(plain)
    except OverflowError:
        value = math.inf
    if math.isinf(value):
        raise ValueError(f"strconv.ParseFloat: parsing {quote(text)}: value out of range")
    return value
