"""How a querier's answer to a sub-query travels back: through the scheduler to its frontend.

An answer put in the object store costs a shared-memory object, its owner's reference counting
(the scheduler and then the gateway borrow the reference) and a fetch by the gateway: several
calls between Ray's processes per sub-query. Most answers are small (a 5-minute metric range is a
few series of 20 points), so those are pickled once and ride inside the `complete` call itself;
only a large one (many log lines) goes to the object store, where a querier that dies after
answering makes the fetch fail and the sub-query is queued again.
"""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import Awaitable, Callable
from typing import Any

# Ray passes call arguments up to 100 KiB inline; a box this size stays a plain argument
INLINE_ANSWER_BYTES = 64 * 1024


def pack_answer(answer: Any, put: Callable[[Any], Any]) -> list:
    """The box a querier hands to `scheduler.complete`: the pickled answer when small, else a
    reference `put` made (a list, so Ray passes the reference on instead of resolving it)."""
    try:
        data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - something only Ray's cloudpickle takes: it goes as an object
        return [put(answer)]
    if len(data) <= INLINE_ANSWER_BYTES:
        return [data]
    return [put(data)]


async def unpack_answer(box: list, fetch: Callable[[Any], Awaitable[Any]]) -> Any:
    """The answer in a box from `pack_answer`, fetching a referenced one with `fetch`. A fetched
    (large) answer is unpickled on a worker thread: the caller's event loop goes on serving other
    requests meanwhile (long streams unpickle in steps that let the GIL go: Stream.__reduce__)."""
    data = box[0]
    if isinstance(data, bytes):
        return pickle.loads(data)
    data = await fetch(data)
    if not isinstance(data, bytes):
        return data  # put as the object itself
    return await asyncio.to_thread(pickle.loads, data)
