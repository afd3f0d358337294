"""`| json` and `| json label="path", ...`.

Plain `json` turns every string, number and boolean field into a label; nested
objects flatten with `_` (`user.id` -> `user_id`), arrays and nulls are skipped, keys
are sanitised to label-name characters (a leading digit gets `_`), and a key that
is a stream label gets `_extracted`. Numbers keep their source text. Errors set
`__error__=JSONParserErr` with the reference's details, after the fields read so far.

With parameters, each label takes the value at its path (`a.b[0]`, `["key with
space"]`); objects and arrays keep their raw JSON text and a missing path yields "".

JSON decoding has no Arrow kernel: it is a per-entry loop (C `json.loads` fast path);
with the engine's hints only the wanted fields become columns, and a line none of
whose fields are wanted is only checked for errors.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql import ast
from svclog.logql.stages import json_scan
from svclog.logql.stages.batch import ERR_JSON, EXTRACTED_SUFFIX, LogBatch, set_error
from svclog.logql.stages.json_path import parse_json_path
from svclog.model import LimitError, ParseError, is_valid_label_name

_INVALID = re.compile(r"[^a-zA-Z0-9_]")
_RUNE_ERROR = "\ufffd"


@functools.lru_cache(maxsize=4096)  # keys repeat line after line
def sanitize_key(key: str, prefix: str = "") -> str:
    """The reference's key sanitising; `prefix` is the already-sanitised parent path."""
    key = key.strip()
    if not key:
        return prefix
    head = "_" if not prefix and key[0].isascii() and key[0].isdigit() else ""
    body = head + _INVALID.sub("_", key)
    return f"{prefix}_{body}" if prefix else body


def _leaf(value: object) -> str | None:
    if isinstance(value, str):
        return "" if _RUNE_ERROR in value else value
    if value is True:
        return "true"
    if value is False:
        return "false"
    return None  # null, arrays: not labels


# Bounds of one line's flattening. Each nested key prefixes every label below it, so a line of
# deep objects with many leaves would yield label names quadratic in its length (200 KB -> 360 MB).
# Deeper nesting is a per-line parser error (the walk is recursive); more output fails the query.
MAX_DEPTH = 64
MAX_EXTRACTED = 1 << 20  # characters of label names and values per line
TOO_DEEP = f"JSON nested deeper than {MAX_DEPTH} levels"


class _Output(dict[str, str]):
    """The labels of one line, counting the characters they hold."""

    size = 0

    def put(self, name: str, value: str) -> None:
        self.size += len(name) + len(value)
        if self.size > MAX_EXTRACTED:
            raise LimitError(
                f"json parser: the labels extracted from one line exceed the limit of "
                f"{MAX_EXTRACTED} characters (nested keys prefix every label below them)"
            )
        self[name] = value


Stop = Callable[[_Output], bool]


def _flatten(obj: dict[str, Any], prefix: str, out: _Output, depth: int = 1) -> None:
    if depth > MAX_DEPTH:
        raise json_scan.JsonScanError(TOO_DEEP)
    for key, value in obj.items():
        if isinstance(value, dict):
            _flatten(value, sanitize_key(key, prefix), out, depth + 1)
            continue
        text = _leaf(value)
        if text is not None:
            out.put(sanitize_key(key, prefix), text)


def _scan(raw: str, prefix: str, out: _Output, depth: int = 1, stop: Stop | None = None) -> bool:
    """Fallback walk of a possibly malformed object; raises JsonScanError after partial output.
    With `stop`, the walk ends (True) once it holds after a field that is no object, as the
    reference's parser ends once every required label is extracted: what follows, malformed or
    not, is never read."""
    if depth > MAX_DEPTH:
        raise json_scan.JsonScanError(TOO_DEEP)
    for key, kind, value in json_scan.each_field(raw):
        if kind == json_scan.OBJECT:
            if _scan(value, sanitize_key(key, prefix), out, depth + 1, stop):
                return True
            continue
        if kind == json_scan.STRING:
            try:
                text = json_scan.unescape(value)
            except json_scan.JsonScanError:
                text = ""
            out.put(sanitize_key(key, prefix), "" if _RUNE_ERROR in text else text)
        elif kind in (json_scan.NUMBER, json_scan.BOOLEAN):
            out.put(sanitize_key(key, prefix), value)
        if stop is not None and stop(out):
            return True
    return False


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')


def _nesting(line: str) -> int:
    """The deepest bracket nesting outside string literals (only malformed lines get here)."""
    brackets = _STRINGS.sub("", line).translate(_BRACKETS_ONLY)
    if not brackets:
        return 0
    codes = np.frombuffer(brackets.encode("ascii"), dtype=np.uint8)
    steps = np.where((codes == 0x7B) | (codes == 0x5B), 1, -1)  # "{" and "[" open, "}" and "]" close
    return int(np.cumsum(steps).max(initial=0))


class _Brackets(dict[int, int | None]):
    """str.translate table keeping only {, }, [ and ] (every other character is deleted)."""

    def __missing__(self, code: int) -> int | None:
        return code if code in (0x7B, 0x7D, 0x5B, 0x5D) else None


_BRACKETS_ONLY = _Brackets()

# a line whose first character past JSON whitespace is not "{" is no object: the scan stops there
# with this error and nothing extracted, so those lines are told apart in one pass. Unless it may
# nest deeper than MAX_DEPTH (then the error is TOO_DEEP): its nesting is at most its count of
# opening brackets, so only lines with more than MAX_DEPTH of them are left to the per-line parse
# (an access log's `[date]` no longer sends every such line there: ~30 us a line under the GIL)
_NOT_AN_OBJECT = r"^[ \t\n\r]*[^ \t\n\r{]|^[ \t\n\r]*$"
_OPENING_BRACKET = r"[\[{]"


def parse_json_line(line: str, stop: Stop | None = None) -> tuple[dict[str, str], str | None]:
    """Flattened (unsuffixed) labels of one line and the error details, if any; `stop` see _scan
    (a well-formed line has no error to avoid, and is read whole)."""
    out = _Output()
    obj = json_scan.loads_object(line)
    try:
        if obj is not None:
            _flatten(obj, "", out)
        elif _nesting(line) > MAX_DEPTH:  # the scan re-reads the text per level: refuse before it
            raise json_scan.JsonScanError(TOO_DEEP)
        else:
            _scan(line, "", out, stop=stop)
    except json_scan.JsonScanError as err:
        return dict(out), str(err)
    return dict(out), None


def _is_object(line: str) -> bool:
    """Does the strict decoder accept the line as an object? (values are not kept)

    orjson answers first (~2.5x faster); what it refuses (lone surrogate escapes, numbers out
    of range, very deep nesting) the strict decoder of `parse_json_line` decides."""
    try:
        return isinstance(orjson.loads(line), dict)
    except orjson.JSONDecodeError:
        return json_scan.loads_object(line) is not None


# A flat JSON object (string, number, true/false/null values; no \\u escapes, no nesting), which
# every decoder accepts: one RE2 pass tells such lines apart, and a query that wants none of
# their fields has nothing else to learn from them. Digit counts stay where every decoder
# reads the number without overflow. Other lines are decoded one by one.
_JSON_WS = r"[ \t\n\r]*"
_JSON_STRING = r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt])*"'
_JSON_NUMBER = r"-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]{1,17})?(?:[eE][+-]?[0-9]{1,2})?"
_JSON_MEMBER = rf"{_JSON_STRING}{_JSON_WS}:{_JSON_WS}(?:{_JSON_STRING}|{_JSON_NUMBER}|true|false|null)"
FLAT_OBJECT = (
    rf"^{_JSON_WS}\{{{_JSON_WS}(?:{_JSON_MEMBER}(?:{_JSON_WS},{_JSON_WS}{_JSON_MEMBER})*)?{_JSON_WS}\}}{_JSON_WS}$"
)


class _ErrorCodes:
    """Each entry's parser error as an index into the few distinct messages (-1: none), so a
    batch of mostly failing lines (a mixed stream under `| json`) costs no per-entry objects."""

    def __init__(self, n: int):
        self.codes = np.full(n, -1, dtype=np.int32)
        self.texts: dict[str, int] = {}

    def _code(self, text: str) -> int:
        return self.texts.setdefault(text, len(self.texts))

    def set(self, rows: np.ndarray | int, text: str) -> None:
        self.codes[rows] = self._code(text)

    def mask(self) -> pa.Array:
        return pa.array(self.codes >= 0)

    def details(self) -> pa.Array:
        texts = pa.array(list(self.texts), pa.string())
        return texts.take(pa.array(self.codes, mask=self.codes < 0))


class JsonParserStage:
    def __init__(self, node: ast.JsonParser, only: frozenset[str] | None = None):
        self.params: list[tuple[str, list[str | int]]] = []
        for param in node.params:  # each path read, then its label checked, in order (as the reference)
            path = parse_json_path(param.expression if param.expression is not None else param.label)
            if not is_valid_label_name(param.label):
                raise ParseError(f"invalid extracted label name '{param.label}'")
            self.params.append((param.label, path))
        # parser hints: the labels (before any `_extracted` suffix) the query can observe
        self.only = only if not self.params else None
        # the labels the reference tells its parsers are required (engine/hints.py required_labels)
        self.required: frozenset[str] = frozenset()

    def process(self, batch: LogBatch) -> LogBatch:
        if self.params:
            return self._extract(batch)
        n = len(batch)
        columns: dict[str, list[str | None]] = {}
        errors = _ErrorCodes(n)
        wanted = self._wanted_keys(batch)
        lines = batch.line
        rows = np.arange(n)
        if wanted is not None and not wanted:  # nothing to extract from a well-formed line: only errors matter
            flat = pc.fill_null(pc.match_substring_regex(lines, FLAT_OBJECT), False).to_numpy(zero_copy_only=False)
            if flat.all():
                return batch
            rows = np.flatnonzero(~flat)
            lines = lines.take(pa.array(rows))
        not_object = pc.and_(  # too many brackets: the nesting check may answer another error
            pc.fill_null(pc.match_substring_regex(lines, _NOT_AN_OBJECT), True),
            pc.fill_null(pc.less_equal(pc.count_substring_regex(lines, _OPENING_BRACKET), MAX_DEPTH), True),
        ).to_numpy(zero_copy_only=False)
        if not_object.any():
            errors.set(rows[not_object], json_scan.OBJECT_ERROR)
            rows = rows[~not_object]
            lines = lines.filter(pa.array(~not_object))
        for row, line in zip(rows.tolist(), lines.to_pylist()):
            if wanted is not None and not wanted and _is_object(line or ""):
                continue
            fields, error = parse_json_line(line or "")
            if error is not None and self.required:
                fields, error = parse_json_line(line or "", self._stop(batch, row))
            if error is not None:
                errors.set(row, error)
            for name, value in fields.items():
                if wanted is not None and name not in wanted:
                    continue
                col = columns.get(name)
                if col is None:
                    col = columns[name] = [None] * n
                col[row] = value
        for name, values in columns.items():
            if not name:
                continue
            target = name + EXTRACTED_SUFFIX if name in batch.origin else name
            batch.set_parser_label(target, pa.array(values, pa.string()), keep_parsed=True)
        set_error(batch, errors.mask(), ERR_JSON, errors.details())
        return batch

    def _stop(self, batch: LogBatch, row: int) -> Stop:
        """Whether the labels parsed so far complete the required ones the entry still lacks."""
        missing = {name for name in self.required if not batch.was_extracted(name, row)}

        def done(out: _Output) -> bool:
            found = {name + EXTRACTED_SUFFIX if name in batch.origin else name for name in out}
            return missing <= found

        return done

    def _wanted_keys(self, batch: LogBatch) -> frozenset[str] | None:
        """Flattened keys whose labels the hints ask for (None: all of them)."""
        if self.only is None:
            return None
        renamed = batch.origin.names() + sorted(batch.metadata_names)  # keys that may get `_extracted`
        wanted = {name for name in self.only if name not in batch.origin}
        wanted |= {
            name[: -len(EXTRACTED_SUFFIX)]
            for name in self.only
            if name.endswith(EXTRACTED_SUFFIX) and name[: -len(EXTRACTED_SUFFIX)] in renamed
        }
        return frozenset(wanted)

    def _extract(self, batch: LogBatch) -> LogBatch:
        lines = batch.line.to_pylist()
        bad = [bool(line) and line[0] not in '"{[' for line in lines]
        parsed = pa.array([bool(line) and not b for line, b in zip(lines, bad)])
        unmatched = np.zeros(len(lines), dtype=bool)  # a path of the stage found nothing
        for label, path in self.params:
            values = [None if not line or bad[i] else _path_value(line, path) for i, line in enumerate(lines)]
            unmatched |= np.array([v is None for v in values], dtype=bool)
            target = label + EXTRACTED_SUFFIX if label in batch.origin else label
            batch.set_parser_label(target, pa.array(values, pa.string()))
        some_missing = pc.and_(parsed, pa.array(unmatched))
        for label, _ in self.params:
            if label not in batch.stream:
                # As the reference: when a path of the stage finds nothing, every label of the
                # stage the entry lacks (never set, or dropped or renamed away) becomes empty.
                current = batch.label(label)
                missing = pc.and_(some_missing, pc.is_null(current))
                if pc.any(missing).as_py():
                    batch.set_label(label, pc.if_else(missing, pa.scalar("", pa.string()), current))
                    batch.mark_parsed(label, missing)
        set_error(batch, pa.array(bad), ERR_JSON)
        return batch


def _path_value(line: str, path: list[str | int]) -> str | None:
    found = json_scan.lookup(line, path)
    if found is None:
        return None
    kind, raw = found
    if kind == json_scan.NULL:
        return ""
    if kind == json_scan.OBJECT:
        return raw
    try:
        text = json_scan.unescape(raw)
    except json_scan.JsonScanError:
        return ""
    return "" if _RUNE_ERROR in text else text
