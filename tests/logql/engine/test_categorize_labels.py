"""categorize-labels: log results keep stream labels apart from each entry's structured
metadata and parsed labels, as the reference's encoding does."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from svclog.logql.engine.evaluator import evaluate
from svclog.logql.engine.json_codec import VALUES_SLICE, result_to_json
from svclog.logql.engine.memory_source import MemorySource
from svclog.logql.engine.params import QueryParams
from svclog.logql.engine.result import EntryLabels, Stream, StreamsResult
from svclog.logql.parser import parse
from svclog.logql.rewrite.merge_logs import merge_streams
from svclog.logql.rewrite.plan import plan_query
from svclog.model import NS, Labels

API = {"app": "api", "level": "error"}
SOURCE = MemorySource.from_dicts(
    [
        (
            API,
            [
                (10 * NS, '{"msg":"a","level":"error","code":"E1"}', {"trace_id": "t1", "customer_id": "c1"}),
                (20 * NS, '{"msg":"b","level":"error","code":"E2"}', {"trace_id": "t2"}),
                (30 * NS, "not json", {}),
            ],
        ),
        ({"app": "cron"}, [(15 * NS, "tick", {}), (25 * NS, "tock", {})]),
    ]
)
PARAMS = QueryParams.for_range(0, 100 * NS, step=NS, direction="forward", limit=100)
CATEGORIZED = replace(PARAMS, categorize_labels=True)


def run(query: str, params: QueryParams = CATEGORIZED, source: MemorySource = SOURCE) -> list[dict]:
    return result_to_json(evaluate(parse(query), params, source))["result"]


def by_stream(result: list[dict]) -> dict[str, list]:
    return {",".join(f"{k}={v}" for k, v in sorted(s["stream"].items())): s["values"] for s in result}


def test_structured_metadata_is_per_entry_and_does_not_split_streams():
    result = by_stream(run('{app="api"}'))
    assert list(result) == ["app=api,level=error"]
    assert [v[2] for v in result["app=api,level=error"]] == [
        {"structuredMetadata": {"customer_id": "c1", "trace_id": "t1"}},
        {"structuredMetadata": {"trace_id": "t2"}},
        {},  # every entry has the third element
    ]
    # without the flag the same query splits streams by metadata and has two-element entries
    plain = run('{app="api"}', PARAMS)
    assert len(plain) == 3 and all(len(v) == 2 for s in plain for v in s["values"])


def test_parsed_labels_and_errors_are_listed_under_parsed():
    values = by_stream(run('{app="api"} | json'))["app=api,level=error"]
    assert values[0][2] == {
        "structuredMetadata": {"customer_id": "c1", "trace_id": "t1"},
        "parsed": {"code": "E1", "level_extracted": "error", "msg": "a"},
    }
    assert values[2][2] == {
        "parsed": {
            "__error__": "JSONParserErr",
            "__error_details__": "Value looks like object, but can't find closing '}' symbol",
        }
    }


def test_label_format_output_is_parsed_and_replaces_a_stream_label():
    result = by_stream(run('{app="cron"} | label_format app="job-{{.app}}", kind="batch"'))
    assert list(result) == [""]  # `app` left the stream labels: it is parsed now
    assert [v[2] for v in result[""]] == [{"parsed": {"app": "job-cron", "kind": "batch"}}] * 2


def test_renamed_metadata_becomes_parsed_only_where_renamed():
    values = by_stream(run('{app="api"} | label_format customer=customer_id'))["app=api,level=error"]
    assert values[0][2] == {"structuredMetadata": {"trace_id": "t1"}, "parsed": {"customer": "c1"}}
    assert values[1][2] == {"structuredMetadata": {"trace_id": "t2"}}


def test_template_error_keeps_the_old_value_in_its_category():
    # a failing template leaves the destination as it was, on that entry only
    query = '{app="api"} | label_format trace_id=`{{ if eq .trace_id "t2" }}{{ index .trace_id 5 }}{{ end }}new`'
    values = by_stream(run(query))["app=api,level=error"]
    assert values[0][2]["parsed"]["trace_id"] == "new"
    assert "trace_id" not in values[0][2].get("structuredMetadata", {})
    assert values[1][2]["structuredMetadata"] == {"trace_id": "t2"}
    assert values[1][2]["parsed"]["__error__"] == "TemplateFormatErr"


def test_drop_of_a_stream_label_on_some_entries_keeps_it_a_stream_label():
    result = by_stream(run('{app="cron"} | drop app="nothing"'))
    assert list(result) == ["app=cron"]
    result = by_stream(run('{app=~"api|cron"} | drop level'))
    assert set(result) == {"app=api", "app=cron"}


def test_limit_and_direction_pick_the_same_entries_as_uncategorized():
    for direction in ("forward", "backward"):
        for limit in (1, 2, 4):
            params = replace(PARAMS, direction=direction, limit=limit)
            plain = run('{app=~"api|cron"}', params)
            categorized = run('{app=~"api|cron"}', replace(params, categorize_labels=True))
            assert sorted(v[0] for s in plain for v in s["values"]) == sorted(
                v[0] for s in categorized for v in s["values"]
            )


def test_split_and_sharded_plan_merges_to_the_unsplit_answer():
    expr = parse('{app=~"api|cron"} | json')
    for direction in ("forward", "backward"):
        params = replace(CATEGORIZED, direction=direction, limit=4)
        plan = plan_query(expr, params, split_interval_ns=12 * NS, shards=2)
        assert len(plan.subqueries) > 2
        partials = [evaluate(sub.expr, sub.params, _sharded(sub.shard)) for sub in plan.subqueries]
        merged = result_to_json(plan.merge(partials))["result"]
        assert by_stream(merged) == by_stream(run('{app=~"api|cron"} | json', params))


def _sharded(shard):
    if shard is None:
        return SOURCE
    from svclog.logql.rewrite.subquery import ShardedSource

    return ShardedSource(SOURCE, shard)


def test_merge_keeps_entry_labels_beside_their_lines():
    meta = EntryLabels(Labels({"t": "1"}.items()), Labels())
    parsed = EntryLabels(Labels(), Labels({"p": "x"}.items()))
    stream = Labels({"app": "a"}.items())
    older = StreamsResult([Stream.of(stream, np.array([1, 3]), ["one", "three"], [meta, parsed])])
    newer = StreamsResult([Stream.of(stream, np.array([2]), ["two"], [parsed])])
    merged = merge_streams([older, newer], replace(CATEGORIZED, direction="forward", limit=3))
    (only,) = merged.streams
    assert only.texts() == ["one", "two", "three"]
    assert only.entry_labels == [meta, parsed, parsed]
    assert result_to_json(merged)["result"][0]["values"][0][2] == {"structuredMetadata": {"t": "1"}}


def test_long_streams_are_encoded_in_slices_with_every_entry_in_order():
    """The values are built a slice at a time (to let the GIL go between slices): the entries
    across the slices' edges come out whole and in order, with their own labels."""
    n = 2 * VALUES_SLICE + 7
    kinds = [EntryLabels(Labels({"trace_id": str(i % 3)}), Labels()) for i in range(3)]
    ts = np.arange(n, dtype=np.int64) * NS
    lines = [f"line {i}" for i in range(n)]
    plain = result_to_json(StreamsResult([Stream.of(Labels(API), ts, lines)]))
    assert plain["result"][0]["values"] == [(str(i * NS), f"line {i}") for i in range(n)]
    labelled = result_to_json(StreamsResult([Stream.of(Labels(API), ts, lines, [kinds[i % 3] for i in range(n)])]))
    assert labelled["result"][0]["values"] == [
        (str(i * NS), f"line {i}", {"structuredMetadata": {"trace_id": str(i % 3)}}) for i in range(n)
    ]
