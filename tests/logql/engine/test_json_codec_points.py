"""Matrix and vector points written by Arrow's kernels read exactly as the per-point encoding
(`format_value`, `sample_time`, orjson) wrote them."""

from __future__ import annotations

import numpy as np
import orjson
import pytest

from svclog.logql.engine.json_codec import (
    VALUES_SLICE,
    _sample_times_text,
    answer_to_json,
    format_value,
    format_values,
    result_to_json,
    sample_time,
    sample_times,
)
from svclog.logql.engine.result import MatrixResult, Sample, Series, VectorResult
from svclog.model import Labels
from svclog.serve import json_body

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.1, 1 / 3, 2.5e-5, 1e-7, 1e15, 1e16, 1e21, 1.5e300, 5e-324, 2.0**53, 2.0**53 + 2,
           123456.789, 0.30000000000000004, float("nan"), float("inf"), float("-inf")]  # fmt: skip


def _random_doubles(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mantissa = rng.uniform(-10, 10, n)
    exponent = rng.integers(-25, 25, n)
    return np.concatenate([mantissa * 10.0**exponent, rng.integers(-1000, 1000, n).astype(float), np.array(SPECIAL)])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_values_read_as_format_value_wrote_them(seed):
    values = _random_doubles(3000, seed)
    assert format_values(values).to_pylist() == [format_value(float(v)) for v in values]


def _timestamps(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    whole = (1_700_000_000 + rng.integers(0, 10**6, 500)) * 10**9
    with_ms = whole + rng.integers(0, 1000, 500) * 10**6 + rng.integers(0, 10**6, 500)
    return np.concatenate([whole, with_ms, np.array([0, -1_500_000_000, -(10**9), 10**6])]).astype(np.int64)


@pytest.mark.parametrize("seed", [1, 2])
def test_times_read_as_sample_time_wrote_them(seed):
    ts = _timestamps(seed)
    expected = [sample_time(int(t)) for t in ts]
    got = sample_times(ts)
    assert got == expected
    assert [type(t) for t in got] == [type(t) for t in expected]
    assert _sample_times_text(ts).to_pylist() == [orjson.dumps(t).decode() for t in expected]


def test_whole_second_times_stay_integers():
    assert sample_times(np.array([5 * 10**9, 7 * 10**9], dtype=np.int64)) == [5, 7]


def _matrix(seed: int) -> MatrixResult:
    rng = np.random.default_rng(seed)
    lengths = [0, 1, 720, VALUES_SLICE, VALUES_SLICE + 1, 2 * VALUES_SLICE + 7]
    series = []
    for k, n in enumerate(lengths):
        ts = np.sort(_timestamps(seed + k)[rng.integers(0, 1004, n)])
        series.append(Series(Labels([("row", str(k))]), ts, _random_doubles(n, seed + k)[:n]))
    return MatrixResult(series)


def _per_point(result: MatrixResult) -> bytes:
    """The body as the per-point encoding wrote it."""
    rows = [
        {
            "metric": s.labels.to_dict(),
            "values": [[sample_time(t), format_value(v)] for t, v in zip(s.ts.tolist(), s.values.tolist())],
        }
        for s in result.series
    ]
    return orjson.dumps({"resultType": "matrix", "result": rows})


@pytest.mark.parametrize("seed", [1, 2])
def test_matrix_body_is_the_per_point_body(seed):
    result = _matrix(seed)
    expected = _per_point(result)
    assert orjson.dumps(result_to_json(result)) == expected
    encoded = answer_to_json(result, encoded_values=True)
    assert json_body.dumps(encoded) == expected
    assert b"".join(json_body.pieces(encoded)) == expected  # streamed, a part per VALUES_SLICE points


def test_matrix_lists_for_readers_of_the_values():
    result = MatrixResult([Series(Labels([("a", "b")]), np.array([10**9, 1_500_000_000]), np.array([1.0, 0.5]))])
    assert result_to_json(result)["result"][0]["values"] == [[1, "1"], [1.5, "0.5"]]


def test_empty_matrix_and_vector():
    assert (
        json_body.dumps(answer_to_json(MatrixResult([]), encoded_values=True)) == b'{"resultType":"matrix","result":[]}'
    )
    assert result_to_json(VectorResult([])) == {"resultType": "vector", "result": []}


def test_vector_reads_as_per_sample_encoding():
    values = _random_doubles(50, 4)
    samples = [
        Sample(Labels([("i", str(i))]), 1_700_000_000_123_000_000 + i * 10**9, float(v)) for i, v in enumerate(values)
    ]
    expected = [{"metric": s.labels.to_dict(), "value": [sample_time(s.ts), format_value(s.value)]} for s in samples]
    assert result_to_json(VectorResult(samples))["result"] == expected


def test_a_large_answer_written_as_background_work_gives_way_between_batches():
    from svclog.cpu_priority import ForegroundGate
    from svclog.logql.engine.json_codec import BATCH_ENTRIES

    points = 3 * BATCH_ENTRIES
    result = MatrixResult(
        [Series(Labels([("a", "b")]), np.arange(1, points + 1) * 10**9, np.arange(points, dtype=float))]
    )
    gate = ForegroundGate(max_pause_s=0.01)
    small_query = gate.enter()
    with gate.background():
        encoded = answer_to_json(result, encoded_values=True)
    small_query.leave()
    assert gate.pauses >= 2  # a checkpoint before each later batch
    assert json_body.dumps(encoded) == orjson.dumps(result_to_json(result))
