"""`| line_format "{{.status}} {{__line__}}"`: replace each line with a rendered template.

The template sees every label of the entry (stream, structured metadata, parsed,
`__error__`/`__error_details__`), plus the line and timestamp through `__line__` and
`__timestamp__`. A runtime error keeps the line and records `TemplateFormatErr`
with the error text. Go templates have no Arrow kernel: rendering is a per-entry
loop, cached by the values the template can observe when those are known.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pyarrow as pa

from svclog.logql import ast
from svclog.logql.stages.batch import ERR_TEMPLATE_FORMAT, LogBatch, set_error
from svclog.model import ParseError

if TYPE_CHECKING:
    from svclog.logql.template import Template

# A bare `.` (the whole label map) or `$` makes the output depend on every label.
_WHOLE_MAP = re.compile(r"(?:^|[\s(|])[.$](?=[\s)|}])")


def compile_template(text: str, name: str = "line") -> Template:
    """Template.parse with its parse error mapped to ParseError; `name` is the template's name in
    its errors (the reference's line_format names its template `line`, label_format `label`)."""
    from svclog.logql.template import Template

    try:
        return Template.parse(text, name)
    except ParseError:
        raise
    except Exception as err:  # the template package's own parse error type
        raise ParseError(str(err)) from err


def label_rows(batch: LogBatch) -> list[dict[str, str]]:
    """Every entry's labels as a dict (the template's data)."""
    base = batch.stream.to_dict()
    columns = [(name, arr.to_pylist()) for name, arr in batch.labels.items() if arr.null_count < len(arr)]
    rows = []
    for i in range(len(batch)):
        row = dict(base)
        for name, values in columns:
            if values[i] is not None:
                row[name] = values[i]
        rows.append(row)
    return rows


class Renderer:
    """Renders one template over a batch; returns (outputs, error messages) per entry."""

    def __init__(self, text: str, name: str = "line"):
        self.template = compile_template(text, name)
        self.uses_line = "__line__" in text
        self.uses_ts = "__timestamp__" in text
        self.keys: list[str] | None = None
        if not _WHOLE_MAP.search(text):
            self.keys = sorted(self.template.referenced_labels())

    def render(
        self, rows: list[dict[str, str]], lines: list[str], ts: list[int]
    ) -> tuple[list[str | None], list[str | None]]:
        from svclog.logql.template import TemplateExecError

        out: list[str | None] = []
        errors: list[str | None] = []
        cache: dict[tuple[tuple[str | None, ...], str | None, int | None], tuple[str | None, str | None]] = {}
        for row, line, stamp in zip(rows, lines, ts):
            key = None
            if self.keys is not None:
                key = (
                    tuple(row.get(k) for k in self.keys),
                    line if self.uses_line else None,
                    stamp if self.uses_ts else None,
                )
                hit = cache.get(key)
                if hit is not None:
                    out.append(hit[0])
                    errors.append(hit[1])
                    continue
            try:
                result: tuple[str | None, str | None] = (self.template.render(row, line, stamp), None)
            except TemplateExecError as err:
                result = (None, str(err))
            if key is not None:
                cache[key] = result
            out.append(result[0])
            errors.append(result[1])
        return out, errors


class LineFormatStage:
    def __init__(self, node: ast.LineFormat):
        try:
            self.renderer = Renderer(node.template)
        except ParseError as err:
            raise ParseError(f"invalid line template: {err.message}") from None

    def process(self, batch: LogBatch) -> LogBatch:
        if len(batch) == 0:
            return batch
        lines = batch.line.to_pylist()
        out, errors = self.renderer.render(label_rows(batch), lines, batch.ts.to_pylist())
        failed = [e is not None for e in errors]
        batch.line = pa.array([line if o is None else o for o, line in zip(out, lines)], pa.string())
        if any(failed):
            set_error(batch, pa.array(failed), ERR_TEMPLATE_FORMAT, pa.array(errors, pa.string()))
        return batch
