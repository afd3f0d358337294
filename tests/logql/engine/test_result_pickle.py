"""Query results through pickle (the querier-to-gateway hop): long streams travel packed and come
back equal, line for line."""

from __future__ import annotations

import pickle
import random

import numpy as np

from svclog.logql.engine.result import PACKED_LINES, EntryLabels, Stream, StreamsResult
from svclog.model import Labels


def _lines(rng: random.Random, n: int) -> list[str]:
    alphabet = ["a", "é", "\u2028", "\n", "", "\x00", "日本", "🙂", " ", "x" * 50]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))) for _ in range(n)]


def test_streams_of_every_length_come_back_equal():
    rng = random.Random(7)
    for n in (0, 1, PACKED_LINES - 1, PACKED_LINES, PACKED_LINES * 3 + 5):
        lines = _lines(rng, n)
        kinds = [EntryLabels(Labels({"k": str(i % 2)}), Labels()) for i in range(n)]
        for entry_labels in (None, kinds):
            stream = Stream(Labels({"app": "a"}), np.arange(n, dtype=np.int64), lines, entry_labels)
            back = pickle.loads(pickle.dumps(StreamsResult([stream]), protocol=pickle.HIGHEST_PROTOCOL)).streams[0]
            assert back.labels == stream.labels and back.lines == lines and back.entry_labels == entry_labels
            assert back.ts.tolist() == stream.ts.tolist() and back.ts.dtype == np.int64


def test_a_long_stream_is_packed_into_one_string():
    stream = Stream(
        Labels({"app": "a"}), np.arange(PACKED_LINES, dtype=np.int64), [f"l{i}" for i in range(PACKED_LINES)]
    )
    rebuild, args = stream.__reduce__()
    assert rebuild is not Stream and any(isinstance(a, str) and a.startswith("l0l1l2") for a in args)
    short = Stream(Labels({"app": "a"}), np.arange(3, dtype=np.int64), ["a", "b", "c"])
    assert short.__reduce__()[0] is Stream
