"""Build a pipeline from AST stages and run it over batches.

One processor per stage, chosen by a table keyed on the AST node type; each takes a
batch and returns the surviving entries (filters) or the batch with new labels or
lines (parsers, formatters). Construction validates what the parser could not
(regexes, ip patterns, templates) and raises ParseError.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from svclog.logql import ast
from svclog.logql.stages.batch import LogBatch
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


_BUILDERS: dict[type, Callable[[object], StageProcessor]] = {
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


def build_pipeline(stages: tuple[ast.Stage, ...], parser_labels: frozenset[str] | None = None) -> Pipeline:
    """`parser_labels` (the engine's hints): the labels the query's parser must extract, the
    rest of each line's keys being unobservable in the answer; None extracts everything."""
    if parser_labels is None:
        return Pipeline([build_stage(stage) for stage in stages])
    return Pipeline([_HINTED[type(stage)](stage, only=parser_labels) if type(stage) in _HINTED
                     else build_stage(stage) for stage in stages])


_HINTED: dict[type, Callable[..., StageProcessor]] = {ast.LogfmtParser: LogfmtParserStage,
                                                       ast.JsonParser: JsonParserStage}
