"""Log lines written as JSON text by Arrow's kernels read exactly as orjson writes them."""

from __future__ import annotations

import random

import numpy as np
import orjson
import pyarrow as pa
import pytest

from svclog.logql.engine.json_codec import VALUES_SLICE, EncodedValues
from svclog.logql.engine.json_strings import json_string_bodies
from svclog.logql.engine.result import Stream
from svclog.model import Labels

ALPHABET = ["a", "b", " ", '"', "\\", "\n", "\t", "\r", "\b", "\f", "\x00", "\x01", "\x1f", "\x7f", "é", "€", "🙂",
            "\u2028", "/", "<", "&", "u", "0", '\\"', '{"k":"v"}']  # fmt: skip


def _line(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12)))


@pytest.mark.parametrize("seed", range(5))
def test_escaped_as_orjson_escapes(seed):
    rng = random.Random(seed)
    for _ in range(300):
        lines = [_line(rng) for _ in range(rng.randint(1, 30))]
        got = json_string_bodies(pa.array(lines, pa.string())).to_pylist()
        assert got == [orjson.dumps(line).decode()[1:-1] for line in lines]


def test_lines_needing_nothing_come_back_as_they_are():
    lines = pa.array(["plain", "ünïcode 🙂", ""], pa.string())
    assert json_string_bodies(lines) is lines


@pytest.mark.parametrize("seed", range(3))
def test_streams_body_is_orjsons(seed):
    rng = random.Random(seed)
    sizes = [0, 1, 7, VALUES_SLICE, VALUES_SLICE + 1, 2 * VALUES_SLICE + 3] + [rng.randint(1, 5) for _ in range(50)]
    streams = []
    for k, n in enumerate(sizes):
        ts = np.sort(np.array([rng.randint(0, 2**62) for _ in range(n)], dtype=np.int64))
        streams.append(Stream.of(Labels({"s": str(k)}), ts, [_line(rng) for _ in range(n)]))
    for stream, encoded in zip(streams, EncodedValues.of_streams(streams)):
        expected = orjson.dumps([[str(t), line] for t, line in zip(stream.ts.tolist(), stream.texts())])
        assert encoded.text() == expected
        assert len(encoded) == len(stream.ts)
        assert all(part.count(b'"],["') < VALUES_SLICE for part in encoded.parts)
