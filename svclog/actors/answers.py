"""How a querier's answer to a sub-query travels back: through the scheduler to its frontend.

An answer put in the object store costs a shared-memory object, its owner's reference counting
(the scheduler and then the gateway borrow the reference) and a fetch by the gateway: several
calls between Ray's processes per sub-query. Most answers are small (a 5-minute metric range is a
few series of 20 points), so those are pickled once and ride inside the `complete` call itself;
only a large one (many log lines) goes to the object store, where a querier that dies after
answering makes the fetch fail and the sub-query is queued again.
"""

from __future__ import annotations

import pickle
from collections.abc import Awaitable, Callable
from typing import Any

# Ray passes call arguments up to 100 KiB inline; a box this size stays a plain argument
INLINE_ANSWER_BYTES = 64 * 1024


def pack_answer(answer: Any, put: Callable[[Any], Any]) -> list:
    """The box a querier hands to `scheduler.complete`: the pickled answer when small, else a
    reference `put` made (a list, so Ray passes the reference on instead of resolving it).

    A large answer is put as the object, not as its pickled bytes: Ray's serializer keeps its
    Arrow and numpy buffers apart, so the gateway reads a log answer's lines in place in the
    store, where the bytes were copied out of it and unpickled into a second copy (~20 MB held
    per 100000-line answer, and the copies held the gateway's GIL)."""
    if _surely_large(answer):
        return [put(answer)]
    try:
        data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - something only Ray's cloudpickle takes: it goes as an object
        return [put(answer)]
    if len(data) <= INLINE_ANSWER_BYTES:
        return [data]
    return [put(answer)]


def _surely_large(answer: Any) -> bool:
    """A log answer whose lines alone pass the inline size (not pickled just to be measured)."""
    result = getattr(answer, "result", None)
    streams = getattr(result, "streams", None)
    if not isinstance(streams, list):
        return False
    return sum(s.lines.nbytes for s in streams) > INLINE_ANSWER_BYTES


def inline_answer(box: list) -> bool:
    """Whether the answer rides in the box itself (no object store fetch)."""
    return isinstance(box[0], bytes)


async def unpack_answer(box: list, fetch: Callable[[Any], Awaitable[Any]]) -> Any:
    """The answer in a box from `pack_answer`, fetching a referenced one with `fetch`."""
    data = box[0]
    if inline_answer(box):
        return pickle.loads(data)
    return await fetch(data)
