"""Sub-query answers through the scheduler: small ones inline, large ones by reference (Ray-free)."""

from __future__ import annotations

import asyncio
import threading

from svclog.actors.answers import INLINE_ANSWER_BYTES, pack_answer, unpack_answer
from svclog.model import Labels


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


UNPICKLED_ON: list[str] = []


def _note_thread(payload: str) -> str:
    UNPICKLED_ON.append(threading.current_thread().name)
    return payload


class _Noted:
    """Unpickles to its payload, noting the thread that unpickled it."""

    def __init__(self, payload: str) -> None:
        self.payload = payload

    def __reduce__(self) -> tuple:
        return (_note_thread, (self.payload,))


def test_a_fetched_answer_is_unpickled_off_the_event_loops_thread():
    store = FakeStore()
    UNPICKLED_ON.clear()
    large, small = _Noted("x" * INLINE_ANSWER_BYTES * 2), _Noted("small")

    async def both() -> tuple[object, object, str]:
        loop_thread = threading.current_thread().name
        got_large = await unpack_answer(pack_answer(large, store.put), store.fetch)
        got_small = await unpack_answer(pack_answer(small, store.put), store.fetch)
        return got_large, got_small, loop_thread

    got_large, got_small, loop_thread = asyncio.run(both())
    assert got_large == large.payload and got_small == "small"
    assert UNPICKLED_ON[0] != loop_thread and UNPICKLED_ON[1] == loop_thread
