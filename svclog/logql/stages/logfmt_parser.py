"""`| logfmt [--strict] [--keep-empty] [label="key", ...]`.

Tokenising follows the reference decoder: `key=value`, `key="quoted \"value\""`,
bare `key` (empty value), bytes <= ' ' separate pairs. A malformed pair (`a=b=c`,
`"x`, `=v`) is skipped; with `--strict` parsing stops there and the entry gets
`__error__=LogfmtParserErr` plus the decoder's message (byte position, 1-based).
Empty values are dropped unless `--keep-empty`. Keys are sanitised like json keys
and a key that is a stream label (or the entry's structured metadata) gets `_extracted`;
a repeated key keeps the last value.

The full parse is a per-entry loop, stepping token by token with compiled regexes.
When the engine's hints name the few labels a query can observe, plain lines are read
with RE2 kernels instead (see `_process_only`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql import ast
from svclog.logql.stages import json_scan
from svclog.logql.stages import logfmt_kernels as kernels
from svclog.logql.stages.batch import ERR_LOGFMT, EXTRACTED_SUFFIX, LogBatch, set_error
from svclog.logql.stages.json_parser import sanitize_key
from svclog.model import Labels, ParseError, is_valid_label_name

_SPACE = re.compile(r"[\x00-\x20]*")
_WORD = re.compile(r'[^\x00-\x20="]*')
_TO_SPACE = re.compile(r"[^\x00-\x20]*")
# (each of these three matches the empty string, so match() never gives None)
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
        matched = _SPACE.match(line, pos)
        assert matched is not None
        pos = matched.end()
        if pos >= n:
            return
        start = pos
        matched = _WORD.match(line, pos)
        assert matched is not None
        pos = matched.end()
        key = line[start:pos]
        ch = line[pos] if pos < n else " "
        if ch == '"' or (ch == "=" and not key):
            errors.append(LogfmtError(line, pos, _unexpected(ch)))
            matched = _TO_SPACE.match(line, pos)
            assert matched is not None
            pos = matched.end()
            continue
        if _RUNE_ERROR in key:
            errors.append(LogfmtError(line, pos, "invalid key"))
            if ch == "=":
                matched = _TO_SPACE.match(line, pos)
                assert matched is not None
                pos = matched.end()
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
        matched = _WORD.match(line, pos)
        assert matched is not None
        pos = matched.end()
        if pos < n and line[pos] in '="':
            errors.append(LogfmtError(line, pos, _unexpected(line[pos])))
            matched = _TO_SPACE.match(line, pos)
            assert matched is not None
            pos = matched.end()
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


# ---------------------------------------------------------------- hinted (vectorised) path
# When only a few labels are wanted, most lines are read with RE2 kernels instead of the
# scanner: a line qualifies when the scanner would see plain pairs only (clean keys that
# sanitise to themselves, no escapes, no malformed pair, no invalid UTF-8); there a key's
# value is its last non-empty occurrence as a whole token. Other lines take the scanner.
_WS = r"[\x00-\x20]"
_CLEAN_KEY = r"[A-Za-z_][A-Za-z0-9_]*"
_PLAIN_PAIR = rf'{_CLEAN_KEY}(?:=(?:"[^"\\]*"|[^\x00-\x20="]*))?'
_PLAIN_LINE = rf"^{_WS}*(?:{_PLAIN_PAIR}(?:{_WS}+{_PLAIN_PAIR})*)?{_WS}*$"
_CLEAN_KEY_FULL = re.compile(_CLEAN_KEY)


_VALUE = r'(?:"(?P<quoted>[^"\\]+)"|(?P<bare>[^\x00-\x20="]+))'


def _value_pattern(key: str) -> str:
    # greedy over whole tokens, so the match is the key's last non-empty occurrence (exact, slow:
    # RE2 tracks submatches across the whole prefix)
    return rf"^{_WS}*(?:{_PLAIN_PAIR}{_WS}+)*{re.escape(key)}={_VALUE}(?:{_WS}|$)"


def _first_value_pattern(key: str) -> str:
    # the first `key=value` after a separator, wherever it is (inside quotes too): fast
    return rf"(?:^|{_WS}){re.escape(key)}={_VALUE}(?:{_WS}|$)"


def _token_pattern(key: str) -> str:
    # a plain line has a `key=value` token: an even number of quotes before it (no captures,
    # so RE2 answers with its DFA)
    return rf'^(?:(?:[^"]*"[^"]*")*[^"]*{_WS})?{re.escape(key)}=(?:"[^"\\]+"|[^\x00-\x20="]+)(?:{_WS}|$)'


def check_expression(expression: str) -> None:
    """Refuse a parameter's expression as the reference's logfmt expression parser does: one key
    (letters, digits, `_`; not a digit first) or quoted string, then only quoted strings (a
    quote runs to the next `"` or `]`), blanks between; a key after the first token is a syntax
    error, any other character ends the input there, an error unless a token came before."""
    tokens, pos = 0, 0
    while pos < len(expression) and expression[pos] != "\x00":
        ch = expression[pos]
        if ch in " \t\n":
            pos += 1
        elif _EXPR_KEY_START.match(ch):
            if tokens:
                raise _expression_error(expression, "syntax error: unexpected KEY")
            pos = _EXPR_KEY.match(expression, pos).end()  # type: ignore[union-attr]
            tokens += 1
        elif ch == '"':
            pos = _EXPR_STRING.match(expression, pos).end()  # type: ignore[union-attr]
            tokens += 1
        elif tokens:
            raise _expression_error(expression, f"unexpected char {ch}")
        else:
            break
    if not tokens:
        raise _expression_error(expression, "syntax error: unexpected $end, expecting STRING or KEY")


_EXPR_KEY_START = re.compile(r"[A-Za-z_]")
_EXPR_KEY = re.compile(r"[A-Za-z0-9_]*")
_EXPR_STRING = re.compile(r'"[^"\]\x00]*["\]]?')


def _expression_error(expression: str, message: str) -> ParseError:
    return ParseError(f"cannot parse expression [{expression}]: {message}")


class LogfmtParserStage:
    def __init__(self, node: ast.LogfmtParser, only: frozenset[str] | None = None):
        self.strict = node.strict
        self.keep_empty = node.keep_empty
        self.params = {p.label: (p.expression or p.label) for p in node.params}
        for param in node.params:
            check_expression(param.label if param.expression is None else param.expression)
            if not is_valid_label_name(param.label):
                raise ParseError(f"invalid extracted label name '{param.label}'")
        # parser hints apply to the plain form only (flags and parameters change what is kept)
        self.only = only if not (self.strict or self.keep_empty or self.params) else None
        self.hinted: frozenset[str] = self.only or frozenset()  # what the hinted path reads
        # The reference's `logfmt a, b` under hints pre-sets every parameter label to "" and
        # counts that as extracted; once the hints' labels are all parameters, its scan stops
        # after the first parameter key of the line, leaving the others "". Same answers.
        self.first_key_only = bool(self.params) and only is not None and only <= set(self.params)
        # the labels the reference tells its parsers are required (engine/hints.py required_labels)
        self.required: frozenset[str] = frozenset()

    def process(self, batch: LogBatch) -> LogBatch:
        if self.only is not None:
            return self._process_only(batch)
        return self._process_all(batch)

    def _process_only(self, batch: LogBatch) -> LogBatch:
        line, origin = batch.line, batch.origin
        renamed = origin.names() + sorted(batch.metadata_names)  # keys that may get `_extracted`
        if any(name.endswith(EXTRACTED_SUFFIX) and name[: -len(EXTRACTED_SUFFIX)] in renamed for name in self.hinted):
            return self._process_all(batch)  # two line keys (`x`, `x_extracted`) give that label
        wanted = [(name, _raw_key(name, origin)) for name in sorted(self.hinted)]
        columns: dict[str, pa.Array] = {}
        undecided = np.zeros(len(line), dtype=bool)  # rows the key kernels could not read
        for name, key in wanted:
            if key is None:
                continue
            values, decided = _read_key(line, key)
            columns[name] = values
            undecided |= ~decided
        if undecided.any():
            rows = np.flatnonzero(undecided)
            exact = self._read_exactly(line.take(rows), [name for name, _ in wanted], origin)
            mask = pa.array(undecided)
            for name, values in exact.items():
                current = columns.get(name, pa.nulls(len(line), pa.string()))
                columns[name] = pc.replace_with_mask(current, mask, values)
        for name, _ in wanted:
            values = columns.get(name)
            if values is not None and values.null_count < len(values):
                batch.set_parser_label(name, values, keep_parsed=not self.params)
        return batch

    def _read_exactly(self, line: pa.Array, names: list[str], origin: Labels) -> dict[str, pa.Array]:
        """The slower exact reading: plain lines with the one-key kernels of `_extract`, the
        others with the scanner."""
        plain = pc.fill_null(
            pc.and_(pc.match_substring_regex(line, _PLAIN_LINE), pc.invert(pc.match_substring(line, _RUNE_ERROR))),
            False,
        )
        rest = pc.invert(plain)
        rest_rows = np.flatnonzero(rest.to_numpy(zero_copy_only=False))
        scanned = self._scan_rows(line.take(rest_rows).to_pylist(), origin) if len(rest_rows) else {}
        out: dict[str, pa.Array] = {}
        for name in names:
            key = _raw_key(name, origin)
            values = _extract_plain(line, key) if key is not None else pa.nulls(len(line), pa.string())
            if len(rest_rows):
                values = pc.replace_with_mask(
                    values, rest, pa.array(scanned.get(name, [None] * len(rest_rows)), pa.string())
                )
            out[name] = values
        return out

    def _scan_rows(self, lines: list[str], origin: Labels) -> dict[str, list[str | None]]:
        """The wanted labels of the given lines, read by the scanner (one list per label)."""
        columns: dict[str, list[str | None]] = {}
        for row, text in enumerate(lines):
            for key, value in _first_error_pairs(text or "", False)[0]:
                name = self._label_name(key, origin)
                if name is None or name not in self.hinted or not value or _RUNE_ERROR in value:
                    continue
                columns.setdefault(name, [None] * len(lines))[row] = value
        return columns

    def _process_all(self, batch: LogBatch) -> LogBatch:
        n = len(batch)
        origin = batch.origin
        columns: dict[str, list[str | None]] = {label: [None] * n for label in self.params}
        errors: list[str | None] = [None] * n
        names: dict[str, str | None] = {}  # raw key -> label name (None: not extracted)
        for row, line in enumerate(batch.line.to_pylist()):
            pairs, errors[row] = _first_error_pairs(line or "", self.strict)
            if errors[row] is not None and self.required and not self.params:
                pairs, errors[row] = self._until_required(batch, row, pairs, errors[row])
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
                if self.first_key_only:
                    break
        for name, values in columns.items():
            column = pa.array(values, pa.string())
            if name in self.params and name not in origin:
                column = _default_empty(batch, name, column)
            if column.null_count < n:
                batch.set_parser_label(name, column, keep_parsed=not self.params)
        err = pa.array(errors, pa.string())
        set_error(batch, pa.array([e is not None for e in errors]), ERR_LOGFMT, err)
        return batch

    def _until_required(
        self, batch: LogBatch, row: int, pairs: list[tuple[str, str]], error: str | None
    ) -> tuple[list[tuple[str, str]], str | None]:
        """The reference's strict scan ends, with no error, at the pair that completes the
        required labels the entry still lacks: the malformed pair after it is never read."""
        missing = {name for name in self.required if not batch.was_extracted(name, row)}
        for i, (key, value) in enumerate(pairs):
            name = self._label_name(key, batch.origin)
            if name is not None and (value or self.keep_empty):
                missing.discard(name)
            if not missing:
                return pairs[: i + 1], None
        return pairs, error

    def _label_name(self, key: str, origin: Labels) -> str | None:
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


def _default_empty(batch: LogBatch, label: str, values: pa.Array) -> pa.Array:
    """`logfmt label=...` gives every entry the label, "" when the key is missing, except
    where the entry holds it as structured metadata (the reference presets "" only where
    the name is neither a stream label nor the entry's structured metadata)."""
    held = batch.metadata_rows(label)
    filled = pc.coalesce(values, pa.scalar("", pa.string()))
    return filled if held is None else pc.if_else(held, values, filled)


def _extract_plain(line: pa.Array, key: str) -> pa.Array:
    """The key's value on plain lines. Where `key=` follows a separator once, the first match
    is the token when the line has one (`_token_pattern`); lines with several occurrences
    take the exact (slower) pattern."""
    value = pc.if_else(
        pc.match_substring_regex(line, _token_pattern(key)),
        _matched_value(pc.extract_regex(line, _first_value_pattern(key))),
        pa.scalar(None, pa.string()),
    )
    several = pc.fill_null(pc.greater(pc.count_substring_regex(line, rf"(?:^|{_WS}){re.escape(key)}="), 1), False)
    if pc.any(several).as_py():
        rows = np.flatnonzero(several.to_numpy(zero_copy_only=False))
        exact = _matched_value(pc.extract_regex(line.take(rows), _value_pattern(key)))
        value = pc.replace_with_mask(value, several, exact)
    return value


def _read_key(line: pa.Array, key: str) -> tuple[pa.Array, np.ndarray]:
    """(values, decided): the key's value where the kernels of logfmt_kernels can tell, null where
    the line has none; `decided` is false on the other rows."""
    return kernels.read_key(line, key)


def _matched_value(found: pa.Array) -> pa.Array:
    quoted, bare = pc.struct_field(found, "quoted"), pc.struct_field(found, "bare")
    return pc.if_else(pc.not_equal(quoted, ""), quoted, bare)


def _raw_key(name: str, origin: Labels) -> str | None:
    """The line key that yields label `name` on the hinted path (None: no plain key can)."""
    if name in origin:
        return None  # a stream label: the parsed copy would be `<name>_extracted`
    return name if _CLEAN_KEY_FULL.fullmatch(name) else None
