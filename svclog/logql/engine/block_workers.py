"""Running a query's per-block work on a second core while its thread reads the next blocks.

A querier runs each sub-query in one thread, and a lone metric sub-query over a parser spends
most of its time in Arrow, RE2 and numpy kernels that release the GIL: chunk decoding in the
source, then the pipeline on each block. `in_order` hands the per-block work to a small
process-wide pool of helper threads and yields the results in the blocks' order, so answers
are the same as when run inline. A helper is only taken when one is idle: under many
concurrent queries every query runs inline in its own thread, as before, and no query waits
for another's helper.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from typing import TypeVar

from svclog.cpu_priority import at_callers_priority
from svclog.thread_heaps import HeapPool

T = TypeVar("T")
R = TypeVar("R")

HELPERS = 2  # threads the process lends to queries' blocks (the machines we size for have 2-4 cores)
AHEAD = 3  # blocks one query may have in flight: bounds the decoded blocks it holds at once

# its threads decode blocks that the query's thread frees: their Arrow heaps go back once idle
_pool = HeapPool(max_workers=HELPERS, thread_name_prefix="block-worker")
_idle = threading.BoundedSemaphore(HELPERS)


def in_order(items: Iterable[T], work: Callable[[T], R]) -> Iterator[R]:
    """`work(item)` for every item, in order; items are taken from `items` up to AHEAD ahead of
    the result being yielded, and each runs on an idle helper thread or, when none is, inline."""
    pending: deque[Future[R]] = deque()
    for item in items:
        pending.append(_submit(work, item))
        while pending and (pending[0].done() or len(pending) > AHEAD):
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def _submit(work: Callable[[T], R], item: T) -> Future[R]:
    if _idle.acquire(blocking=False):
        try:
            future = _pool.submit(at_callers_priority(work), item)
        except BaseException:
            _idle.release()
            raise
        future.add_done_callback(lambda _: _idle.release())
        return future
    done: Future[R] = Future()
    try:
        done.set_result(work(item))
    except BaseException as err:  # the error surfaces where its result is taken, in order
        done.set_exception(err)
    return done
