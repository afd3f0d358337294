"""Recorded reference answers for log queries, evaluated through the stages alone.

A tiny selector + limit loop stands in for the engine, so only pipeline semantics
(parsers, filters, formatters, grouping into series) are under test here.
"""

from __future__ import annotations

import glob
import json
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from svclog.logql import parser, stages
from svclog.logql.source import METADATA_TYPE, StreamBlock
from svclog.model import Labels, labels_match

CONFORMANCE = Path("/work/shared/conformance")
CATEGORIES = (
    "line_filter",
    "pattern_filter",
    "ip_filter",
    "parser_json",
    "parser_logfmt",
    "parser_regexp",
    "parser_pattern",
    "parser_unpack",
    "label_filter",
    "line_format",
    "label_format",
    "drop_keep",
    "decolorize",
    "pipeline_errors",
)


def _cases() -> list:
    out = []
    for category in CATEGORIES:
        for path in sorted(glob.glob(str(CONFORMANCE / "cases" / category / "*.json"))):
            case = json.loads(Path(path).read_text())
            body = case["expect"].get("body") or {}
            if case["path"].endswith("query_range") and body.get("data", {}).get("resultType") == "streams":
                out.append(pytest.param(case, id=case["name"]))
    return out


@pytest.fixture(scope="module")
def data() -> dict:
    if not CONFORMANCE.exists():
        pytest.skip("conformance data set not available")
    sys.path.insert(0, str(CONFORMANCE))
    import dataset

    return dataset.build()


def _blocks(streams: list, matchers, start: int, end: int):
    for stream in streams:
        labels = Labels(stream["stream"].items())
        if not labels_match(labels, matchers):
            continue
        seen: set = set()
        values = []
        for v in sorted(stream["values"], key=lambda v: int(v[0])):
            if start <= int(v[0]) < end and (v[0], v[1]) not in seen:
                seen.add((v[0], v[1]))
                values.append(v)
        if not values:
            continue
        meta = None
        if any(len(v) > 2 and v[2] for v in values):
            meta = pa.array([list((v[2] if len(v) > 2 else {}).items()) for v in values], METADATA_TYPE)
        yield StreamBlock(
            labels,
            pa.array([int(v[0]) for v in values], pa.int64()),
            pa.array([v[1] for v in values], pa.string()),
            meta,
        )


@pytest.mark.parametrize("case", _cases())
def test_log_query_matches_reference(case: dict, data: dict) -> None:
    params = dict(case["params"])
    query = parser.parse(params["query"])
    pipeline = stages.build_pipeline(query.stages)
    entries = []
    for block in _blocks(
        data[case["headers"]["X-Scope-OrgID"]], query.selector.matchers, int(params["start"]), int(params["end"])
    ):
        batch = pipeline.process(stages.block_to_batch(block))
        for labels, idx in stages.group_by_labels(batch):
            entries += zip(batch.ts.take(idx).to_pylist(), batch.line.take(idx).to_pylist(), [labels] * len(idx))
    backward = params.get("direction", "backward").lower() == "backward"
    entries.sort(key=lambda e: e[0], reverse=backward)
    got: dict[Labels, list] = {}
    for ts, line, labels in entries[: int(params.get("limit", 100))]:
        got.setdefault(labels, []).append((str(ts), line))
    expected = {
        Labels(r["stream"].items()): [tuple(v[:2]) for v in r["values"]]
        for r in case["expect"]["body"]["data"]["result"]
    }
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in expected.items()}
