"""The querier's C-heap trimmer: off the caller's thread, at most once per interval, never fatal."""

import threading
import time

import pyarrow as pa

from svclog.actors.malloc_trim import MallocTrimmer, libc_malloc_trim, release_unused


def _wait(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.01)
    return predicate()


def test_requests_are_trimmed_on_another_thread_at_most_once_per_interval():
    threads = []
    trimmer = MallocTrimmer(interval_s=0.5, trim=lambda: threads.append(threading.current_thread().name))
    trimmer.request()
    assert _wait(lambda: len(threads) == 1)
    for _ in range(20):  # a burst within the interval: one more trim after it, not twenty
        trimmer.request()
    time.sleep(0.2)
    assert len(threads) == 1
    assert _wait(lambda: len(threads) == 2)
    time.sleep(0.7)
    assert len(threads) == 2 and threads == ["malloc-trim", "malloc-trim"]


def test_a_failing_trim_is_logged_and_the_thread_goes_on():
    calls = []

    def trim():
        calls.append(1)
        raise OSError("no")

    trimmer = MallocTrimmer(interval_s=0.0, trim=trim)
    trimmer.request()
    assert _wait(lambda: len(calls) == 1)
    trimmer.request()
    assert _wait(lambda: len(calls) == 2)


def test_glibc_trim_returns_freed_heap_pages():
    trim = libc_malloc_trim()
    assert trim is not None  # the service runs on glibc Linux
    assert trim() in (0, 1)


def test_release_unused_hands_back_arrows_pool_and_asks_for_a_trim(monkeypatch):
    released, trims = [], []
    pool = pa.default_memory_pool()
    monkeypatch.setattr(
        pa, "default_memory_pool", lambda: type("Pool", (), {"release_unused": lambda self: released.append(1)})()
    )
    release_unused(MallocTrimmer(interval_s=0.0, trim=lambda: trims.append(1)))
    assert released == [1] and _wait(lambda: trims == [1])
    pool.release_unused()  # the real pool's call exists and is harmless
