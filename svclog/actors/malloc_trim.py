"""Handing the C heap's freed pages back to the OS (glibc's malloc_trim), off the request path.

A querier runs sub-queries on several threads; the numpy arrays and Python objects they build come
from glibc's per-thread arenas, which keep what was freed (large blocks too, once glibc's adaptive
mmap threshold has grown). Measured at 1M bench lines: the querier's anonymous memory grew through the
query phases to ~440 MB and a malloc_trim(0) took it to ~170 MB. A trim of ~800 MB freed takes ~90 ms
and holds the arenas' locks meanwhile, so it runs on its own thread, at most once per interval.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import time
from collections.abc import Callable

from svclog.actors.coalesced import CoalescedCall
from svclog.libc import libc_function
from svclog.thread_heaps import release_arrow_heap

log = logging.getLogger(__name__)


# glibc gives each thread that contends for a lock an arena of its own, up to 8 per core, and each
# keeps its own free memory. After issue 16's heavy loop, idle for 30 s and trimmed, two arenas per
# process left the gateway at 158 MiB anonymous (207 with the default), the backend host at 235
# (308) and the ingester at 134 (148); Python's small objects come from its own allocator anyway.
MALLOC_ARENAS = 2
M_ARENA_MAX = -8  # malloc.h


def limit_malloc_arenas(count: int = MALLOC_ARENAS) -> None:
    """At most `count` glibc arenas here from now on, and in the processes this one starts (Ray's
    daemons and workers of a local start read MALLOC_ARENA_MAX as they start); an operator's
    MALLOC_ARENA_MAX wins."""
    os.environ.setdefault("MALLOC_ARENA_MAX", str(count))
    mallopt = libc_function("mallopt", [ctypes.c_int, ctypes.c_int], ctypes.c_int)
    if mallopt is not None and os.environ["MALLOC_ARENA_MAX"].isdigit():
        mallopt(M_ARENA_MAX, int(os.environ["MALLOC_ARENA_MAX"]))


def libc_malloc_trim() -> Callable[[], object] | None:
    """glibc's malloc_trim(0), or None where the C library has none (musl, macOS)."""
    trim = libc_function("malloc_trim", [ctypes.c_size_t], ctypes.c_int)
    if trim is None:
        return None
    return lambda: trim(0)


class MallocTrimmer:
    """`request()` after work that freed memory; a daemon thread trims at most every `interval_s`."""

    def __init__(self, interval_s: float = 1.0, trim: Callable[[], object] | None = None):
        self.interval_s = interval_s
        self._trim = trim if trim is not None else libc_malloc_trim()
        self._calls = None if self._trim is None else CoalescedCall(self._trim, "malloc-trim", interval_s)

    def request(self) -> None:
        if self._calls is not None:
            self._calls.request()

    @property
    def trims(self) -> int:
        return 0 if self._calls is None else self._calls.runs


def release_unused(trimmer: MallocTrimmer) -> None:
    """Arrow's pool hands back what it freed now; glibc's arenas (numpy arrays, Python objects)
    are trimmed soon after on the trimmer's thread."""
    release_arrow_heap()
    trimmer.request()


class QuietRelease:
    """Freed memory goes back to the OS once the process's work pauses, not after each piece of it.

    Handing Arrow's heap back after every sub-query made the next one fault its pages in again
    (an hour's select before a flush decodes ~170 MB of lines into fresh memory), and a glibc trim
    asked for after each query ran beside the next one holding the arenas' locks. In the bench's
    query mix at 1M lines (9 queries, 5 reps, two alternating runs each) the sum of the medians
    was ~6% lower without the releases. So work only says it ended (`finished`), and a worker
    thread calls `between_work` after each piece and whenever its wait for the next one comes
    back empty: once no work has run in the process for `quiet_s`, it hands back
    its own Arrow heap (mimalloc keeps a heap per thread) if it worked since its last release,
    and asks for one glibc trim for everything that ended meanwhile. Work that never pauses (a
    dashboard's small queries every 0.1 s after a heavy query grew the heaps) still hands memory
    back: whatever has been owed for `busy_release_s` is released at the next call anyway.
    """

    def __init__(
        self,
        trimmer: MallocTrimmer,
        quiet_s: float = 1.0,
        busy_release_s: float = 10.0,
        release_heap: Callable[[], object] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.trimmer = trimmer
        self.quiet_s = quiet_s
        self.busy_release_s = busy_release_s
        self._release_heap = release_heap if release_heap is not None else release_arrow_heap
        self._clock = clock
        self._lock = threading.Lock()
        self._running = 0
        self._last_end = clock()
        # threads whose Arrow heap holds what their work freed, with when it first did
        self._heaps_owed: dict[int, float] = {}
        self._trim_owed_since: float | None = None

    def started(self) -> None:
        with self._lock:
            self._running += 1

    def finished(self, heap_owed: bool = True) -> None:
        """Work begun with `started` ended; `heap_owed`: this thread will call `between_work` later
        (a thread that will not hands its heap back itself)."""
        with self._lock:
            self._running -= 1
            now = self._last_end = self._clock()
            if self._trim_owed_since is None:
                self._trim_owed_since = now
            if heap_owed:
                self._heaps_owed.setdefault(threading.get_ident(), now)

    def between_work(self) -> bool:
        """From a worker thread between pieces of work: release what is owed if the process has
        been quiet for `quiet_s` (or it has been owed for `busy_release_s`); whether it did."""
        with self._lock:
            now = self._clock()
            quiet = not self._running and now - self._last_end >= self.quiet_s
            ident = threading.get_ident()
            since = self._heaps_owed.get(ident)
            heap = since is not None and (quiet or now - since >= self.busy_release_s)
            if heap:
                del self._heaps_owed[ident]
            trim_since = self._trim_owed_since
            trim = trim_since is not None and (quiet or now - trim_since >= self.busy_release_s)
            if trim:
                self._trim_owed_since = None
        if heap:
            self._release_heap()
        if trim:
            self.trimmer.request()
        return heap or trim
