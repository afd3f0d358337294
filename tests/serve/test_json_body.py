"""Query answers as JSON bytes: what the standard encoder makes, read back the same, in one call
or in pieces."""

import asyncio
import json
import random

import numpy as np
from starlette.responses import StreamingResponse

from svclog.logql.engine.json_codec import VALUES_SLICE, EncodedValues, answer_to_json
from svclog.logql.engine.result import NO_ENTRY_LABELS, EntryLabels, Stream, StreamsResult
from svclog.model import Labels
from svclog.serve.json_body import STREAM_ABOVE, dumps, heavier_than, pieces, response


def _streams(n_streams: int, lines: int) -> dict:
    rng = random.Random(n_streams * 7 + lines)
    return {
        "resultType": "streams",
        "result": [
            {
                "stream": {"app": f"a{s}", "uni": 'ünï\u2028"q"', "n": str(rng.random())},
                # entries are tuples in the codec (JSON arrays), lines with escapes and control bytes
                "values": [(str(10**18 + i), f"line {i} é\t\\ \x01\x7f {rng.random()}") for i in range(lines)],
            }
            for s in range(n_streams)
        ],
        "stats": {"summary": {"execTime": 0.5, "bytes": 10, "nested": [1, 2.5, None, True]}},
    }


def test_the_body_is_the_standard_encoders_document():
    for data in (
        _streams(4, 2500),
        _streams(3000, 1),
        _streams(2, 0),
        {"resultType": "matrix", "result": [{"metric": {}, "values": [[1, "1"]] * 1001}]},
        {"resultType": "scalar", "result": [1.5, "2"]},
        [],
        {},
    ):
        payload = {"status": "success", "data": data}
        standard = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        assert dumps(payload) == standard  # byte for byte (no float here prints differently)


def test_small_floats_and_integer_keys_read_back_the_same():
    payload = {"execTime": 1.2e-05, "big": 1e16, 3: "int key"}
    assert json.loads(dumps(payload)) == {"execTime": 1.2e-05, "big": 1e16, "3": "int key"}


def _random_document(rng: random.Random, depth: int = 0) -> object:
    """Nested objects and lists of every shape an answer has: streams, series, samples, names."""
    kind = rng.choice(["streams", "matrix", "vector", "names", "scalar", "nested"] if depth < 2 else ["scalar"])
    if kind == "streams":
        return [
            {"stream": {"s": str(i)}, "values": [(str(j), f"l{j} é\x01") for j in range(rng.choice([0, 1, 7, 40]))]}
            for i in range(rng.randint(0, 12))
        ]
    if kind == "matrix":
        return [{"metric": {}, "values": [[j, str(j / 3)] for j in range(rng.randint(0, 50))]} for _ in range(3)]
    if kind == "vector":
        return [{"metric": {"k": str(i)}, "value": [i, "1"]} for i in range(rng.randint(0, 30))]
    if kind == "names":
        return [f"n{i}" for i in range(rng.randint(0, 60))]
    if kind == "nested":
        return {
            rng.choice(["a", "b", 3, None, True]): _random_document(rng, depth + 1) for _ in range(rng.randint(0, 4))
        }
    return rng.choice([1, 2.5, None, True, "x", 1.2e-05])


def test_pieces_join_to_the_one_call_document():
    rng = random.Random(16)
    for _ in range(500):
        document = {"status": "success", "data": _random_document(rng)}
        for per_piece in (1, 2, 5, 30, 1000):
            assert b"".join(pieces(document, per_piece)) == dumps(document)


def test_no_piece_holds_more_than_its_share():
    document = {"status": "success", "data": _streams(4, 2500)}
    parts = list(pieces(document, 100))
    assert b"".join(parts) == dumps(document)
    assert max(len(part) for part in parts) < 10 * len(dumps(document)) / 100  # ~100 entries a piece
    assert len(parts) > 100


def test_a_heavy_answer_is_streamed_and_a_light_one_has_its_length():
    light, heavy = {"data": _streams(2, 10)}, {"data": _streams(3, STREAM_ABOVE)}
    assert heavier_than(heavy, STREAM_ABOVE) and not heavier_than(light, STREAM_ABOVE)
    assert not isinstance(response(light), StreamingResponse)
    assert response(light).body == dumps(light)
    streamed = response(heavy, status=200)
    assert isinstance(streamed, StreamingResponse) and streamed.media_type == "application/json"

    async def body() -> bytes:
        return b"".join([piece async for piece in streamed.body_iterator])  # type: ignore[misc]

    assert asyncio.run(body()) == dumps(heavy)


def test_a_streamed_answer_gives_way_between_its_pieces_and_a_light_one_never_does():
    light, heavy = {"data": _streams(2, 10)}, {"data": _streams(3, STREAM_ABOVE)}
    calls = 0

    async def give_way() -> None:
        nonlocal calls
        calls += 1

    assert response(light, give_way=give_way).body == dumps(light)
    streamed = response(heavy, give_way=give_way)

    async def body() -> list[bytes]:
        return [piece async for piece in streamed.body_iterator]  # type: ignore[misc]

    parts = asyncio.run(body())
    assert b"".join(parts) == dumps(heavy)
    assert calls == len(parts) > 10


def test_the_weight_stops_counting_past_its_limit():
    huge = [{"metric": {"k": str(i)}, "value": [i, "1"]} for i in range(100_000)]
    assert heavier_than(huge, 50) and not heavier_than(huge[:5], 50)


def test_values_encoded_in_the_merge_make_the_same_body():
    """A streams answer with its values encoded already (answer_to_json) is the body of the same
    answer with its values as lists, in one call and in pieces, with categorized labels too."""
    rng = random.Random(3)
    kinds = [
        EntryLabels(Labels({"trace_id": "t"}), Labels()),
        EntryLabels(Labels(), Labels({"p": "1"})),
        NO_ENTRY_LABELS,
    ]
    for n in (0, 1, VALUES_SLICE, 2 * VALUES_SLICE + 3, 6000):
        ts = np.arange(n, dtype=np.int64) * 10**9
        lines = [f'l{i} "é\\\x01' + "x" * rng.randint(0, 300) for i in range(n)]
        for entry_labels in (None, [kinds[i % 3] for i in range(n)]):
            result = StreamsResult(
                [
                    Stream.of(Labels({"app": "a"}), ts, lines, entry_labels),
                    Stream.of(Labels({"app": "b"}), ts[:2], lines[:2]),
                ]
            )
            as_lists = {"status": "success", "data": answer_to_json(result, encoded_values=False)}
            encoded = {"status": "success", "data": answer_to_json(result, encoded_values=True)}
            assert isinstance(encoded["data"]["result"][0]["values"], EncodedValues)
            assert len(encoded["data"]["result"][0]["values"]) == n
            assert (
                dumps(encoded)
                == dumps(as_lists)
                == json.dumps(as_lists, ensure_ascii=False, separators=(",", ":")).encode()
            )
            for per_piece in (7, 1000):
                assert b"".join(pieces(encoded, per_piece)) == dumps(as_lists)
    assert heavier_than({"data": answer_to_json(result, encoded_values=True)}, 5999)
