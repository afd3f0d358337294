"""`| decolorize`: strip ANSI colour/control escape sequences from the line (one RE2 kernel)."""

from __future__ import annotations

import pyarrow.compute as pc

from svclog.logql import ast
from svclog.logql.stages.batch import LogBatch

# CSI and OSC sequences as terminals emit them (ESC or the 8-bit CSI introducer).
ANSI_ESCAPE = (
    r"[\x1b\x{9b}][\[\]()#;?]*(?:(?:(?:[a-zA-Z\d]*(?:;[a-zA-Z\d]*)*)?\x07)"
    r"|(?:(?:\d{1,4}(?:;\d{0,4})*)?[\dA-PRZcf-ntqry=><~]))"
)


class DecolorizeStage:
    def __init__(self, node: ast.Decolorize | None = None):
        del node

    def process(self, batch: LogBatch) -> LogBatch:
        batch.line = pc.replace_substring_regex(batch.line, ANSI_ESCAPE, "")
        return batch
