"""`| label_format dst=src, dst2="{{ template }}"`.

Operations run left to right. A rename copies the source's value (where the entry
has it) to the destination and removes the source; a template keeps its inputs.
As in the reference, every template of one stage sees the labels as they were when
the stage's first template ran (renames before it included). A template error
records `TemplateFormatErr` and leaves the destination untouched.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql import ast
from svclog.logql.stages.batch import (
    ERR_TEMPLATE_FORMAT,
    ERROR_LABEL,
    LogBatch,
    set_error,
)
from svclog.logql.stages.line_format import Renderer, label_rows
from svclog.model import ParseError


class LabelFormatStage:
    def __init__(self, node: ast.LabelFormat):
        seen: set[str] = set()
        for op in node.ops:
            if op.dst == ERROR_LABEL:
                raise ParseError(f"{op.dst} cannot be formatted")
            if op.dst in seen:
                raise ParseError(f"multiple label name '{op.dst}' not allowed in a single format operation")
            seen.add(op.dst)
        self.ops = [(op, _renderer(op) if op.is_template else None) for op in node.ops]

    def process(self, batch: LogBatch) -> LogBatch:
        if len(batch) == 0:
            return batch
        rows: list[dict[str, str]] | None = None
        for op, renderer in self.ops:
            if renderer is None:
                _rename(batch, op.dst, op.src)
                continue
            if rows is None:
                rows = label_rows(batch)
            out, errors = renderer.render(rows, batch.line.to_pylist(), batch.ts.to_pylist())
            batch.set_parsed(op.dst, pa.array(out, pa.string()))
            failed = [e is not None for e in errors]
            if any(failed):
                set_error(batch, pa.array(failed), ERR_TEMPLATE_FORMAT, pa.array(errors, pa.string()))
        return batch


def _renderer(op: ast.LabelFormatOp) -> Renderer:
    try:
        return Renderer(op.src, "label")
    except ParseError as err:
        raise ParseError(f"invalid template for label '{op.dst}': {err.message}") from None


def _rename(batch: LogBatch, dst: str, src: str) -> None:
    if not batch.has_label(src):
        return
    value = batch.label(src)
    present = pc.is_valid(value)
    batch.set_label(dst, pc.if_else(present, value, batch.label(dst)))
    batch.mark_parsed(dst, present)
    # Renaming a label onto itself deletes it, as the reference's set-then-delete does.
    batch.set_label(src, pc.if_else(present, pa.scalar(None, pa.string()), batch.label(src)))
    batch.record_deleted(src, present)
