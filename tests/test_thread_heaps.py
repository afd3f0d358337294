import threading

import pyarrow as pa

from svclog.thread_heaps import HeapPool, heaps_are_per_thread, release_pool_heaps


def _started(pool: HeapPool, threads: int) -> set[int]:
    """Make the pool start `threads` threads (each task holds its thread until all have one)."""
    together = threading.Barrier(threads, timeout=5)

    def hold() -> int:
        together.wait()
        return threading.get_ident()

    return {f.result() for f in [pool.submit(hold) for _ in range(threads)]}


def test_each_thread_of_an_idle_pool_releases_once():
    pool = HeapPool(max_workers=4, thread_name_prefix="t-heaps")
    threads = _started(pool, 3)
    ran: list[int] = []
    assert pool.release_each_thread(lambda: ran.append(threading.get_ident())) == 3
    assert sorted(ran) == sorted(threads)  # every thread once, and no fourth thread was started
    pool.shutdown()


def test_a_busy_pool_is_left_alone():
    pool = HeapPool(max_workers=2, thread_name_prefix="t-heaps")
    _started(pool, 2)
    go_on = threading.Event()
    running = pool.submit(go_on.wait, 5)
    ran: list[int] = []
    assert pool.release_each_thread(lambda: ran.append(1)) == 0
    assert ran == []
    go_on.set()
    running.result()
    assert pool.release_each_thread(lambda: ran.append(1)) == 2
    pool.shutdown()


def test_a_pool_that_never_ran_has_nothing_to_release():
    pool = HeapPool(max_workers=2, thread_name_prefix="t-heaps")
    assert pool.release_each_thread(lambda: None) == 0
    pool.shutdown()


def test_work_submitted_during_a_release_still_runs():
    pool = HeapPool(max_workers=2, thread_name_prefix="t-heaps")
    _started(pool, 2)
    results = []

    def slow_release() -> None:
        results.append(pool.submit(lambda: "work"))  # arrives while the releases are in hand

    assert pool.release_each_thread(slow_release) == 2
    assert [f.result(timeout=5) for f in results] == ["work", "work"]
    pool.shutdown()


def test_release_pool_heaps_reaches_every_pool_of_the_process():
    pools = [HeapPool(max_workers=2, thread_name_prefix=f"t-heaps-{k}") for k in range(2)]
    threads = set().union(*(_started(pool, 2) for pool in pools))
    ran: list[int] = []
    assert release_pool_heaps(lambda: ran.append(threading.get_ident())) >= 4
    assert threads <= set(ran)
    for pool in pools:
        pool.shutdown()


def test_only_mimalloc_keeps_a_heap_per_thread():
    assert heaps_are_per_thread() == (pa.default_memory_pool().backend_name == "mimalloc")
