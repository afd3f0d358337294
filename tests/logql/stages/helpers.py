"""Small builders shared by the stage tests."""

from __future__ import annotations

from svclog.logql import ast
from svclog.logql.stages import block_to_batch, build_pipeline, group_by_labels
from svclog.logql.stages.batch import LogBatch, batch_from_rows
from svclog.model import Labels, Matcher, MatchType

STREAM = Labels({"app": "checkout", "env": "prod", "level": "info"}.items())


def batch(*lines: str, stream: Labels = STREAM, metadata: list[dict] | None = None) -> LogBatch:
    rows = [(1000 + i, line, (metadata[i] if metadata else {})) for i, line in enumerate(lines)]
    return batch_from_rows(stream, rows)


def run(stages: list, *lines: str, **kw) -> LogBatch:
    return build_pipeline(tuple(stages)).process(batch(*lines, **kw))


def col(b: LogBatch, name: str) -> list:
    return b.label(name).to_pylist()


def series(b: LogBatch) -> dict[str, list[str]]:
    """{label string: [lines]} as a result would show them."""
    return {str(labels): b.line.take(idx).to_pylist() for labels, idx in group_by_labels(b)}


def m(name: str, op: str, value: str) -> Matcher:
    return Matcher(name, MatchType(op), value)


def sf(name: str, op: str, value: str) -> ast.StringLabelFilter:
    return ast.StringLabelFilter(m(name, op, value))


def lf(expr) -> ast.LabelFilter:
    return ast.LabelFilter(expr)


__all__ = ["STREAM", "batch", "block_to_batch", "col", "lf", "m", "run", "series", "sf"]
