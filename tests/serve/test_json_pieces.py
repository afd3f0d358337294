"""Large query answers encoded in pieces off the event loop: the same bytes as one dumps."""

import asyncio
import json
import random
import threading

from svclog.serve import json_pieces
from svclog.serve.json_pieces import dumps, dumps_in_pieces, encode, entries


def _streams(n_streams: int, lines: int) -> dict:
    rng = random.Random(n_streams * 7 + lines)
    return {
        "resultType": "streams",
        "result": [
            {
                "stream": {"app": f"a{s}", "uni": 'ünï\u2028"q"', "n": str(rng.random())},
                "values": [[str(10**18 + i), f"line {i} é\t\\ {rng.random()}"] for i in range(lines)],
            }
            for s in range(n_streams)
        ],
        "stats": {"summary": {"execTime": 0.5, "bytes": 10, "nested": [1, 2.5, None, True]}},
    }


def test_pieces_make_the_same_bytes_as_one_dumps():
    for data in (
        _streams(4, 2500),
        _streams(3000, 1),  # many small streams: the result list itself is batched
        _streams(2, 0),
        {"resultType": "matrix", "result": [{"metric": {}, "values": [[1, "1"]] * 1001}]},
        {"resultType": "scalar", "result": [1.5, "2"]},
        [],
        {},
    ):
        payload = {"status": "success", "data": data}
        assert dumps_in_pieces(payload) == dumps(payload)
        assert json.loads(dumps_in_pieces(payload)) == payload


def test_only_large_answers_leave_the_event_loop(monkeypatch):
    threads: list[str] = []
    real = json_pieces.dumps_in_pieces

    def spy(data):
        threads.append(threading.current_thread().name)
        return real(data)

    monkeypatch.setattr(json_pieces, "dumps_in_pieces", spy)
    small, large = _streams(2, 10), _streams(4, 2000)
    assert entries(small) == 20 and entries(large) == 8000
    assert asyncio.run(encode({"data": small}, small)) == dumps({"data": small}) and threads == []
    assert asyncio.run(encode({"data": large}, large)) == dumps({"data": large})
    assert len(threads) == 1 and threads[0] != threading.main_thread().name
