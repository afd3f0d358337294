"""Query results through pickle (the querier-to-gateway hop): streams come back equal, line for
line, and an answer's streams carry their own lines only, not the buffers they were sliced from."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pyarrow as pa

from svclog.logql.engine.result import EntryLabels, Stream, StreamsResult
from svclog.model import Labels


def _lines(rng: random.Random, n: int) -> list[str]:
    alphabet = ["a", "é", "\u2028", "\n", "", "\x00", "日本", "🙂", " ", "x" * 50]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))) for _ in range(n)]


def _roundtrip(result: StreamsResult) -> StreamsResult:
    return pickle.loads(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))


def test_streams_of_every_length_come_back_equal():
    rng = random.Random(7)
    for n in (0, 1, 999, 1000, 3005):
        lines = _lines(rng, n)
        kinds = [EntryLabels(Labels({"k": str(i % 2)}), Labels()) for i in range(n)]
        for entry_labels in (None, kinds):
            stream = Stream.of(Labels({"app": "a"}), np.arange(n), lines, entry_labels)
            back = _roundtrip(StreamsResult([stream, stream])).streams
            assert len(back) == 2
            for got in back:
                assert got.labels == stream.labels and got.texts() == lines and got.entry_labels == entry_labels
                assert got.ts.tolist() == stream.ts.tolist() and got.ts.dtype == np.int64


def test_an_empty_answer_comes_back_empty():
    assert _roundtrip(StreamsResult([])).streams == []


def test_streams_sliced_from_one_array_carry_only_their_lines():
    whole = pa.array(["x" * 100] * 10_000, pa.string())
    streams = [Stream(Labels({"s": str(k)}), np.arange(10, dtype=np.int64), whole.slice(k * 10, 10)) for k in range(5)]
    data = pickle.dumps(StreamsResult(streams), protocol=pickle.HIGHEST_PROTOCOL)
    assert len(data) < 50 * 100 + 4096  # 50 lines of 100 bytes, not the 1 MB they were cut from
    back = pickle.loads(data).streams
    assert [s.texts() for s in back] == [s.texts() for s in streams]
