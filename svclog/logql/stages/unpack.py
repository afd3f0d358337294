"""`| unpack`: undo promtail's `pack` stage.

A packed line is a JSON object whose `_entry` string is the original line and whose
other string fields are labels. When `_entry` is present the line is replaced and the
other string fields become labels (a stream-label name gets `_extracted`); without it
nothing changes. A line that is not an object gets `__error__=JSONParserErr`.
JSON decoding is a per-entry loop (C `json.loads` fast path, lenient walker fallback).
"""

from __future__ import annotations

import pyarrow as pa

from svclog.logql import ast
from svclog.logql.stages import json_scan
from svclog.logql.stages.batch import ERR_JSON, EXTRACTED_SUFFIX, LogBatch, set_error
from svclog.logql.stages.json_parser import sanitize_key

PACKED_ENTRY_KEY = "_entry"
NOT_AN_OBJECT = "expecting json object(6), but it is not"
_RUNE_ERROR = "\ufffd"


def unpack_line(line: str) -> tuple[str | None, list[tuple[str, str]], str | None]:
    """(new line or None, raw (key, value) string fields, error details)."""
    if not line:
        return None, [], None
    if line[0] != "{":
        return None, [], NOT_AN_OBJECT
    obj = json_scan.loads_object(line)
    if obj is not None:
        packed_entry = obj.get(PACKED_ENTRY_KEY)
        fields = [
            (k, "" if _RUNE_ERROR in v else v)
            for k, v in obj.items()
            if k != PACKED_ENTRY_KEY and isinstance(v, str) and not isinstance(v, json_scan.RawNumber)
        ]
        packed = isinstance(packed_entry, str) and not isinstance(packed_entry, json_scan.RawNumber)
        return (packed_entry if packed else None), fields, None
    entry: str | None = None
    fields = []
    try:
        for key, kind, raw in json_scan.each_field(line):
            if kind != json_scan.STRING:
                continue
            if key == PACKED_ENTRY_KEY:
                entry = json_scan.unescape(raw)
                continue
            try:
                value = json_scan.unescape(raw)
            except json_scan.JsonScanError:
                value = ""
            fields.append((key, "" if _RUNE_ERROR in value else value))
    except json_scan.JsonScanError as err:
        return None, [], str(err)
    return entry, fields, None


class UnpackStage:
    def __init__(self, node: ast.UnpackParser | None = None):
        del node

    def process(self, batch: LogBatch) -> LogBatch:
        n = len(batch)
        lines = batch.line.to_pylist()
        columns: dict[str, list[str | None]] = {}
        errors: list[str | None] = [None] * n
        new_lines = list(lines)
        for row, line in enumerate(lines):
            entry, fields, errors[row] = unpack_line(line or "")
            if entry is None:
                continue
            new_lines[row] = entry
            for key, value in fields:
                name = sanitize_key(key + EXTRACTED_SUFFIX if key in batch.origin else key)
                col = columns.get(name)
                if col is None:
                    col = columns[name] = [None] * n
                col[row] = value
        for name, values in columns.items():
            if name:
                batch.set_parser_label(name, pa.array(values, pa.string()), keep_parsed=True)
        batch.line = pa.array(new_lines, pa.string())
        set_error(batch, pa.array([e is not None for e in errors]), ERR_JSON, pa.array(errors, pa.string()))
        return batch
