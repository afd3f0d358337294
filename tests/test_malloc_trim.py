"""The querier's C-heap trimmer: off the caller's thread, at most once per interval, never fatal."""

import threading
import time

import pyarrow as pa

from svclog.actors.malloc_trim import MallocTrimmer, QuietRelease, libc_malloc_trim, release_unused


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


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _quiet(clock, released, trims):
    trimmer = MallocTrimmer(interval_s=0.0, trim=lambda: trims.append(1))
    return QuietRelease(trimmer, quiet_s=1.0, release_heap=lambda: released.append(threading.get_ident()), clock=clock)


def test_quiet_release_waits_until_no_work_has_run_for_the_quiet_time():
    clock, released, trims = _Clock(), [], []
    quiet = _quiet(clock, released, trims)
    quiet.started()
    quiet.finished()
    clock.now += 0.5
    assert not quiet.between_work() and released == []  # work ended half a second ago: not yet
    quiet.started()
    clock.now += 5.0
    assert not quiet.between_work() and released == []  # work runs (on another thread): not now
    quiet.finished()
    clock.now += 1.0
    assert quiet.between_work()
    assert released == [threading.get_ident()] and _wait(lambda: trims == [1])
    clock.now += 10.0
    assert not quiet.between_work() and released == [threading.get_ident()]  # nothing owed any more


def test_quiet_release_frees_each_threads_own_heap_from_that_thread():
    clock, released, trims = _Clock(), [], []
    quiet = _quiet(clock, released, trims)
    worked, go_idle = threading.Event(), threading.Event()

    def other_loop():
        quiet.started()
        quiet.finished()
        worked.set()
        go_idle.wait(5)
        quiet.between_work()

    other = threading.Thread(target=other_loop)
    other.start()
    worked.wait(5)
    quiet.started()
    quiet.finished()
    clock.now += 1.0
    assert quiet.between_work()
    # this thread's heap and one trim for both; the other thread's heap waits for its own idle call
    assert released == [threading.get_ident()] and _wait(lambda: trims == [1])
    go_idle.set()
    other.join()
    assert released == [threading.get_ident(), other.ident] and trims == [1]


def test_work_that_released_its_own_heap_still_gets_the_trim():
    clock, released, trims = _Clock(), [], []
    quiet = _quiet(clock, released, trims)
    quiet.started()
    quiet.finished(heap_owed=False)
    clock.now += 1.0
    assert quiet.between_work() and released == [] and _wait(lambda: trims == [1])


def test_memory_owed_that_long_goes_back_even_while_work_keeps_coming():
    clock, released, trims = _Clock(), [], []
    trimmer = MallocTrimmer(interval_s=0.0, trim=lambda: trims.append(1))
    quiet = QuietRelease(
        trimmer, quiet_s=1.0, busy_release_s=10.0, release_heap=lambda: released.append(1), clock=clock
    )
    quiet.started()
    quiet.finished()  # owed from now
    for _ in range(9):  # small work every second on other threads: never quiet
        clock.now += 1.0
        quiet.started()
        assert not quiet.between_work()
        quiet.finished(heap_owed=False)
    clock.now += 1.0
    quiet.started()
    assert quiet.between_work() and released == [1] and _wait(lambda: trims == [1])
    quiet.finished(heap_owed=False)
    clock.now += 0.5
    assert not quiet.between_work()  # this thread owes nothing; the trim was just asked for
