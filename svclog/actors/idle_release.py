"""A process hands the memory its work freed back to the OS once it goes idle.

The allocators keep what a query freed for the next one: Arrow's jemalloc until its decay runs,
which needs further allocations; glibc's arenas until a trim; and the object store's pages stay in
the page table of each process that touched them (shared_pages.py). After issue 16's heavy loop
the service was 30 s idle at ~1.3 GiB against ~0.77 GiB before it, and nothing that ran afterwards
would hand any of it back. Rather than every call path saying when its work ends, a daemon
thread watches the process's CPU time: once a second of it used next to none after work that used
some, the process releases once. A process that never idles releases every `busy_release_s`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from svclog.actors.malloc_trim import libc_malloc_trim, release_arrow_heap
from svclog.actors.shared_pages import release_object_store_pages
from svclog.thread_heaps import release_pool_heaps

log = logging.getLogger(__name__)

_TRIM = libc_malloc_trim()


def release_process_memory() -> None:
    """Arrow's pool (jemalloc: every arena; mimalloc: the calling thread's heap and those of the
    pool threads, thread_heaps.py), glibc's arenas, and this process's mapping of the object
    store's pages."""
    release_arrow_heap()
    release_pool_heaps()
    if _TRIM is not None:
        _TRIM()
    release_object_store_pages()


class IdleRelease:
    """`tick()` once a period; it calls `release` when the process went idle after work.

    idle: the last period used at most `idle_share` of one core (Ray's own threads use a little in
    any worker, and a dashboard's small queries keep a gateway a few percent busy); after work: at
    least `worked_cpu_s` of CPU since the last release, so an idle process does not release over
    and over for its background threads' crumbs."""

    def __init__(
        self,
        release: Callable[[], object] = release_process_memory,
        period_s: float = 1.0,
        idle_share: float = 0.2,
        worked_cpu_s: float = 0.5,
        busy_release_s: float = 60.0,
        cpu_seconds: Callable[[], float] = time.process_time,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.release = release
        self.period_s = period_s
        self.idle_share = idle_share
        self.worked_cpu_s = worked_cpu_s
        self.busy_release_s = busy_release_s
        self._cpu_seconds = cpu_seconds
        self._clock = clock
        self._last_cpu = cpu_seconds()
        self._last_tick = clock()
        self._worked = 0.0  # CPU seconds since the last release
        self._owed_since: float | None = None  # when work first ran after the last release
        self.releases = 0

    def tick(self) -> bool:
        """Release if the process has just gone idle after work (or has been busy too long);
        whether it did."""
        cpu, now = self._cpu_seconds(), self._clock()
        used, elapsed = cpu - self._last_cpu, now - self._last_tick
        self._last_cpu, self._last_tick = cpu, now
        self._worked += used
        if used > 0 and self._owed_since is None:
            self._owed_since = now
        if self._worked < self.worked_cpu_s or self._owed_since is None:
            return False
        idle = used <= self.idle_share * max(elapsed, 1e-9)
        if not idle and now - self._owed_since < self.busy_release_s:
            return False
        try:
            self.release()
        except Exception:  # never take the process down for a memory hint
            log.exception("releasing freed memory failed")
        self.releases += 1
        self._worked, self._owed_since = 0.0, None
        self._last_cpu = self._cpu_seconds()  # the release's own CPU is not work to release after
        return True

    def run(self, stop: threading.Event | None = None) -> None:
        stop = stop or threading.Event()
        while not stop.wait(self.period_s):
            self.tick()


_STARTED: IdleRelease | None = None
_START_LOCK = threading.Lock()


def start_idle_release() -> IdleRelease:
    """This process's idle release, its thread started on the first call."""
    global _STARTED
    with _START_LOCK:
        if _STARTED is None:
            _STARTED = IdleRelease()
            threading.Thread(target=_STARTED.run, name="idle-release", daemon=True).start()
        return _STARTED
