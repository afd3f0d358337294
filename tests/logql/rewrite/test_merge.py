"""Unit tests of the merges: k-way merge of log partials, combining metric partials."""

from __future__ import annotations

import numpy as np
import pytest

from svclog.logql.engine.params import QueryParams
from svclog.logql.engine.result import MatrixResult, Sample, Series, Stream, StreamsResult, VectorResult
from svclog.logql.engine.series import SeriesSet
from svclog.logql.rewrite.merge_logs import merge_streams
from svclog.logql.rewrite.merge_samples import combine, to_rows
from svclog.logql.rewrite.shard import Combine
from svclog.model import Labels

A = Labels.from_dict({"app": "a"})
B = Labels.from_dict({"app": "b"})


def stream(labels: Labels, *entries: tuple[int, str]) -> Stream:
    return Stream.of(labels, [t for t, _ in entries], [line for _, line in entries])


def flat(result: StreamsResult) -> list[tuple[str, int, str]]:
    return [(s.labels.get("app"), int(t), line) for s in result.streams for t, line in zip(s.ts, s.texts())]


def params(limit: int, direction: str) -> QueryParams:
    return QueryParams.for_range(0, 100, limit=limit, direction=direction)


def test_backward_merge_is_newest_first_and_limited() -> None:
    shard0 = StreamsResult([stream(A, (9, "a9"), (5, "a5"), (1, "a1"))])
    shard1 = StreamsResult([stream(B, (8, "b8"), (5, "b5"))])
    merged = merge_streams([shard0, shard1], params(4, "backward"))
    # streams come out sorted by labels, each newest first; equal times tie-break by labels
    assert flat(merged) == [("a", 9, "a9"), ("a", 5, "a5"), ("b", 8, "b8"), ("b", 5, "b5")]


def test_forward_merge_is_oldest_first_and_limited() -> None:
    piece0 = StreamsResult([stream(A, (1, "a1"), (2, "a2")), stream(B, (2, "b2"))])
    piece1 = StreamsResult([stream(A, (7, "a7")), stream(B, (6, "b6"))])
    merged = merge_streams([piece1, piece0], params(3, "forward"))
    assert flat(merged) == [("a", 1, "a1"), ("a", 2, "a2"), ("b", 2, "b2")]


def test_same_labels_from_several_partials_form_one_stream() -> None:
    merged = merge_streams(
        [StreamsResult([stream(A, (3, "x"), (1, "y"))]), StreamsResult([stream(A, (2, "z"))])], params(10, "backward")
    )
    assert len(merged.streams) == 1
    assert flat(merged) == [("a", 3, "x"), ("a", 2, "z"), ("a", 1, "y")]


def test_merge_of_nothing_and_limit_zero() -> None:
    assert merge_streams([StreamsResult([])], params(10, "forward")).streams == []
    assert merge_streams([StreamsResult([stream(A, (1, "x"))])], params(0, "forward")).streams == []


STEPS = np.array([10, 20, 30, 40], dtype=np.int64)


def matrix(*rows: tuple[Labels, dict[int, float]]) -> MatrixResult:
    return MatrixResult(
        [Series(lb, np.array(list(pts), dtype=np.int64), np.array(list(pts.values()))) for lb, pts in rows]
    )


def test_to_rows_places_samples_on_the_grid() -> None:
    rows = to_rows(matrix((A, {20: 1.0, 40: 2.0})), STEPS)
    assert rows.labels == [A]
    assert rows.present.tolist() == [[False, True, False, True]]
    assert rows.values[0, [1, 3]].tolist() == [1.0, 2.0]
    vector = to_rows(VectorResult([Sample(B, 10, 5.0)]), STEPS[:1])
    assert vector.labels == [B] and vector.values.tolist() == [[5.0]]
    with pytest.raises(TypeError):
        to_rows(StreamsResult([]), STEPS)


def test_concat_joins_time_pieces_per_series() -> None:
    early = to_rows(matrix((A, {10: 1.0, 20: 2.0})), STEPS)
    late = to_rows(matrix((A, {30: 3.0}), (B, {40: np.nan})), STEPS)
    merged = combine([late, early], Combine.CONCAT, len(STEPS))
    assert merged.labels == [A, B]
    assert merged.values[0, :3].tolist() == [1.0, 2.0, 3.0]
    assert merged.present.tolist() == [[True, True, True, False], [False, False, False, True]]
    assert np.isnan(merged.values[1, 3])


@pytest.mark.parametrize(
    "how, expected", [(Combine.SUM, [3.0, 2.0]), (Combine.MAX, [2.0, 2.0]), (Combine.MIN, [1.0, 2.0])]
)
def test_reducing_combines(how: Combine, expected: list[float]) -> None:
    shard0 = to_rows(matrix((A, {10: 1.0, 20: 2.0})), STEPS)
    shard1 = to_rows(matrix((A, {10: 2.0})), STEPS)
    merged = combine([shard0, shard1], how, len(STEPS))
    assert merged.values[0, :2].tolist() == expected
    assert merged.present.tolist() == [[True, True, False, False]]


def test_combine_of_nothing() -> None:
    assert len(combine([], Combine.SUM, 4)) == 0
    empty = SeriesSet.empty(4)
    assert len(combine([empty, empty], Combine.MAX, 4)) == 0


def test_a_merge_run_as_background_work_gives_way_at_its_steps_and_answers_the_same() -> None:
    from svclog.cpu_priority import ForegroundGate

    partials = [StreamsResult([stream(A, (9, "a9"), (5, "a5"))]), StreamsResult([stream(B, (8, "b8"))])]
    gate = ForegroundGate(max_pause_s=0.02)
    small_query = gate.enter()
    with gate.background():
        merged = merge_streams(partials, params(3, "backward"))
    assert gate.pauses >= 3  # before the sort, before and after the take
    small_query.leave()
    assert flat(merged) == flat(merge_streams(partials, params(3, "backward")))
