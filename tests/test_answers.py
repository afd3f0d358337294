"""Sub-query answers through the scheduler: small ones inline, large ones by reference (Ray-free)."""

from __future__ import annotations

import asyncio
import threading

from svclog.actors.answers import INLINE_ANSWER_BYTES, pack_answer, unpack_answer
from svclog.logql.engine.result import Stream, StreamsResult
from svclog.logql.source import SourceStats
from svclog.model import Labels
from svclog.querier.querier import PartialResult


class FakeStore:
    """Stands in for the object store: `put` hands out a key, `fetch` awaits its value."""

    def __init__(self) -> None:
        self.objects: dict[int, object] = {}

    def put(self, value: object) -> int:
        key = len(self.objects) + 1
        self.objects[key] = value
        return key

    async def fetch(self, key: int) -> object:
        return self.objects[key]


def roundtrip(answer: object, store: FakeStore) -> object:
    return asyncio.run(unpack_answer(pack_answer(answer, store.put), store.fetch))


def test_small_answer_travels_inline_and_comes_back_equal():
    store = FakeStore()
    answer = {"series": [(Labels.from_dict({"app": "api"}), [(1, 2.0), (2, 3.5)])]}
    box = pack_answer(answer, store.put)
    assert isinstance(box[0], bytes) and not store.objects
    assert roundtrip(answer, store) == answer


def test_large_answer_goes_by_reference():
    store = FakeStore()
    answer = [f"line {i:08d} " + "x" * 90 for i in range(INLINE_ANSWER_BYTES // 50)]
    box = pack_answer(answer, store.put)
    assert not isinstance(box[0], bytes) and len(store.objects) == 1
    assert asyncio.run(unpack_answer(box, store.fetch)) == answer


def test_answer_plain_pickle_refuses_goes_as_the_object():
    store = FakeStore()
    answer = threading.Lock()  # pickle refuses it; the object store's serializer decides
    box = pack_answer(answer, store.put)
    assert store.objects[box[0]] is answer
    assert asyncio.run(unpack_answer(box, store.fetch)) is answer


def _log_answer(lines: int) -> PartialResult:
    stream = Stream.of(
        Labels.from_dict({"app": "api"}), range(lines), [f"line {i:08d} " + "x" * 90 for i in range(lines)]
    )
    return PartialResult(StreamsResult([stream]), SourceStats())


def test_a_large_log_answer_is_put_as_the_object_for_its_buffers_to_be_read_in_place():
    store = FakeStore()
    answer = _log_answer(INLINE_ANSWER_BYTES // 50)
    box = pack_answer(answer, store.put)
    assert store.objects[box[0]] is answer  # not its pickled bytes: Ray keeps the Arrow buffers apart
    assert asyncio.run(unpack_answer(box, store.fetch)) is answer


def test_a_small_log_answer_travels_inline():
    store = FakeStore()
    box = pack_answer(_log_answer(10), store.put)
    assert isinstance(box[0], bytes) and not store.objects
    back = asyncio.run(unpack_answer(box, store.fetch))
    assert back.result.streams[0].texts() == _log_answer(10).result.streams[0].texts()
