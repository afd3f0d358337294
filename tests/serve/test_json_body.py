"""Query answers as JSON bytes: what the standard encoder makes, read back the same."""

import json
import random

from svclog.serve.json_body import dumps


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
