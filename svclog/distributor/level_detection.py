"""Log level discovery at ingest (`discover_log_levels`): each accepted entry gets the structured
metadata `detected_level`, as the reference's distributor adds it.

Per entry, the first rule that applies:
1. the entry already carries `detected_level`: its value is normalised, nothing is added;
2. a stream label named in `log_level_fields` (in that order, exact names): its value, normalised;
3. structured metadata named in `log_level_fields`: likewise;
4. OTLP `severity_number` metadata: its range (0 and >24 `unknown`, not an integer `info`);
5. the line: a JSON-looking line (`{ ... }`) is walked field by field down to
   `log_level_from_json_max_depth` levels, the first string field named (exactly) in
   `log_level_fields` wins; any other line with a `=` is read as logfmt up to its first syntax
   error, keys compared case-insensitively, the earliest listed field wins; a value that is not a
   known level word, or no value, falls through to
6. the first level keyword in the lower-cased line standing between word boundaries, else `unknown`.

Normalising maps trace/trc, debug/dbg, info/inf/information, warn/wrn/warning, error/err, critical
and fatal (any case) to their short names and keeps any other value as it is.

Line rules run as RE2 kernels over all of a push's lines at once. JSON lines the kernel cannot
decide (nesting deeper than it follows, escaped keys, malformed text) take the walker of the
`| json` stage, which follows the reference's lenient parser.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.config.limits import DEFAULT_LOG_LEVEL_FIELDS, LimitsConfig
from svclog.logql.stages import json_scan
from svclog.model import StreamColumns

LEVEL_LABEL = "detected_level"
# An entry's decision before its line is read: ("keep", its metadata), a level, or None (read the line)
_Decision = str | tuple[str, list[tuple[str, str]]] | None
UNKNOWN = "unknown"
SEVERITY_NUMBER = "severity_number"  # OTLP log records carry it as structured metadata

# canonical level -> the words that mean it (compared case-insensitively)
_WORDS = {
    "trace": ("trace", "trc"),
    "debug": ("debug", "dbg"),
    "info": ("info", "inf", "information"),
    "warn": ("warn", "wrn", "warning"),
    "error": ("error", "err"),
    "critical": ("critical",),
    "fatal": ("fatal",),
}
_NORMAL = {word: level for level, words in _WORDS.items() for word in words}
# OTLP severity numbers: upper bound of each range (1-4 trace, ..., 21-24 fatal)
_SEVERITY = ((4, "trace"), (8, "debug"), (12, "info"), (16, "warn"), (20, "error"), (24, "fatal"))

# Keywords searched in the lower-cased line, in the reference's order (the leftmost wins). Colons
# are not a left boundary (`misc:error` is no level) but are a right one (`error: ...`).
_KEYWORD = (
    r'(?:^|[ \t\n\[({"=])(?P<w>trace|debug|fatal|critical|error|err|warning|warn|info)'
    r'(?:[ \t\n\[\](){}:,!"=]|$)'
)
_KEYWORD_LEVEL = {"err": "error", "warning": "warn"}

# A JSON-looking line: first non-space character `{` (Unicode spaces), last non-space byte `}`
# (the reference steps back over single bytes there, so only ASCII spaces count).
_JSON_LEAD = r"^[\t\n\v\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]*\{"
_JSON_TRAIL = r"\}[\t\n\v\f\r ]*$"


@dataclass(frozen=True)
class LevelSettings:
    fields: tuple[str, ...]
    json_max_depth: int

    @classmethod
    def from_limits(cls, limits: LimitsConfig) -> LevelSettings | None:
        """The tenant's settings, None when discovery is off (it needs structured metadata too)."""
        if not (limits.discover_log_levels and limits.allow_structured_metadata):
            return None
        fields = tuple(limits.log_level_fields or ()) or DEFAULT_LOG_LEVEL_FIELDS
        return cls(fields, int(limits.log_level_from_json_max_depth))


def normalize(value: str) -> str:
    return _NORMAL.get(value.lower(), value)


def severity_level(text: str) -> str:
    """The level of an OTLP severity number (as Go's Atoi reads it: `info` when it is no integer)."""
    try:
        number = int(text) if re.fullmatch(r"[+-]?[0-9]+", text) else None
    except ValueError:
        number = None
    if number is None or not -(1 << 63) <= number < (1 << 63):
        return "info"
    if number == 0:
        return UNKNOWN
    return next((level for bound, level in _SEVERITY if number <= bound), UNKNOWN)


def detect_levels(columns: list[StreamColumns], settings: LevelSettings | None) -> list[StreamColumns]:
    """The streams with `detected_level` added to (or normalised in) every entry's metadata."""
    if settings is None or not columns:
        return columns
    # First the rules that need no line (labels, metadata); the rest are read in one pass.
    pending: list[str] = []
    plans: list[tuple[str | None, list[_Decision] | None]] = []
    for stream in columns:
        label_level = next((normalize(v) for f in settings.fields if (v := stream.labels.get(f))), None)
        per_entry = (
            None
            if stream.metadata is None
            else [_metadata_level(md, label_level, settings.fields) for md in stream.metadata]
        )
        if per_entry is None:
            if label_level is None:
                pending.extend(stream.lines)
        else:
            pending.extend(line for line, decided in zip(stream.lines, per_entry) if decided is None)
        plans.append((label_level, per_entry))
    found = iter(line_levels(pending, settings) if pending else ())
    return [
        _with_levels(stream, label_level, per_entry, found) for stream, (label_level, per_entry) in zip(columns, plans)
    ]


def _metadata_level(md: list[tuple[str, str]] | None, label_level: str | None, fields: tuple[str, ...]) -> _Decision:
    """An entry's decision before its line is read: ("keep", normalised md) when it has its own
    detected_level, the level from a label or its metadata, or None (read the line)."""
    if not md:
        return label_level
    for i, (name, value) in enumerate(md):
        if name == LEVEL_LABEL:
            level = normalize(value)
            if level == value:
                return ("keep", md)
            return ("keep", md[:i] + [(name, level)] + md[i + 1 :])
    if label_level is not None:
        return label_level
    names = dict(reversed(md))  # the first value of a repeated name
    hit = next((f for f in fields if names.get(f)), None)
    if hit is not None:
        return normalize(names[hit])
    severity = names.get(SEVERITY_NUMBER)
    return severity_level(severity) if severity else None


@functools.lru_cache(maxsize=64)
def _pair(level: str) -> tuple[str, str]:
    return (LEVEL_LABEL, level)


def _with_levels(
    stream: StreamColumns, label_level: str | None, per_entry: list[_Decision] | None, found: Iterator[str]
) -> StreamColumns:
    if per_entry is None:
        if label_level is not None:
            pair = [_pair(label_level)]
            return replace(stream, metadata=[list(pair) for _ in stream.lines])
        return replace(stream, metadata=[[_pair(next(found))] for _ in stream.lines])
    metadata: list[list[tuple[str, str]] | None] = []
    for md, decided in zip(stream.metadata or (), per_entry):
        if isinstance(decided, tuple):
            metadata.append(decided[1])
            continue
        level = decided if decided is not None else next(found)
        metadata.append((md or []) + [_pair(level)])
    return replace(stream, metadata=metadata)


# ---------------------------------------------------------------------------------- line rules


def line_levels(lines: list[str], settings: LevelSettings) -> list[str]:
    """Each line's detected level (rules 5 and 6 of the module docstring)."""
    array = pa.array(lines, pa.string())
    n = len(array)
    values = np.full(n, None, dtype=object)  # the level field's raw value, None when there is none
    is_json = _mask(pc.and_(pc.match_substring_regex(array, _JSON_LEAD), pc.match_substring_regex(array, _JSON_TRAIL)))
    json_rows = np.flatnonzero(is_json)
    if len(json_rows):
        values[json_rows] = _json_values(array.take(json_rows), settings.fields, settings.json_max_depth)
    logfmt_rows = np.flatnonzero(~is_json & _mask(pc.match_substring(array, "=")))
    if len(logfmt_rows):
        values[logfmt_rows] = _logfmt_values(array.take(logfmt_rows), settings.fields)
    levels = _known_levels(pa.array(values, pa.string()))
    # elementwise on the object array; numpy's stubs do not list None as an operand
    scan = np.flatnonzero(np.equal(levels, None))  # type: ignore[call-overload]
    if len(scan):
        levels[scan] = _keyword_levels(array.take(scan))
    out: list[str] = levels.tolist()
    return out


def _mask(result: pa.Array) -> np.ndarray:
    mask: np.ndarray = pc.fill_null(result, False).to_numpy(zero_copy_only=False)
    return mask


def _known_levels(values: pa.Array) -> np.ndarray:
    """Canonical levels of values that are level words (any case), None elsewhere."""
    out = np.full(len(values), None, dtype=object)
    present = np.flatnonzero(_mask(pc.is_valid(values)))
    if not len(present):
        return out
    taken = values.take(present)
    for level, words in _WORDS.items():
        # RE2's (?i) folds case as Go's EqualFold does
        hit = _mask(pc.match_substring_regex(taken, f"^(?i:{'|'.join(words)})$"))
        out[present[hit]] = level
    return out


def _keyword_levels(lines: pa.Array) -> np.ndarray:
    found = pc.struct_field(pc.extract_regex(pc.utf8_lower(lines), _KEYWORD), "w")
    words = pc.fill_null(found, UNKNOWN).to_numpy(zero_copy_only=False)
    return np.array([_KEYWORD_LEVEL.get(w, w) for w in words] if len(words) else [], dtype=object)


# ---- logfmt: the reference's decoder, read up to its first syntax error

_WS = r"[\x00-\x20]"
_KEY_CHAR = r'[^\x00-\x20="\x{FFFD}]'
_QUOTED = r'"(?:[^"\\]|\\(?:["\\/\'bfnrt]|u[0-9A-Fa-f]{4}))*"'  # escapes the decoder accepts
_BARE = r'[^\x00-\x20="]'
# whole pairs before the key: a bare one must be followed by a separator, a quoted one need not
_LOGFMT_PREFIX = rf"^(?:{_WS}*(?:{_KEY_CHAR}+(?:={_BARE}*)?{_WS}|{_KEY_CHAR}+={_QUOTED}))*?{_WS}*"


def _logfmt_hints(fields: tuple[str, ...]) -> list[str]:
    """The fields in order, one per case-insensitive spelling, that can be a logfmt key."""
    seen, hints = set(), []
    for field in fields:
        if field and field.casefold() not in seen and re.fullmatch(r'[^\x00-\x20="\ufffd]+', field):
            seen.add(field.casefold())
            hints.append(field)
    return hints


@functools.lru_cache(maxsize=64)
def _logfmt_patterns(hint: str) -> tuple[str, str]:
    key = f"(?i:{re.escape(hint)})"
    probe = rf'(?:^|[\x00-\x20"]){key}(?:=|{_WS}|$)'  # a key follows a separator or a quoted value
    value = rf"{_LOGFMT_PREFIX}{key}(?:(?P<q>={_QUOTED})|(?P<b>(?:={_BARE}*)?)(?:{_WS}|$))"
    return probe, value


def _logfmt_values(lines: pa.Array, fields: tuple[str, ...]) -> np.ndarray:
    """The value of the earliest listed field among each line's keys ("" when empty), else None."""
    out = np.full(len(lines), None, dtype=object)
    hints = _logfmt_hints(fields)
    if not hints:
        return out
    any_key = "|".join(re.escape(h) for h in hints)
    open_rows = np.flatnonzero(
        _mask(pc.match_substring_regex(lines, rf'(?:^|[\x00-\x20"])(?i:{any_key})(?:=|{_WS}|$)'))
    )
    for hint in hints:
        if not len(open_rows):
            break
        probe, pattern = _logfmt_patterns(hint)
        rows = open_rows[_mask(pc.match_substring_regex(lines.take(open_rows), probe))]
        if not len(rows):
            continue
        found = pc.extract_regex(lines.take(rows), pattern)
        hit = _mask(pc.is_valid(found))
        quoted = pc.struct_field(found, "q").to_numpy(zero_copy_only=False)[hit]
        bare = pc.struct_field(found, "b").to_numpy(zero_copy_only=False)[hit]
        out[rows[hit]] = [_unquote(q[1:]) if q else b[1:] for q, b in zip(quoted, bare)]
        open_rows = np.setdiff1d(open_rows, rows[hit], assume_unique=True)
    return out


_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)


def _unquote(quoted: str) -> str:
    """A quoted logfmt value's text (the decoder also accepts `\\'`, which JSON does not)."""
    body = quoted[1:-1]
    if "\\" not in body:
        return body
    return json_scan.unescape(_ESCAPE.sub(lambda m: "'" if m.group(1) == "'" else m.group(0), body))


# ---- JSON: the reference's field walk (objects followed, arrays skipped, first match wins)

_JWS = r"[ \n\r\t]*"
_JSTRING = r'"(?:[^"\\]|\\(?s:.))*"'
_JKEY = r'"[^"\\]*"'  # an escaped key could spell a level field: the walker reads those
_JSCALAR = rf'(?:{_JSTRING}|[-0-9][^ \n\r\t,{{}}\[\]"]*|true|false|null)'
_NEVER = r"(?:$x)"
_SKIP_NESTING = 3  # arrays/objects nested deeper go to the walker
_WALK_DEPTH = 4  # objects the kernel walks into at most (a deeper max_depth: the walker)


def _balanced(levels: int) -> tuple[str, str]:
    """(array, object) skipped by bracket counting with both kinds balanced (then counting either
    kind, as the reference does per value, ends at the same place), nested up to `levels`."""
    inner = _NEVER
    for _ in range(levels - 1):
        body = rf'(?:[^\[\]{{}}"]|{_JSTRING}|{inner})*'
        inner = rf"(?:\[{body}\]|\{{{body}\}})"
    body = rf'(?:[^\[\]{{}}"]|{_JSTRING}|{inner})*'
    return rf"\[{body}\]", rf"\{{{body}\}}"


@dataclass(frozen=True)
class _JsonWalk:
    occurrence: str  # a level field's member with a string value, wherever it is
    find: str  # (no captures) the walk reaches a level field's string member without an error
    full: str  # groups v<d>: the first such member's string at depth d
    depth: int


@functools.lru_cache(maxsize=32)
def _json_walk(fields: tuple[str, ...], max_depth: int, nesting: int) -> _JsonWalk | None:
    """The anchored walk kernels following arrays and objects nested up to `nesting` levels (0:
    flat objects only); None when a field cannot be matched verbatim (the walker reads all lines)."""
    if any(re.search(r'["\\/\x00-\x1f]', f) for f in fields):
        return None
    bounded = 0 < max_depth <= _WALK_DEPTH  # an unbounded walk nested deeper goes to the walker
    depth = min(max_depth if bounded else _WALK_DEPTH, nesting + 1)
    names = "|".join(re.escape(f) for f in sorted(set(fields), key=len, reverse=True))
    arrays, skip = _balanced(nesting) if nesting else (_NEVER, _NEVER)
    beyond = skip if bounded else _NEVER  # objects below the walked depth

    def member(d: int) -> str:
        nested = walk(d + 1) if d + 1 < depth else beyond
        return rf"{_JKEY}{_JWS}:{_JWS}(?:{_JSCALAR}|{arrays}|{nested})"

    def walk(d: int) -> str:
        return rf"\{{{_JWS}(?:{member(d)}{_JWS},{_JWS})*(?:{member(d)}{_JWS})?\}}"

    # The rest of an object the level was found in: it must close (the reference measures an object
    # before walking it), and may nest as deep as any walk could, so a line this cannot follow is not
    # walked past its first level field by the pattern either (it goes to the walker).
    tail_arrays, tail_objects = _balanced(nesting + depth)
    tail = rf'(?:[^\[\]{{}}"]|{_JSTRING}|{tail_arrays}|{tail_objects})*\}}'

    def find(d: int, capture: bool) -> str:
        value = rf"(?P<v{d}>{_JSTRING})" if capture else _JSTRING
        target = rf'"(?:{names})"{_JWS}:{_JWS}{value}'
        if d + 1 < depth:
            target = rf"(?:{target}|{_JKEY}{_JWS}:{_JWS}{find(d + 1, capture)}{tail})"
        return rf"\{{{_JWS}(?:{member(d)}{_JWS},{_JWS})*?{target}"

    return _JsonWalk(
        occurrence=rf'[{{,]{_JWS}"(?:{names})"{_JWS}:{_JWS}"',
        find=rf"^{_JWS}{find(0, False)}",
        full=rf"^{_JWS}{find(0, True)}",
        depth=depth,
    )


def _json_values(lines: pa.Array, fields: tuple[str, ...], max_depth: int) -> np.ndarray:
    """The first level field's raw string per JSON line, None when there is none.

    Walk order is text order, so when a line holds exactly one `"field": "..."` member and the walk
    reaches a level member, that one is it: a capture-free walk kernel (fast) and a substring
    extraction decide most lines. A line holding none has no level (escapes aside). The rest take
    the capturing kernel, then the walker."""
    out = np.full(len(lines), None, dtype=object)
    kernels = _json_walk(fields, max_depth, _SKIP_NESTING)
    if kernels is None:
        undecided = np.arange(len(lines))
    else:
        count = pc.count_substring_regex(lines, kernels.occurrence).to_numpy(zero_copy_only=False)
        escaped = _mask(pc.match_substring(lines, "\\u"))  # \u escapes could spell a field's name
        single = np.flatnonzero((count == 1) & ~escaped)
        undecided = np.flatnonzero((count > 1) | escaped)
        for nesting in (0, _SKIP_NESTING):
            if not len(single):
                break
            walk = _json_walk(fields, max_depth, nesting)
            assert walk is not None  # None depends on the fields alone, and `kernels` is not None
            reached = _mask(pc.match_substring_regex(lines.take(single), walk.find))
            rows = single[reached]
            if len(rows):
                value = pc.extract_regex(lines.take(rows), kernels.occurrence[:-1] + rf"(?P<v>{_JSTRING})")
                out[rows] = [v[1:-1] for v in pc.struct_field(value, "v").to_numpy(zero_copy_only=False)]
            single = single[~reached]
        if len(undecided):
            found = pc.extract_regex(lines.take(undecided), kernels.full)
            matched = _mask(pc.is_valid(found))
            values = np.full(len(undecided), None, dtype=object)
            for d in range(kernels.depth):
                raw = pc.struct_field(found, f"v{d}").to_numpy(zero_copy_only=False)
                take = matched & np.equal(values, None) & (raw != "")  # type: ignore[call-overload]  # as above
                values[take] = [v[1:-1] for v in raw[take]]
            out[undecided[matched]] = values[matched]
            undecided = undecided[~matched]
        undecided = np.concatenate([undecided, single])  # the kernels could not follow these lines
    wanted = frozenset(fields)
    for row in undecided:
        out[row] = walk_json(lines[int(row)].as_py(), wanted, max_depth)
    return out


def walk_json(line: str, fields: frozenset[str], max_depth: int) -> str | None:
    """The first string field named in `fields`, walking objects depth-first down to `max_depth`
    levels (<= 0: all), as the reference does; None when there is none or the walk fails first."""

    def visit(text: str, depth: int) -> str | None:
        if 0 < max_depth <= depth:
            return None
        for key, kind, raw in json_scan.each_field(text):
            if kind == json_scan.STRING and key in fields:
                return raw
            if kind == json_scan.OBJECT:
                hit = visit(raw, depth + 1)
                if hit is not None:
                    return hit
        return None

    try:
        return visit(line, 0)
    except json_scan.JsonScanError:
        return None
