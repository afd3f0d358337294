"""Parse the label string of a protobuf push stream (`{app="api", env="prod"}`) into Labels.

The syntax is PromQL's metric label set, as the reference parses it: names are
`[a-zA-Z_][a-zA-Z0-9_]*`, values are Go string literals ("...", '...' or
`...`) with Go escapes, pairs are separated by commas (a trailing comma is
allowed) and whitespace may appear between tokens. Labels with an empty value
are dropped, because an empty value means "absent" in the data model.
"""

from __future__ import annotations

import re
from functools import lru_cache

from svclog.model import Labels, ValidationError

_WS = re.compile(r"[ \t\r\n]*")
_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_STRING = {
    '"': re.compile(r'"((?:[^"\\\n]|\\.)*)"', re.DOTALL),
    "'": re.compile(r"'((?:[^'\\\n]|\\.)*)'", re.DOTALL),
    "`": re.compile(r"`([^`]*)`"),
}
_ESCAPE = re.compile(
    r"\\(?:([abfnrtv\\'\"])|x([0-9a-fA-F]{2})|([0-7]{3})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(.?))",
    re.DOTALL,
)
_SIMPLE_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, "'": 39, '"': 34}


class _LabelSyntaxError(Exception):
    def __init__(self, pos: int, message: str):
        super().__init__(message)
        self.pos = pos
        self.message = message


def parse_labels(text: str | bytes) -> Labels:
    """Parse a stream label string; raise ValidationError in the reference's wording."""
    if isinstance(text, bytes):
        raw = text
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            shown = raw.decode("utf-8", "replace")
            raise ValidationError(
                f"Error parsing labels '{shown}' with error: invalid UTF-8 at byte {err.start}"
            ) from None
    return _parse_cached(text)


@lru_cache(maxsize=4096)
def _parse_cached(text: str) -> Labels:
    # Clients resend the same few label strings in every push; Labels is immutable.
    try:
        pairs = _parse_pairs(text)
    except _LabelSyntaxError as err:
        # Positions are 1-based line:column like the reference's parser errors.
        line = text.count("\n", 0, err.pos) + 1
        column = err.pos - (text.rfind("\n", 0, err.pos) + 1) + 1
        raise ValidationError(
            f"Error parsing labels '{text}' with error: {line}:{column}: parse error: {err.message}"
        ) from None
    seen: set[str] = set()
    for name, _ in pairs:
        if name in seen:
            raise ValidationError(f"stream '{text}' has duplicate label name: '{name}'")
        seen.add(name)
    return Labels((name, value) for name, value in pairs if value != "")


def _parse_pairs(text: str) -> list[tuple[str, str]]:
    pos = _WS.match(text, 0).end()  # type: ignore[union-attr]
    if not text.startswith("{", pos):
        raise _LabelSyntaxError(pos, _unexpected(text, pos, "'{'"))
    pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    pairs: list[tuple[str, str]] = []
    while not text.startswith("}", pos):
        name_match = _NAME.match(text, pos)
        if name_match is None:
            raise _LabelSyntaxError(pos, _unexpected(text, pos, "label name"))
        pos = _WS.match(text, name_match.end()).end()  # type: ignore[union-attr]
        if not text.startswith("=", pos) or text.startswith("=~", pos):
            raise _LabelSyntaxError(pos, _unexpected(text, pos, "'='"))
        pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
        value, pos = _parse_string(text, pos)
        pairs.append((name_match.group(), value))
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if text.startswith(",", pos):
            pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
        elif not text.startswith("}", pos):
            raise _LabelSyntaxError(pos, _unexpected(text, pos, "',' or '}'"))
    pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    if pos != len(text):
        raise _LabelSyntaxError(pos, _unexpected(text, pos, "end of input"))
    return pairs


def _parse_string(text: str, pos: int) -> tuple[str, int]:
    pattern = _STRING.get(text[pos : pos + 1])
    match = pattern.match(text, pos) if pattern else None
    if match is None:
        if pattern is not None:
            raise _LabelSyntaxError(pos, "unterminated quoted string")
        raise _LabelSyntaxError(pos, _unexpected(text, pos, "quoted label value"))
    body = match.group(1)
    if text[pos] == "`" or "\\" not in body:
        return body, match.end()
    return _unescape(body, pos + 1), match.end()


def _unescape(body: str, offset: int) -> str:
    """Resolve Go escapes; \\x and octal escapes are bytes, so the result must be valid UTF-8."""
    out = bytearray()
    last = 0
    for esc in _ESCAPE.finditer(body):
        out += body[last : esc.start()].encode("utf-8", "surrogatepass")
        simple, hex2, octal, uni4, uni8, bad = esc.groups()
        if simple is not None:
            out.append(_SIMPLE_ESCAPES[simple])
        elif hex2 is not None:
            out.append(int(hex2, 16))
        elif octal is not None:
            if int(octal, 8) > 255:
                raise _LabelSyntaxError(offset + esc.start(), "octal escape value > 255")
            out.append(int(octal, 8))
        elif uni4 is not None or uni8 is not None:
            code = int(uni4 or uni8, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise _LabelSyntaxError(offset + esc.start(), "escape sequence is an invalid Unicode code point")
            out += chr(code).encode("utf-8")
        else:
            raise _LabelSyntaxError(offset + esc.start(), f"unknown escape sequence {bad!r}")
        last = esc.end()
    out += body[last:].encode("utf-8", "surrogatepass")
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        raise _LabelSyntaxError(offset, "invalid UTF-8 in label value") from None


def _unexpected(text: str, pos: int, wanted: str) -> str:
    if pos >= len(text):
        return f"unexpected end of input, expected {wanted}"
    return f"unexpected character {text[pos]!r}, expected {wanted}"
