"""String label filters on stream labels run before a json/logfmt parser (FiltersFirst):
the same entries with the same labels come out as parsing first would give."""

from __future__ import annotations

import random

import pytest

from svclog.logql.parser import parse
from svclog.logql.stages import pipeline
from svclog.logql.stages.pipeline import FiltersFirst, build_pipeline
from tests.logql.stages.helpers import STREAM, batch, series

QUERIES = [
    '{a="b"} | json | level="error"',
    '{a="b"} | json | level="info" or app=~"check.*"',
    '{a="b"} | logfmt | level!="info" | app="checkout"',
    '{a="b"} | json | level=~"i.*" | level_extracted="error"',
    '{a="b"} | logfmt | level="info" | __error__=""',
    '{a="b"} | json | env="prod" | x > 1',
    '{a="b"} | label_format level="{{.app}}" | json | level="checkout"',
    '{a="b"} | drop level | logfmt | level=""',
    '{a="b"} | json | level="" or msg="x"',
]
LINES = [
    '{"level":"error","msg":"x","x":2}',
    '{"level":"info"',
    "level=error msg=x x=3",
    "level=info a=b=c",
    '{"app":"other","env":{"n":1}}',
    "plain text",
    '{"x":"1.5"}',
    'msg="x" level="warn"',
]


def _series(query: str, lines: list[str], metadata: list[dict]) -> dict:
    stages = parse(query).stages
    return series(build_pipeline(stages).process(batch(*lines, stream=STREAM, metadata=metadata)))


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("seed", range(6))
def test_filters_first_keep_the_answer(query, seed, monkeypatch):
    rnd = random.Random(seed)
    lines = [rnd.choice(LINES) for _ in range(40)]
    metadata = [rnd.choice([{}, {}, {"level": "meta"}, {"msg": "x"}]) for _ in lines]
    hoisted = _series(query, lines, metadata)
    monkeypatch.setattr(pipeline, "_filters_before_parsers", lambda stages, processors: processors)
    assert _series(query, lines, metadata) == hoisted


def test_only_string_filters_on_stream_labels_go_first():
    def shape(query):
        return [
            (type(p).__name__, sorted(getattr(p, "names", ()))) for p in build_pipeline(parse(query).stages).processors
        ]

    assert shape('{a="b"} | json | level="error" | app=~"x"') == [("FiltersFirst", ["app", "level"])]
    assert shape('{a="b"} | json | level="error" | x > 1') == [("FiltersFirst", ["level"]), ("LabelFilterStage", [])]
    assert shape('{a="b"} | logfmt | __error__=""') == [("LogfmtParserStage", []), ("LabelFilterStage", [])]
    assert shape('{a="b"} | json x="y" | level="e"') == [("JsonParserStage", []), ("LabelFilterStage", [])]


def test_parser_skips_entries_the_filter_drops():
    stages = parse('{a="b"} | json | level="error"').stages
    stage = build_pipeline(stages).processors[0]
    assert isinstance(stage, FiltersFirst)
    out = stage.process(batch('{"level":"error"}', "not json"))  # stream level=info: nothing survives
    assert len(out) == 0 and "__error__" not in out.labels
