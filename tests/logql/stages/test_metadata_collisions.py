"""Parsers name a key `<key>_extracted` when it is an original stream label or, on that
entry, structured metadata (the reference's 3.7 parsers: BaseHas || HasInCategory(SM))."""

from __future__ import annotations

import pytest

from svclog.logql import ast
from svclog.logql.stages.grouping import group_by_categories
from tests.logql.stages.helpers import col, run

META = [{"trace_id": "m-1"}, {}]  # the first entry holds trace_id as structured metadata

PARSERS = {
    "json": (ast.JsonParser(), '{"trace_id":"line","level":"warn"}'),
    "logfmt": (ast.LogfmtParser(), "trace_id=line level=warn"),
    "regexp": (ast.RegexpParser(r"(?P<trace_id>line) (?P<level>warn)"), "line warn"),
    "pattern": (ast.PatternParser("<trace_id> <level>"), "line warn"),
    "unpack": (ast.UnpackParser(), '{"trace_id":"line","level":"warn","_entry":"x"}'),
}


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_key_named_like_metadata_or_stream_label_is_extracted(name):
    node, line = PARSERS[name]
    b = run([node], line, line, metadata=META)
    assert col(b, "trace_id") == ["m-1", "line"]  # metadata untouched; the second entry has none
    assert col(b, "trace_id_extracted") == ["line", None]
    assert col(b, "level") == ["info", "info"]  # the stream label stays
    assert col(b, "level_extracted") == ["warn", "warn"]
    (meta_entry, _), (plain_entry, _) = sorted(group_by_categories(b), key=lambda g: g[1].to_pylist())
    assert meta_entry.structured_metadata.to_dict() == {"trace_id": "m-1"}
    assert meta_entry.parsed.get("trace_id_extracted") == "line"
    assert plain_entry.parsed.get("trace_id") == "line" and len(plain_entry.structured_metadata) == 0


def test_json_and_logfmt_expressions_follow_the_same_rule():
    json_node = ast.JsonParser(params=(ast.LabelExtraction("trace_id"),))
    b = run([json_node], '{"trace_id":"line"}', '{"trace_id":"line"}', metadata=META)
    assert col(b, "trace_id") == ["m-1", "line"] and col(b, "trace_id_extracted") == ["line", None]
    logfmt_node = ast.LogfmtParser(params=(ast.LabelExtraction("trace_id"),))
    b = run([logfmt_node], "trace_id=line", "other=1", metadata=META)
    assert col(b, "trace_id") == ["m-1", ""]  # missing key: "" except where metadata holds it
    assert col(b, "trace_id_extracted") == ["line", None]


def test_dropped_metadata_no_longer_collides():
    drop = ast.Drop((ast.DropKeepItem("trace_id", None),))
    b = run([drop, ast.LogfmtParser()], "trace_id=line", "trace_id=line", metadata=META)
    assert col(b, "trace_id") == ["line", "line"] and not b.has_label("trace_id_extracted")
