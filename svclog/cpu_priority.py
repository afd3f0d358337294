"""Long sub-queries give way to short ones on the CPU and at the GIL.

A querier thread whose sub-query has run for `LONG_AFTER_S` is lowered to niceness
`LONG_NICENESS` (Linux sets it per thread) until that sub-query ends. Short queries, and the
gateway, scheduler and ingester work they wait on, then win the cores first, while a heavy
query still gets whatever they leave. On two cores, with one tenant's heavy sequence looping,
another tenant's small queries answered at p99 123 and 104 ms instead of 137 and 139 ms
(tests/e2e/test_heavy_tenant.py, alternating runs; idle p99 40-50 ms).

Only where the process may raise a thread's priority back (root with CAP_SYS_NICE, or a
RLIMIT_NICE that allows it): elsewhere a lowered thread would stay low for its next sub-query,
maybe a short one, so nothing is lowered at all.

A niceness does not reach the GIL, though: `LongWorkGate` lets only one long sub-query of a
process run at a time, the others waiting at their next check (everywhere).
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

log = logging.getLogger("svclog")
P = ParamSpec("P")
R = TypeVar("R")

LONG_AFTER_S = 0.05  # a small query's whole sub-query takes a few ms on an idle querier
LONG_NICENESS = 10  # CFS weight 110 against 1024 at niceness 0


def _set_niceness(tid: int, niceness: int) -> None:
    os.setpriority(os.PRIO_PROCESS, tid, niceness)


@functools.cache
def can_restore_priority() -> bool:
    """Whether a thread of this process may be lowered and then raised back (tried on a
    throwaway thread, so no thread that does work is left lowered)."""
    if not sys.platform.startswith("linux"):
        return False  # PRIO_PROCESS with a thread id means a thread only on Linux
    outcome: list[bool] = []

    def probe() -> None:
        tid = threading.get_native_id()
        try:
            base = os.getpriority(os.PRIO_PROCESS, tid)
            _set_niceness(tid, base + 1)
            _set_niceness(tid, base)
            outcome.append(True)
        except OSError:
            outcome.append(False)

    thread = threading.Thread(target=probe, name="priority-probe")
    thread.start()
    thread.join()
    if not outcome[0]:
        log.info("long sub-queries keep their CPU priority: this process may not raise a thread's back")
    return outcome[0]


class LongWorkPriority:
    """Lowers the CPU priority of work that runs long, on the thread running it."""

    def __init__(self, after_s: float = LONG_AFTER_S, niceness: int = LONG_NICENESS, enabled: bool | None = None):
        self.after_s = after_s
        self.niceness = niceness
        self.enabled = can_restore_priority() if enabled is None else enabled

    @contextmanager
    def lowered_when_long(self, on_long: Callable[[], None] | None = None) -> Iterator[None]:
        """Run the block at the thread's priority; past `after_s` at `niceness` (and `on_long()`
        called, on a timer thread), and back after."""
        if not self.enabled and on_long is None:
            yield
            return
        tid = threading.get_native_id()
        base = os.getpriority(os.PRIO_PROCESS, tid)
        lock = threading.Lock()
        state = {"ended": False, "lowered": False}

        def lower() -> None:
            with lock:  # never after the block ended: the thread would stay low
                if state["ended"]:
                    return
                if on_long is not None:
                    on_long()
                if not self.enabled:
                    return
                try:
                    _set_niceness(tid, max(base, self.niceness))
                    state["lowered"] = True
                except OSError:
                    pass

        timer = threading.Timer(self.after_s, lower)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
            with lock:
                state["ended"] = True
                if state["lowered"]:
                    try:
                        _set_niceness(tid, base)
                    except OSError:
                        log.warning("could not raise a querier thread's priority back to %d", base)


# Long sub-queries of one process that run at once. Each one's threads (its own, the block helpers
# it feeds) take turns at the process's GIL with every other thread there, and a short query's work
# in that process (its sub-query, the scheduler's event loop, Ray's call threads) needs the GIL again
# at each of its many steps. On the single-node default (one process for the querier and the
# scheduler, 300k lines, another tenant's four parser-query loops, a light `{app="light"}` query
# every 0.1 s; alternating runs) the light p50 / p99 was 33 / 70 and 34 / 72 ms with one slot
# against 48 / 99 and 50 / 110 ms with four (idle p99 23-33 ms; 99 and 88 ms p99 with two in a
# first trial); the loops finished 73 queries in 25 s against 61-68, and the bench's 8 clients
# 33.6 / 33.7 q/s against 35.7 / 32.7: on two cores a second long sub-query mostly waited for the
# GIL anyway.
LONG_SLOTS = 1


class LongWorkGate:
    """At most `slots` long sub-queries of this process run at once; each other one waits at its
    next check (QueryGuard.pacer) until a slot is free. Short ones never wait."""

    def __init__(self, slots: int = LONG_SLOTS):
        self._slots = threading.BoundedSemaphore(max(1, slots))

    def turn(self, stop: Callable[[], bool]) -> LongTurn:
        """The place of one sub-query run on the calling thread; `stop()` ends a wait that has no
        point any more (the sub-query was cancelled or passed its deadline)."""
        return LongTurn(self._slots, stop)


class LongTurn:
    """One sub-query at the gate: free while short; after `became_long`, its `wait` blocks until it
    holds a slot, which `end` hands back."""

    WAIT_STEP_S = 0.05  # how often a waiting sub-query asks `stop`

    def __init__(self, slots: threading.Semaphore, stop: Callable[[], bool]):
        self._slots = slots
        self._stop = stop
        self._owner = threading.get_ident()
        self._long = False
        self._holding = False

    def became_long(self) -> None:
        self._long = True  # set once, from the priority timer's thread

    def wait(self) -> None:
        """Called at the sub-query's checks. Only its own thread waits: a block helper or a page
        read ahead finishes the work it was handed (a pool thread left waiting could hold up the
        sub-query holding the slot), and the sub-query hands out nothing more meanwhile."""
        if not self._long or self._holding or threading.get_ident() != self._owner:
            return
        while not self._stop():
            if self._slots.acquire(timeout=self.WAIT_STEP_S):
                self._holding = True
                return

    def end(self) -> None:
        """On the sub-query's thread, when it ends (however it ends)."""
        if self._holding:
            self._holding = False
            self._slots.release()


BACKGROUND_NICENESS = 19  # below lowered sub-queries: CFS weight 15 against their 110


@contextmanager
def in_background() -> Iterator[None]:
    """Run the block on this thread at `BACKGROUND_NICENESS`, and back afterwards: work nobody
    waits on (an ingester's chunk uploads) then takes what the queries leave of the cores. Only
    where the priority can be raised back; the block must hold no lock a query or push waits on."""
    if not can_restore_priority():
        yield
        return
    tid = threading.get_native_id()
    base = os.getpriority(os.PRIO_PROCESS, tid)
    _set_niceness(tid, max(base, BACKGROUND_NICENESS))
    try:
        yield
    finally:
        try:
            _set_niceness(tid, base)
        except OSError:
            log.warning("could not raise a background thread's priority back to %d", base)


def at_callers_priority(work: Callable[P, R]) -> Callable[P, R]:
    """`work` to run on a helper thread at the niceness its caller has now (a lowered sub-query's
    blocks stay lowered on the helpers), and the helper's own niceness back afterwards."""
    if not can_restore_priority():
        return work
    callers = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        tid = threading.get_native_id()
        own = os.getpriority(os.PRIO_PROCESS, tid)
        if own == callers:
            return work(*args, **kwargs)
        _set_niceness(tid, callers)
        try:
            return work(*args, **kwargs)
        finally:
            _set_niceness(tid, own)

    return run


# The GIL is handed to a waiting thread after this long (Python's default: 5 ms). A querier's
# threads run queries of several tenants at once, each releasing the GIL around every kernel call
# and waiting to get it back: a small query waited up to the interval at each of its calls while a
# heavy one ran Python. On the single-node default (one process for the querier and the scheduler,
# 300k lines, another tenant's four parser-query loops) a light tenant's p50 / p99 went from
# 258-293 / 1225-1233 ms to 128-130 / 303-319 ms with 0.5 ms (idle 20-22 / 77-180 ms), and the
# heavy loops finished as many queries. The bench's 8 clients (one tenant): 17.5-21.3 q/s against
# 18.4-19.3 (four alternating runs each).
QUERY_SWITCH_INTERVAL_S = 0.0005


def share_the_gil() -> None:
    """Hand this process's GIL over every QUERY_SWITCH_INTERVAL_S (it hosts a querier)."""
    sys.setswitchinterval(QUERY_SWITCH_INTERVAL_S)
