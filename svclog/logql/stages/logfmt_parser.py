"""`| logfmt [--strict] [--keep-empty] [label="key", ...]`.

Tokenising follows the reference decoder: `key=value`, `key="quoted \"value\""`,
bare `key` (empty value), bytes <= ' ' separate pairs. A malformed pair (`a=b=c`,
`"x`, `=v`) is skipped; with `--strict` parsing stops there and the entry gets
`__error__=LogfmtParserErr` plus the decoder's message (byte position, 1-based).
Empty values are dropped unless `--keep-empty`. Keys are sanitised like json keys
and a key that is a stream label gets `_extracted`; a repeated key keeps the last value.

Tokenising has no Arrow kernel: a per-entry loop, stepping token by token with
compiled regexes rather than character by character.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

import pyarrow as pa

from svclog.logql import ast
from svclog.logql.stages import json_scan
from svclog.logql.stages.batch import ERR_LOGFMT, EXTRACTED_SUFFIX, LogBatch, set_error
from svclog.logql.stages.json_parser import sanitize_key
from svclog.model import ParseError, is_valid_label_name

_SPACE = re.compile(r"[\x00-\x20]*")
_WORD = re.compile(r'[^\x00-\x20="]*')
_TO_SPACE = re.compile(r"[^\x00-\x20]*")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"', re.DOTALL)
_CONTROL = re.compile(r"[\x00-\x1f]")
_RUNE_ERROR = "\ufffd"


class LogfmtError(ValueError):
    def __init__(self, line: str, pos: int, msg: str):
        # Positions are reported in bytes, 1-based, as the reference decoder counts them.
        super().__init__(f"logfmt syntax error at pos {len(line[:pos].encode()) + 1} : {msg}")


def _unexpected(ch: str) -> str:
    return "unexpected '\\''" if ch == "'" else f"unexpected '{ch}'"


def scan_pairs(line: str, errors: list[LogfmtError]) -> Iterator[tuple[str, str]]:
    """(key, value) pairs; each malformed pair appends an error and is skipped."""
    pos, n = 0, len(line)
    while True:
        pos = _SPACE.match(line, pos).end()
        if pos >= n:
            return
        start = pos
        pos = _WORD.match(line, pos).end()
        key = line[start:pos]
        ch = line[pos] if pos < n else " "
        if ch == '"' or (ch == "=" and not key):
            errors.append(LogfmtError(line, pos, _unexpected(ch)))
            pos = _TO_SPACE.match(line, pos).end()
            continue
        if _RUNE_ERROR in key:
            errors.append(LogfmtError(line, pos, "invalid key"))
            pos = _TO_SPACE.match(line, pos).end() if ch == "=" else pos
            continue
        if ch != "=":
            yield key, ""
            continue
        pos += 1
        if pos >= n or ord(line[pos]) <= 32:
            yield key, ""
            continue
        if line[pos] == '"':
            quoted = _QUOTED.match(line, pos)
            if quoted is None:
                errors.append(LogfmtError(line, n, "unterminated quoted value"))
                return
            pos = quoted.end()
            body = quoted.group(1)
            if "\\" in body:
                try:
                    if _CONTROL.search(body):
                        raise json_scan.JsonScanError(body)
                    body = json_scan.unescape(body)
                except json_scan.JsonScanError:
                    errors.append(LogfmtError(line, pos, "invalid quoted value"))
                    continue
            yield key, body
            continue
        start = pos
        pos = _WORD.match(line, pos).end()
        if pos < n and line[pos] in '="':
            errors.append(LogfmtError(line, pos, _unexpected(line[pos])))
            pos = _TO_SPACE.match(line, pos).end()
            continue
        yield key, line[start:pos]


def _first_error_pairs(line: str, strict: bool) -> tuple[list[tuple[str, str]], str | None]:
    errors: list[LogfmtError] = []
    pairs: list[tuple[str, str]] = []
    for pair in scan_pairs(line, errors):
        if strict and errors:
            break
        pairs.append(pair)
    if strict and errors:
        return pairs, str(errors[0])
    return pairs, None


class LogfmtParserStage:
    def __init__(self, node: ast.LogfmtParser):
        self.strict = node.strict
        self.keep_empty = node.keep_empty
        self.params = {p.label: (p.expression or p.label) for p in node.params}
        for label in self.params:
            if not is_valid_label_name(label):
                raise ParseError(f"invalid extracted label name '{label}'")

    def process(self, batch: LogBatch) -> LogBatch:
        n = len(batch)
        origin = batch.origin
        columns: dict[str, list[str | None]] = {}
        errors: list[str | None] = [None] * n
        if self.params:
            for label in self.params:
                if label not in origin:
                    columns[label] = [""] * n
        names: dict[str, str | None] = {}  # raw key -> label name (None: not extracted)
        for row, line in enumerate(batch.line.to_pylist()):
            pairs, errors[row] = _first_error_pairs(line or "", self.strict)
            for key, value in pairs:
                name = names.get(key, "")
                if name == "":
                    name = names[key] = self._label_name(key, origin)
                if name is None:
                    continue
                if _RUNE_ERROR in value:
                    value = ""
                if not value and not self.keep_empty and not self.params:
                    continue
                col = columns.get(name)
                if col is None:
                    col = columns[name] = [None] * n
                col[row] = value
        for name, values in columns.items():
            batch.set_parsed(name, pa.array(values, pa.string()))
        err = pa.array(errors, pa.string())
        set_error(batch, pa.array([e is not None for e in errors]), ERR_LOGFMT, err)
        return batch

    def _label_name(self, key: str, origin) -> str | None:
        sanitized = sanitize_key(key)
        if not sanitized:
            return None
        if not self.params:
            return sanitized + EXTRACTED_SUFFIX if sanitized in origin else sanitized
        for label, expression in self.params.items():
            if sanitized == expression:
                sanitized = label
                break
        if sanitized not in self.params:
            return None
        return sanitized + EXTRACTED_SUFFIX if sanitized in origin else sanitized
