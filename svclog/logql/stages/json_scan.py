"""A lenient, streaming JSON object walker with the reference's error texts.

The reference walks objects field by field without validating the whole document:
fields before a syntax error are still delivered, text after the closing brace is
ignored, and nested values are located by bracket counting. Parsers try the strict
C `json.loads` first and fall back to this walker only when it fails, so valid lines
stay fast and invalid ones keep the reference's partial results and messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

OBJECT_ERROR = "Value looks like object, but can't find closing '}' symbol"
ARRAY_ERROR = "Value is array, but can't find closing ']' symbol"
MALFORMED_JSON = "Malformed JSON error"
STRING_ERROR = "Value is string, but can't find closing '\"' symbol"
VALUE_ERROR = "Value looks like Number/Boolean/None, but can't find its end: ',' or '}' symbol"
UNKNOWN_TYPE = "Unknown value type"
ESCAPE_ERROR = "Encountered an invalid escape sequence in a string"

STRING, NUMBER, OBJECT, ARRAY, BOOLEAN, NULL = "string", "number", "object", "array", "boolean", "null"
_SPACE = " \n\r\t"
_TOKEN_END = " \n\r\t,}]"


class JsonScanError(ValueError):
    pass


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _SPACE:
        pos += 1
    return pos


def _string_end(text: str, pos: int) -> int:
    """Index just past the closing quote of a string whose body starts at pos, or -1."""
    while True:
        q = text.find('"', pos)
        if q < 0:
            return -1
        backslashes = 0
        k = q - 1
        while k >= pos and text[k] == "\\":
            backslashes += 1
            k -= 1
        if backslashes % 2 == 0:
            return q + 1
        pos = q + 1


def _block_end(text: str, pos: int, open_: str, close: str) -> int:
    depth = 0
    while pos < len(text):
        ch = text[pos]
        if ch == '"':
            end = _string_end(text, pos + 1)
            if end < 0:
                return -1
            pos = end
            continue
        if ch == open_:
            depth += 1
        elif ch == close:
            depth -= 1
            if depth == 0:
                return pos + 1
        pos += 1
    return -1


_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def unescape(raw: str) -> str:
    """Decode backslash escapes of a JSON string body; raises JsonScanError on a bad escape."""
    if "\\" not in raw:
        return raw

    def replace(m: re.Match[str]) -> str:
        code = m.group(1)
        if code in _SIMPLE:
            return _SIMPLE[code]
        if len(code) == 5:
            return chr(int(code[1:], 16))
        raise JsonScanError(ESCAPE_ERROR)

    if raw.endswith("\\") and (len(raw) - len(raw.rstrip("\\"))) % 2:
        raise JsonScanError(ESCAPE_ERROR)
    text = _ESCAPE.sub(replace, raw)
    # Join UTF-16 surrogate pairs written as two \u escapes; lone halves become U+FFFD.
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def read_value(text: str, pos: int) -> tuple[str, str, int]:
    """(type, raw value, end) of the value starting at pos (after whitespace)."""
    pos = _skip(text, pos)
    if pos >= len(text):
        raise JsonScanError(MALFORMED_JSON)
    ch = text[pos]
    if ch == '"':
        end = _string_end(text, pos + 1)
        if end < 0:
            raise JsonScanError(STRING_ERROR)
        return STRING, text[pos + 1 : end - 1], end
    if ch in "{[":
        end = _block_end(text, pos, ch, "}" if ch == "{" else "]")
        if end < 0:
            raise JsonScanError(OBJECT_ERROR if ch == "{" else ARRAY_ERROR)
        return (OBJECT if ch == "{" else ARRAY), text[pos:end], end
    end = pos
    while end < len(text) and text[end] not in _TOKEN_END:
        end += 1
    if end == len(text) and end == pos:
        raise JsonScanError(VALUE_ERROR)
    token = text[pos:end]
    if ch in "tf":
        if token not in ("true", "false"):
            raise JsonScanError(UNKNOWN_TYPE)
        return BOOLEAN, token, end
    if ch in "un":
        if token != "null":
            raise JsonScanError(UNKNOWN_TYPE)
        return NULL, token, end
    if ch.isdigit() or ch == "-":
        return NUMBER, token, end
    raise JsonScanError(UNKNOWN_TYPE)


def each_field(text: str) -> Iterator[tuple[str, str, str]]:
    """(key, type, raw value) of an object's fields in order; raises JsonScanError mid-way."""
    pos = _skip(text, 0)
    if pos >= len(text) or text[pos] != "{":
        raise JsonScanError(OBJECT_ERROR)
    pos = _skip(text, pos + 1)
    if pos >= len(text):
        raise JsonScanError(MALFORMED_JSON)
    if text[pos] == "}":
        return
    while pos < len(text):
        if text[pos] == "}":
            return
        if text[pos] != '"':
            raise JsonScanError(OBJECT_ERROR)
        end = _string_end(text, pos + 1)
        if end < 0:
            raise JsonScanError(MALFORMED_JSON)
        key = unescape(text[pos + 1 : end - 1])
        pos = _skip(text, end)
        if pos >= len(text) or text[pos] != ":":
            raise JsonScanError(MALFORMED_JSON)
        kind, raw, pos = read_value(text, pos + 1)
        yield key, kind, raw
        pos = _skip(text, pos)
        if pos >= len(text):
            raise JsonScanError(ARRAY_ERROR)
        if text[pos] == "}":
            return
        if text[pos] != ",":
            raise JsonScanError(OBJECT_ERROR)
        pos = _skip(text, pos + 1)
        if pos >= len(text):
            raise JsonScanError(ARRAY_ERROR)
    raise JsonScanError(OBJECT_ERROR)


class RawNumber(str):
    """A JSON number kept as its source text."""


def loads_object(text: str) -> dict[str, Any] | None:
    """Strict fast path: the decoded object with numbers kept as RawNumber text, or None."""
    try:
        value = json.loads(text, parse_int=RawNumber, parse_float=RawNumber, parse_constant=_reject)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _reject(name: str) -> None:
    raise ValueError(name)


def lookup(text: str, path: list[str | int]) -> tuple[str, str] | None:
    """(type, raw value) at a path of keys / array indexes, or None when absent or malformed."""
    try:
        kind, raw = OBJECT, text
        for step in path:
            if isinstance(step, int):
                if kind != ARRAY:
                    return None
                found = _array_item(raw, step)
            else:
                if kind != OBJECT:
                    return None
                found = next(((k, r) for key, k, r in each_field(raw) if key == step), None)
            if found is None:
                return None
            kind, raw = found
        return kind, raw
    except JsonScanError:
        return None


def _array_item(raw: str, index: int) -> tuple[str, str] | None:
    pos = _skip(raw, 1)
    i = 0
    while pos < len(raw) and raw[pos] != "]":
        kind, value, pos = read_value(raw, pos)
        if i == index:
            return kind, value
        i += 1
        pos = _skip(raw, pos)
        if pos < len(raw) and raw[pos] == ",":
            pos += 1
    return None
