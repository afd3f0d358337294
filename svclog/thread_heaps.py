"""Thread pools whose threads can each be asked to hand their Arrow heap back to the OS.

A querier's Arrow pool is mimalloc (actors/options.py), which keeps a heap per thread. What a pool
thread allocated (a decoded block, a page read ahead from an ingester) and another thread freed
goes back to the pool thread's heap, and stays there until that thread itself collects it. The
process's idle release (actors/idle_release.py) runs on a thread of its own, so it reached none of
them. After issue 16's heavy loop and 30 s idle, the backend host's mimalloc arena still held
81 MiB resident, with 11 MiB allocated by Arrow. With the block helpers' heaps released as well,
it held 21 MiB, and the process 169 against 210-239 MiB.

`release_pool_heaps()` asks every idle `HeapPool` of the process to run the release once on each
of its threads. A barrier keeps each thread to one release: a thread that has released waits
there, so it cannot take a second release task, until all of them have run.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from typing import Any

import pyarrow as pa

RELEASE_WAIT_S = 0.5  # a release waits no longer for the pool's threads; each thread takes ~1 ms


def release_arrow_heap() -> None:
    """Arrow's pool hands back what it freed now (mimalloc: the calling thread's heap; jemalloc:
    its arenas)."""
    pa.default_memory_pool().release_unused()


def heaps_are_per_thread() -> bool:
    """Whether Arrow's pool keeps a heap per thread (mimalloc). jemalloc's release already covers
    every arena from any thread, and the system allocator's is a glibc trim."""
    return pa.default_memory_pool().backend_name == "mimalloc"


class HeapPool(ThreadPoolExecutor):
    """A ThreadPoolExecutor that counts its threads and the tasks it has in hand, so that each
    thread can be asked to run a release once while the pool is idle."""

    def __init__(self, max_workers: int, thread_name_prefix: str):
        self._count_lock = threading.Lock()
        self._threads_started = 0
        self._in_hand = 0  # tasks queued or running
        super().__init__(max_workers, thread_name_prefix, initializer=self._thread_started)
        _POOLS.add(self)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        _POOLS.discard(self)
        super().shutdown(wait, cancel_futures=cancel_futures)

    def _thread_started(self) -> None:
        with self._count_lock:
            self._threads_started += 1

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        with self._count_lock:
            self._in_hand += 1
        try:
            future = super().submit(fn, *args, **kwargs)
        except BaseException:
            self._task_done()
            raise
        future.add_done_callback(lambda _: self._task_done())
        return future

    def _task_done(self) -> None:
        with self._count_lock:
            self._in_hand -= 1

    def release_each_thread(self, release: Callable[[], object], wait_s: float = RELEASE_WAIT_S) -> int:
        """Run `release` once on each of the pool's threads if the pool has nothing in hand; how
        many threads did. A task submitted meanwhile waits for the releases (about a millisecond);
        one thread still busy would hold the others at the barrier for at most `wait_s`."""
        with self._count_lock:
            threads, busy = self._threads_started, self._in_hand
        if threads == 0 or busy:
            return 0
        barrier = threading.Barrier(threads, timeout=wait_s)
        released: list[int] = []

        def on_one_thread() -> None:
            release()
            released.append(threading.get_ident())  # list.append is atomic
            try:
                barrier.wait()
            except threading.BrokenBarrierError:
                pass

        wait_for([self.submit(on_one_thread) for _ in range(threads)], timeout=2 * wait_s)
        return len(set(released))


_POOLS: weakref.WeakSet[HeapPool] = weakref.WeakSet()


def release_pool_heaps(release: Callable[[], object] | None = None) -> int:
    """Every idle HeapPool's threads run `release` once; by default they hand their Arrow heaps
    back, where Arrow keeps one per thread (else there is nothing to do). How many threads did."""
    if release is None:
        if not heaps_are_per_thread():
            return 0
        release = release_arrow_heap
    return sum(pool.release_each_thread(release) for pool in list(_POOLS))
