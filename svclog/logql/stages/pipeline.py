"""Build a pipeline from AST stages and run it over batches.

One processor per stage, chosen by a table keyed on the AST node type; each takes a
batch and returns the surviving entries (filters) or the batch with new labels or
lines (parsers, formatters). Construction validates what the parser could not
(regexes, ip patterns, templates) and raises ParseError.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast

import pyarrow as pa
import pyarrow.compute as pc

from svclog.gocompat.strconv import quote as go_quote
from svclog.logql import ast
from svclog.logql.printer import reference_text
from svclog.logql.stages.batch import ERROR_DETAILS_LABEL, ERROR_LABEL, LogBatch
from svclog.logql.stages.decolorize import DecolorizeStage
from svclog.logql.stages.drop_keep import DropStage, KeepStage
from svclog.logql.stages.json_parser import JsonParserStage
from svclog.logql.stages.label_filter import LabelFilterStage
from svclog.logql.stages.label_format import LabelFormatStage
from svclog.logql.stages.line_filter import LineFilterStage
from svclog.logql.stages.line_format import LineFormatStage
from svclog.logql.stages.logfmt_parser import LogfmtParserStage
from svclog.logql.stages.pattern_parser import PatternParserStage
from svclog.logql.stages.regexp_parser import RegexpParserStage
from svclog.logql.stages.unpack import UnpackStage
from svclog.model import ParseError


class StageProcessor(Protocol):
    def process(self, batch: LogBatch) -> LogBatch: ...


# keyed by stage node type: each builder takes exactly the node type it is filed under
_BUILDERS: dict[type, Callable[[Any], StageProcessor]] = {
    ast.LineFilter: LineFilterStage,
    ast.JsonParser: JsonParserStage,
    ast.LogfmtParser: LogfmtParserStage,
    ast.RegexpParser: RegexpParserStage,
    ast.PatternParser: PatternParserStage,
    ast.UnpackParser: UnpackStage,
    ast.LabelFilter: LabelFilterStage,
    ast.LineFormat: LineFormatStage,
    ast.LabelFormat: LabelFormatStage,
    ast.Drop: DropStage,
    ast.Keep: KeepStage,
    ast.Decolorize: DecolorizeStage,
}


def build_stage(stage: ast.Stage) -> StageProcessor:
    builder = _BUILDERS.get(type(stage))
    if builder is None:
        raise ParseError(f"unsupported pipeline stage {type(stage).__name__}")
    return builder(stage)


class Pipeline:
    def __init__(self, processors: list[StageProcessor]):
        self.processors = processors

    @property
    def is_empty(self) -> bool:
        return not self.processors

    def process(self, batch: LogBatch) -> LogBatch:
        """Run every stage; stops early once no entry is left."""
        for processor in self.processors:
            if len(batch) == 0:
                break
            batch = processor.process(batch)
        return batch


def build_pipeline(
    stages: tuple[ast.Stage, ...],
    parser_labels: frozenset[str] | None = None,
    required: frozenset[str] | None = None,
) -> Pipeline:
    """`parser_labels` (the engine's hints): the labels the query's parser must extract, the
    rest of each line's keys being unobservable in the answer; None extracts everything.
    `required`: the labels the reference tells its parsers are required (engine/hints.py
    required_labels); a parser then skips the entries that have them all parsed already."""
    check_stages(stages)
    stages = reorder_stages(stages)
    if parser_labels is None:
        processors = [build_stage(stage) for stage in stages]
    else:
        processors = [
            _HINTED[type(stage)](stage, only=parser_labels) if type(stage) in _HINTED else build_stage(stage)
            for stage in stages
        ]
    if required:
        for processor in processors:
            if isinstance(processor, (JsonParserStage, LogfmtParserStage)):
                processor.required = required
        processors = [
            SkipWhenExtracted(processor, required) if isinstance(stage, _PARSERS) else processor
            for stage, processor in zip(stages, processors)
        ]
    return Pipeline(_filters_before_parsers(stages, processors))


# Stages a line filter is never moved across: they end a run of line filters.
_RUN_ENDS = (ast.LabelFilter, ast.LineFormat, ast.UnpackParser)


def reorder_stages(stages: tuple[ast.Stage, ...]) -> tuple[ast.Stage, ...]:
    """The order the reference runs stages in: within each run ended by a label filter,
    line_format or unpack, the line filters go first (a label filter stays after the run's
    other stages, line_format and unpack close it). Only decolorize, which rewrites the line
    without ending a run, makes this observable: `| decolorize |= "x"` matches the raw line."""
    out: list[ast.Stage] = []
    filters: list[ast.Stage] = []
    others: list[ast.Stage] = []
    for stage in stages:
        if isinstance(stage, ast.LineFilter):
            filters.append(stage)
            continue
        if not isinstance(stage, ast.LabelFilter):
            others.append(stage)
        if isinstance(stage, _RUN_ENDS):
            out += filters + others
            filters, others = [], []
        if isinstance(stage, ast.LabelFilter):
            out.append(stage)
    return tuple(out + filters + others)


_PARSERS = (ast.JsonParser, ast.LogfmtParser, ast.RegexpParser, ast.PatternParser, ast.UnpackParser)


class SkipWhenExtracted:
    """A parser that leaves alone the entries whose required labels are all parsed already.

    The reference's parsers return at once when every required label has been extracted (by
    an earlier parser or label_format) for the line: no labels, no parse error. The parser runs
    on the whole batch and the skipped entries get back what they had (labels, line, which
    labels count as parsed)."""

    def __init__(self, parser: StageProcessor, required: frozenset[str]):
        self.parser = parser
        self.required = sorted(required)

    def process(self, batch: LogBatch) -> LogBatch:
        skip = self._all_extracted(batch)
        if skip is None:
            return self.parser.process(batch)
        if pc.all(skip).as_py():
            return batch
        labels, stream, line = dict(batch.labels), batch.stream, batch.line
        parsed_rows = {name: _rows(batch, name) for name in batch.parsed}
        extracted = dict(batch.extracted)
        batch = self.parser.process(batch)
        for name, column in list(batch.labels.items()):
            old = labels.get(name)
            if old is None:
                value = stream.get(name)
                old = pa.nulls(len(column), pa.string()) if value is None else pa.repeat(pa.scalar(value), len(column))
            batch.labels[name] = pc.if_else(skip, old, column)
        batch.line = pc.if_else(skip, line, batch.line)
        nothing = pa.repeat(pa.scalar(False), len(skip))
        for name in batch.parsed:
            batch.parsed_rows[name] = pc.if_else(skip, parsed_rows.get(name, nothing), _rows(batch, name))
        for name, rows in list(batch.extracted.items()):
            batch.extracted[name] = pc.if_else(skip, extracted.get(name, nothing), rows)
        return batch

    def _all_extracted(self, batch: LogBatch) -> pa.Array | None:
        """Where every required label has been set by a parser or formatter (None: on no entry)."""
        skip = None
        for name in self.required:
            extracted = batch.extracted.get(name)
            if extracted is None:
                return None
            skip = extracted if skip is None else pc.and_(skip, extracted)
        return skip


def _rows(batch: LogBatch, name: str) -> pa.Array:
    """Where a parser or formatter wrote the current value of `name`."""
    valid = pc.is_valid(batch.label(name))
    rows = batch.parsed_rows.get(name)
    return valid if rows is None else pc.and_(valid, rows)


def check_stages(stages: tuple[ast.Stage, ...]) -> None:
    """Build every stage once in the reference's order (reorder_stages), a run of line filters
    as one stage, and raise the first failure as it names it: `parse error : stage '<the
    stage>' : <error>`."""
    ordered = reorder_stages(stages)
    i = 0
    while i < len(ordered):
        if isinstance(ordered[i], ast.LineFilter):
            end = i
            while end < len(ordered) and isinstance(ordered[end], ast.LineFilter):
                end += 1
            _check_line_filter_run(cast(list[ast.LineFilter], list(ordered[i:end])))
            i = end
            continue
        try:
            build_stage(ordered[i])
        except ParseError as err:
            if err.message.startswith("parse error"):
                raise
            raise ParseError(f"parse error : stage '{reference_text(ordered[i])}' : {err.message}") from None
        i += 1


def _check_line_filter_run(chain: list[ast.LineFilter]) -> None:
    """The reference builds a run of line filters (up to a label filter, line_format or unpack)
    as one stage, from its last filter back, a negated `or` being separate filters, a positive
    one read left to right: the first error found that way is reported."""
    for node in reversed(chain):
        for value in reversed(node.values) if node.op.startswith("!") else node.values:
            try:
                LineFilterStage(ast.LineFilter(node.op, (value,)))
            except ParseError as err:
                text = " ".join(_line_filter_text(node) for node in chain)
                raise ParseError(f"parse error : stage '{text}' : {err.message}") from None


def _line_filter_text(node: ast.LineFilter) -> str:
    """The reference's spelling: `|= "a" or "b"`, but `!= "a" != "b"` for a negated `or`."""
    values = [f"ip({go_quote(v.value)})" if v.ip else go_quote(v.value) for v in node.values]
    if node.op.startswith("!"):
        return " ".join(f"{node.op} {value}" for value in values)
    return f"{node.op} " + " or ".join(values)


def _filters_before_parsers(stages: tuple[ast.Stage, ...], processors: list[StageProcessor]) -> list[StageProcessor]:
    """Pair each plain json/logfmt parser with the string label filters right after it."""
    out: list[StageProcessor] = []
    i = 0
    while i < len(stages):
        stage, processor = stages[i], processors[i]
        i += 1
        if not isinstance(stage, (ast.JsonParser, ast.LogfmtParser)) or stage.params:
            out.append(processor)
            continue
        filters: list[StageProcessor] = []
        names: set[str] = set()
        while i < len(stages) and (read := stream_filter_names(stages[i])) is not None:
            filters.append(processors[i])
            names |= read
            i += 1
        out.append(FiltersFirst(processor, filters, frozenset(names)) if filters else processor)
    return out


def stream_filter_names(stage: ast.Stage) -> frozenset[str] | None:
    """The labels a label filter reads when it is made of string matchers only (no conversion
    that could record an error, no `__error__`); None for any other stage."""
    return _matcher_names(stage.expr) if isinstance(stage, ast.LabelFilter) else None


def _matcher_names(expr: object) -> frozenset[str] | None:
    if isinstance(expr, ast.BinaryLabelFilter):
        left, right = _matcher_names(expr.left), _matcher_names(expr.right)
        return None if left is None or right is None else left | right
    if isinstance(expr, ast.StringLabelFilter) and expr.matcher.name not in (ERROR_LABEL, ERROR_DETAILS_LABEL):
        return frozenset({expr.matcher.name})
    return None


class FiltersFirst:
    """A plain json/logfmt parser and the string label filters after it, filters first when
    they read only the entries' original stream labels.

    Such a parser never writes an original stream label (a key of that name becomes
    `<name>_extracted`), string matchers record no error and parsers keep every entry, so
    filtering first keeps the same entries with the same labels, and the parser only reads
    lines that survive (`| json | level="error"` then parses the error streams only)."""

    def __init__(self, parser: StageProcessor, filters: list[StageProcessor], names: frozenset[str]):
        self.parser = parser
        self.filters = Pipeline(filters)
        self.names = names

    def process(self, batch: LogBatch) -> LogBatch:
        if self.names <= set(batch.origin.names()):
            batch = self.filters.process(batch)
            return self.parser.process(batch) if len(batch) else batch
        return self.filters.process(self.parser.process(batch))


_HINTED: dict[type, Callable[..., StageProcessor]] = {
    ast.LogfmtParser: LogfmtParserStage,
    ast.JsonParser: JsonParserStage,
}
