"""Unit tests of the engine's parts, with AST nodes built by hand (no parser needed)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from svclog.gocompat.strconv import parse_float as go_parse_float
from svclog.logql import ast
from svclog.logql.engine.evaluator import evaluate
from svclog.logql.engine.json_codec import format_value, result_to_json, sample_time
from svclog.logql.engine.memory_source import MemorySource
from svclog.logql.engine.params import QueryParams, default_step, step_times
from svclog.logql.engine.range_agg import UNWRAP_OPS, quantile, windows
from svclog.logql.engine.result import MatrixResult, ScalarResult, StreamsResult, VectorResult
from svclog.logql.engine.unwrap import convert_column
from svclog.logql.source import SelectRequest
from svclog.model import NS, Labels, LimitError, Matcher, MatchType, ValidationError

S = NS


def sel(**labels: str) -> ast.LogQuery:
    return ast.LogQuery(ast.StreamSelector(tuple(Matcher(k, MatchType.EQ, v) for k, v in labels.items())))


def count(query: ast.LogQuery, rng: int, op: str = "count_over_time", offset: int = 0) -> ast.RangeAggregation:
    return ast.RangeAggregation(op, ast.LogRange(query, rng, offset))


@pytest.fixture
def source() -> MemorySource:
    return MemorySource(
        {
            Labels.from_dict({"app": "a"}): [(i * 10 * S, f"line {i}") for i in range(12)],
            Labels.from_dict({"app": "b"}): [(5 * S, "x", {"trace": "t1"}), (5 * S, "x"), (15 * S, "yy")],
        }
    )


# ---------------------------------------------------------------- params


def test_step_alignment_rounds_start_down_and_end_up() -> None:
    params = QueryParams.for_range(5 * S, 65 * S, 60 * S)
    assert step_times(params).tolist() == [0, 60 * S, 120 * S]


def test_default_step_is_range_over_250_in_seconds() -> None:
    assert default_step(0, 3600 * S) == 14 * S
    assert default_step(0, 10 * S) == 1 * S


def test_instant_has_one_step() -> None:
    assert step_times(QueryParams.for_instant(7 * S)).tolist() == [7 * S]


# ---------------------------------------------------------------- json


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (0.1, "0.1"),
        (1e21, "1000000000000000000000"),
        (1.5e-7, "0.00000015"),
        (float("nan"), "NaN"),
        (float("inf"), "+Inf"),
        (float("-inf"), "-Inf"),
        (-2.5, "-2.5"),
    ],
)
def test_format_value_like_go(value: float, text: str) -> None:
    assert format_value(value) == text


def test_sample_time_is_seconds_with_millis() -> None:
    assert sample_time(1793494800 * S) == 1793494800
    assert sample_time(1793494801 * S + 500_000_000) == 1793494801.5
    assert sample_time(1793494801 * S + 123_456_789) == 1793494801.123


def test_result_json_shapes(source: MemorySource) -> None:
    vec = result_to_json(evaluate(count(sel(app="a"), 30 * S), QueryParams.for_instant(60 * S), source))
    assert vec == {"resultType": "vector", "result": [{"metric": {"app": "a"}, "value": [60, "3"]}]}
    logs = result_to_json(evaluate(sel(app="a"), QueryParams.for_range(0, 15 * S, limit=1), source))
    # entries are tuples (encoded as JSON arrays): compare what the client reads
    assert json.loads(json.dumps(logs)) == {
        "resultType": "streams",
        "result": [{"stream": {"app": "a"}, "values": [[str(10 * S), "line 1"]]}],
    }
    scalar = result_to_json(evaluate(ast.Literal(2.0), QueryParams.for_instant(3 * S), source))
    assert scalar == {"resultType": "scalar", "result": [3, "2"]}
    json.dumps(vec)


# ---------------------------------------------------------------- memory source


def test_memory_source_dedupes_and_restricts(source: MemorySource) -> None:
    blocks = list(source.select_logs(SelectRequest((Matcher("app", MatchType.EQ, "b"),), 0, 15 * S)))
    assert len(blocks) == 1
    assert blocks[0].ts.to_pylist() == [5 * S]  # duplicate (same ts and line) dropped, end exclusive
    assert list(source.select_series((Matcher("app", MatchType.RE, ".+"),), 0, 100 * S)) == [
        Labels.from_dict({"app": "a"}),
        Labels.from_dict({"app": "b"}),
    ]


def test_metadata_becomes_series_labels(source: MemorySource) -> None:
    result = evaluate(count(sel(app="b"), 60 * S), QueryParams.for_instant(60 * S), source)
    assert isinstance(result, VectorResult)
    assert {s.labels: s.value for s in result.samples} == {
        Labels.from_dict({"app": "b", "trace": "t1"}): 1.0,
        Labels.from_dict({"app": "b"}): 1.0,
    }


# ---------------------------------------------------------------- range aggregation kernels


def test_min_max_sparse_table_matches_brute_force() -> None:
    rng = np.random.default_rng(7)
    ts = np.sort(rng.integers(0, 1000, 300))
    values = rng.normal(size=300)
    ends = np.arange(0, 1100, 37)
    w = windows(ts, values, ends, 120)
    got_min, got_max = UNWRAP_OPS["min_over_time"](w), UNWRAP_OPS["max_over_time"](w)
    for i, end in enumerate(ends):
        inside = values[(ts > end - 120) & (ts <= end)]
        if len(inside):
            assert got_min[i] == inside.min() and got_max[i] == inside.max()
        else:
            assert w.count[i] == 0


def test_sum_avg_stdvar_match_numpy() -> None:
    rng = np.random.default_rng(3)
    ts = np.sort(rng.integers(0, 500, 200))
    values = rng.uniform(100, 900, 200)
    ends = np.arange(50, 550, 50)
    w = windows(ts, values, ends, 100)
    for fn, ref in (
        ("sum_over_time", np.sum),
        ("avg_over_time", np.mean),
        ("stdvar_over_time", np.var),
        ("stddev_over_time", np.std),
    ):
        got = UNWRAP_OPS[fn](w)
        for i, end in enumerate(ends):
            inside = values[(ts > end - 100) & (ts <= end)]
            if len(inside):
                assert got[i] == pytest.approx(ref(inside), rel=1e-9)


def test_quantile_interpolates_like_prometheus() -> None:
    assert quantile(0.5, np.array([3.0, 1.0, 2.0])) == 2.0
    assert quantile(0.9, np.array([1.5, 2.5, 4.0])) == pytest.approx(3.7)
    assert quantile(-1, np.array([1.0])) == -np.inf
    assert quantile(2, np.array([1.0])) == np.inf


def test_rate_counter_handles_resets() -> None:
    w = windows(np.array([10, 20, 30, 40]) * S, np.array([1.0, 3.0, 1.0, 2.0]), np.array([45 * S]), 30 * S)
    assert UNWRAP_OPS["rate_counter"](w)[0] == pytest.approx(0.06666676666666667, rel=1e-12)


# ---------------------------------------------------------------- unwrap conversion


def test_go_float_parsing_follows_strconv_parse_float() -> None:
    good = {
        "1e3": 1000.0,
        "-.5": -0.5,
        "5.": 5.0,
        "0x1p3": 8.0,
        "0X1.8P1": 3.0,
        "0x_1p2": 4.0,
        "1_000": 1000.0,
        "1_23.50_0_0e+1_2": 1.235e14,
        "-Inf": -math.inf,
        "+infinity": math.inf,
    }
    for text, want in good.items():
        assert go_parse_float(text) == want, text
    assert math.isnan(go_parse_float("NaN")) and math.isnan(go_parse_float("nan"))
    for bad in ("", "abc", "0x10", "+nan", "-nan", "infin", "_1", "1__0", "1_", "1e_1", " 1", "\u0663", ".", "1e"):
        with pytest.raises(ValueError, match=r"strconv.ParseFloat: parsing .*: invalid syntax"):
            go_parse_float(bad)
    for big in ("1e400", "-1e400", "0x1p99999"):
        with pytest.raises(ValueError, match="value out of range"):
            go_parse_float(big)


def test_convert_column_reports_errors() -> None:
    import pyarrow as pa

    values, errors, messages = convert_column(pa.array(["1s", "bad", None, "250ms"]), "duration")
    assert values[[0, 3]].tolist() == [1.0, 0.25]
    assert (errors >= 0).tolist() == [False, True, True, False]
    assert messages[errors[1]] == 'time: invalid duration "bad"'


# ---------------------------------------------------------------- evaluator


def test_instant_log_query_is_rejected(source: MemorySource) -> None:
    with pytest.raises(ValidationError):
        evaluate(sel(app="a"), QueryParams.for_instant(10 * S), source)


def test_max_series_limit(source: MemorySource) -> None:
    query = ast.RangeAggregation(
        "count_over_time", ast.LogRange(ast.LogQuery(ast.StreamSelector((Matcher("app", MatchType.RE, ".+"),))), 60 * S)
    )
    with pytest.raises(LimitError):
        evaluate(query, QueryParams.for_instant(60 * S), source, max_series=2)


def test_range_query_matrix(source: MemorySource) -> None:
    result = evaluate(count(sel(app="a"), 30 * S, "rate"), QueryParams.for_range(0, 60 * S, 30 * S), source)
    assert isinstance(result, MatrixResult)
    (series,) = result.series
    assert series.ts.tolist() == [0, 30 * S, 60 * S]
    assert series.values.tolist() == pytest.approx([1 / 30, 0.1, 0.1])


def test_binary_op_on_hand_built_ast(source: MemorySource) -> None:
    lhs = ast.VectorAggregation("sum", count(sel(app="a"), 60 * S))
    expr = ast.BinaryOp("/", lhs, ast.Literal(2.0))
    result = evaluate(expr, QueryParams.for_instant(60 * S), source)
    assert isinstance(result, VectorResult)
    assert [(s.labels, s.value) for s in result.samples] == [(Labels(), 3.0)]
    scalar = evaluate(
        ast.BinaryOp(">", ast.Literal(2.0), ast.Literal(1.0), return_bool=True), QueryParams.for_instant(0), source
    )
    assert isinstance(scalar, ScalarResult) and scalar.value == 1.0


def test_log_query_interval_and_direction(source: MemorySource) -> None:
    params = QueryParams.for_range(0, 120 * S, interval=25 * S, direction="forward")
    result = evaluate(sel(app="a"), params, source)
    assert isinstance(result, StreamsResult)
    assert result.streams[0].ts.tolist() == [0, 30 * S, 60 * S, 90 * S]
