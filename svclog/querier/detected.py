"""Detected labels and fields, as Grafana Logs Drilldown and logcli read them.

Detected fields come from a sample of log entries (the newest `line_limit` lines a log
query returns, with stream labels, structured metadata and the query's parsed labels kept
apart): every structured-metadata key, every label the query's own parsers made, and what
the `json` parser (or, when the line is not a JSON object, a lenient `logfmt`) reads from
the line. Each field gets a type guessed from its values (int, float, boolean, duration,
bytes, else string), the parsers that produced it (none for structured metadata) and, for
json, the path of keys it came from. Cardinalities are counted over the sample only, so
they are estimates of the real ones, as the reference's sketches are.

Detected labels are stream labels with their number of distinct values; labels whose
values all look like ids (numbers, UUIDs) are left out, except the ones Drilldown always
shows (cluster, namespace, instance, pod).

Plain functions over plain data: the serve layer fetches the sample and label values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from svclog.gocompat.durations import parse_go_duration
from svclog.logql import ast
from svclog.logql.parser import parse
from svclog.logql.printer import humanize_bytes
from svclog.logql.stages import json_scan
from svclog.logql.stages.batch import ERROR_DETAILS_LABEL, ERROR_LABEL, EXTRACTED_SUFFIX
from svclog.logql.stages.convert import go_parse_float, humanize_parse_bytes
from svclog.logql.stages.json_parser import sanitize_key
from svclog.logql.stages.logfmt_parser import scan_pairs
from svclog.model import ValidationError

INT, FLOAT, BOOLEAN, DURATION, BYTES, STRING = "int", "float", "boolean", "duration", "bytes", "string"
JSON, LOGFMT = "json", "logfmt"
# Labels a parser may set that are not fields (the reference's preserve-error label included).
_NOT_FIELDS = frozenset({ERROR_LABEL, ERROR_DETAILS_LABEL, "__preserve_error__"})
_RUNE_ERROR = "\ufffd"


# ---------------------------------------------------------------- queries


def check_log_selector(query: str) -> None:
    """detected_fields samples with a log query: a selector with any pipeline, not a metric query."""
    if not isinstance(parse(query), ast.LogQuery):
        raise ValidationError("only log selector is supported")


def check_label_matchers(query: str) -> None:
    """detected_labels reads stream labels only: a bare selector, no line filters or other stages."""
    expr = parse(query)
    if not isinstance(expr, ast.LogQuery) or expr.stages:
        raise ValidationError("only label matchers are supported")


# ---------------------------------------------------------------- the sample


@dataclass(frozen=True)
class SampledEntry:
    """One log entry of the sample, its label categories kept apart."""

    stream: Mapping[str, str]
    line: str
    metadata: Mapping[str, str] = field(default_factory=dict)
    parsed: Mapping[str, str] = field(default_factory=dict)


def entries_from_streams(result: Iterable[Mapping]) -> Iterator[SampledEntry]:
    """Entries of a categorized streams result: `[ts, line, {"structuredMetadata", "parsed"}]`."""
    for stream in result:
        labels = stream.get("stream") or {}
        for value in stream.get("values") or ():
            extra = value[2] if len(value) > 2 and value[2] else {}
            yield SampledEntry(labels, value[1], extra.get("structuredMetadata") or {}, extra.get("parsed") or {})


# ---------------------------------------------------------------- value types (Go's parsers, in the reference's order)

_GO_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_GO_BOOLS = frozenset({"1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"})
_INT64 = 1 << 63


def field_type(value: str) -> str:
    """The type a value reads as: strconv.ParseInt, ParseFloat, ParseBool, time.ParseDuration, humanize.ParseBytes."""
    if _GO_INT.fullmatch(value) and -_INT64 <= int(value) < _INT64:
        return INT
    for kind, parse_as in (
        (FLOAT, go_parse_float),
        (BOOLEAN, _go_parse_bool),
        (DURATION, parse_go_duration),
        (BYTES, humanize_parse_bytes),
    ):
        try:
            parse_as(value)
            return kind
        except ValueError:
            continue
    return STRING


def _go_parse_bool(value: str) -> bool:
    if value not in _GO_BOOLS:
        raise ValueError(value)
    return value in ("1", "t", "T", "TRUE", "true", "True")


# Unit suffixes a byte value must end with to be re-rendered (lower case; note the bare "b").
_BYTE_SUFFIXES = (
    "b",
    "kib",
    "kb",
    "mib",
    "mb",
    "gib",
    "gb",
    "tib",
    "tb",
    "pib",
    "pb",
    "eib",
    "eb",
    "ki",
    "k",
    "mi",
    "m",
    "gi",
    "g",
    "ti",
    "t",
    "pi",
    "p",
    "ei",
    "e",
)


def query_ready_bytes(value: str) -> str:
    """A byte size in the spelling a query can use directly (`12KB` -> `12kB`); other values unchanged."""
    if not value.lower().endswith(_BYTE_SUFFIXES):
        return value
    try:
        return humanize_bytes(humanize_parse_bytes(value))
    except ValueError:
        return value


# ---------------------------------------------------------------- parsing one line


@dataclass(frozen=True)
class ParsedLine:
    parser: str  # json, or logfmt when the line is not a JSON object (lenient logfmt never fails)
    labels: dict[str, set[str]]
    json_paths: dict[str, list[str]]


def parse_entry(entry: SampledEntry) -> ParsedLine:
    """The query's parsed labels plus what json (else logfmt) reads from the line.

    A key that is a stream label becomes `<key>_extracted`; labels the query already parsed
    do not count as stream labels here, so re-reading them keeps their names.
    """
    labels: dict[str, set[str]] = {k: {v} for k, v in entry.parsed.items() if k not in _NOT_FIELDS}
    stream = {k for k in entry.stream if k not in entry.parsed}
    leaves = json_leaves(entry.line)
    paths: dict[str, list[str]] = {}
    if leaves is not None:
        parser, found = JSON, _json_labels(leaves, stream, paths)
    else:
        parser, found = LOGFMT, _logfmt_labels(entry.line, stream)
    for name, value in found.items():
        if name not in _NOT_FIELDS:
            labels.setdefault(name, set()).add(value)
    return ParsedLine(parser, labels, paths)


def json_leaves(line: str) -> list[tuple[list[str], str]] | None:
    """(key path, value) of every string, number and boolean in a JSON object line; None when the
    line is not one (the reference's parser walks leniently: text after the object is ignored)."""
    out: list[tuple[list[str], str]] = []
    obj = json_scan.loads_object(line)
    if obj is not None:
        _object_leaves(obj, [], out)
        return out
    try:
        _scanned_leaves(line, [], out)
    except json_scan.JsonScanError:
        return None
    return out


def _object_leaves(obj: dict, path: list[str], out: list[tuple[list[str], str]]) -> None:
    for key, value in obj.items():
        if isinstance(value, dict):
            _object_leaves(value, [*path, key], out)
        elif isinstance(value, str):
            out.append(([*path, key], "" if _RUNE_ERROR in value else value))
        elif isinstance(value, bool):
            out.append(([*path, key], "true" if value else "false"))


def _scanned_leaves(raw: str, path: list[str], out: list[tuple[list[str], str]]) -> None:
    for key, kind, value in json_scan.each_field(raw):
        if kind == json_scan.OBJECT:
            _scanned_leaves(value, [*path, key], out)
        elif kind == json_scan.STRING:
            try:
                text = json_scan.unescape(value)
            except json_scan.JsonScanError:
                text = ""
            out.append(([*path, key], "" if _RUNE_ERROR in text else text))
        elif kind in (json_scan.NUMBER, json_scan.BOOLEAN):
            out.append(([*path, key], value))


def _json_labels(leaves: list[tuple[list[str], str]], stream: set[str], paths: dict[str, list[str]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for path, value in leaves:
        name = ""
        for key in path:
            name = sanitize_key(key, name)
        if not name:
            continue
        if name in stream:
            name += EXTRACTED_SUFFIX
        found[name] = value
        # the reference strips the suffix from every nested key it records (a quirk kept)
        paths[name] = list(path) if len(path) == 1 else [k.removesuffix(EXTRACTED_SUFFIX) for k in path]
    return found


def _logfmt_labels(line: str, stream: set[str]) -> dict[str, str]:
    """Lenient logfmt: malformed pairs are skipped, empty values dropped, the last value of a key wins."""
    found: dict[str, str] = {}
    for key, value in scan_pairs(line, []):
        name = sanitize_key(key)
        value = value.replace(_RUNE_ERROR, "")  # invalid UTF-8 is dropped from the value
        if not name or not value:
            continue
        found[name + EXTRACTED_SUFFIX if name in stream else name] = value
    return found


# ---------------------------------------------------------------- detected fields


@dataclass
class _Field:
    parsers: list[str]
    kind: str = STRING
    json_path: list[str] | None = None
    values: set[str] = field(default_factory=set)

    def add(self, values: set[str]) -> None:
        # The type follows the entry read last (its first value), as the reference re-guesses per entry.
        first = next(iter(values), None)
        if first is not None:
            self.kind = field_type(first)
        self.values |= values


def detect_fields(entries: Iterable[SampledEntry], limit: int) -> list[dict]:
    """`fields` of the detected_fields answer: at most `limit` fields, first seen first."""
    fields: dict[str, _Field] = {}

    def slot(name: str, parsers: list[str]) -> _Field | None:
        found = fields.get(name)
        if found is None and len(fields) < limit:
            found = fields[name] = _Field(list(parsers))
        return found

    for entry in entries:
        for name, value in entry.metadata.items():
            if (meta := slot(name, [])) is not None:
                meta.add({value})
        parsed = parse_entry(entry)
        parsers = [parsed.parser]
        for name, values in parsed.labels.items():
            target = slot(name, parsers)
            if target is None:
                continue
            target.parsers.extend(p for p in parsers if p not in target.parsers)
            if parsed.parser == JSON:
                target.json_path = parsed.json_paths.get(name)
            target.add(values)
    return [_field_json(name, f) for name, f in fields.items()]


def _field_json(name: str, f: _Field) -> dict:
    out = {"label": name, "type": f.kind, "cardinality": len(f.values), "parsers": f.parsers or None}
    if f.json_path:
        out["jsonPath"] = f.json_path
    return out


def field_values(entries: Iterable[SampledEntry], name: str, limit: int) -> list[str]:
    """Distinct values of one field over the sample (stops once `limit` are found, after a whole entry)."""
    values: set[str] = set()
    for entry in entries:
        if len(values) >= limit:
            break
        if name in entry.metadata:
            values.add(entry.metadata[name])
        for value in parse_entry(entry).labels.get(name, ()):
            values.add(query_ready_bytes(value))
    return sorted(values)


def fields_body(fields: list[dict], values: list[str] | None, limit: int) -> dict:
    """The bare answer object: `{}` when nothing was found, else fields or values and the limit."""
    if values is not None:
        return {"values": values, "limit": limit} if values else {}
    return {"fields": fields, "limit": limit} if fields else {}


# ---------------------------------------------------------------- detected labels

# Labels Drilldown always offers, whatever their values look like.
ALWAYS_SHOWN = frozenset({"cluster", "namespace", "instance", "pod"})
_UUID36 = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
# the spellings google/uuid's Parse accepts
_UUID = re.compile(rf"{_UUID36}|urn:uuid:{_UUID36}|\{{{_UUID36}\}}|[0-9a-f]{{32}}", re.IGNORECASE | re.ASCII)


def detect_labels(values_by_label: Mapping[str, Iterable[str]]) -> list[dict]:
    """`detectedLabels`: each label worth offering with its number of distinct values."""
    out = []
    for name, values in values_by_label.items():
        distinct = set(values)
        if not distinct or (name not in ALWAYS_SHOWN and _looks_like_ids(distinct)):
            continue
        out.append({"label": name, "cardinality": len(distinct)})
    return out


def _looks_like_ids(values: set[str]) -> bool:
    """All values numbers or UUIDs; up to two values of 0/1 are a flag, not ids."""
    if len(values) <= 2 and values <= {"0", "1"}:
        return False
    return all(_is_id(v) for v in values)


def _is_id(value: str) -> bool:
    try:
        go_parse_float(value)
        return True
    except ValueError:
        return _UUID.fullmatch(value) is not None


def labels_body(labels: list[dict]) -> dict:
    return {"detectedLabels": labels} if labels else {}
