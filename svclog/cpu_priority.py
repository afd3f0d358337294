"""Long sub-queries give way to short ones on the CPU and at the GIL.

A querier thread whose sub-query has run for `LONG_AFTER_S` is lowered to niceness
`LONG_NICENESS` (Linux sets it per thread) until that sub-query ends. Short queries, and the
gateway, scheduler and ingester work they wait on, then win the cores first, while a heavy
query still gets whatever they leave. On two cores, with one tenant's heavy sequence looping,
another tenant's small queries answered at p99 123 and 104 ms instead of 137 and 139 ms
(tests/e2e/test_heavy_tenant.py, alternating runs; idle p99 40-50 ms). A sub-query of a query
the frontend knows to read much (`QueryParams.reads_much`) is lowered from its start, and so is
that query's merge in the frontend: a heavy tenant's many short pieces gave way to nothing.

Where the thread may also leave the idle scheduling class again, lowered work runs in it
(SCHED_IDLE): a thread waking at normal priority then takes the core from it at once, where
against niceness 10 (or 19) it waited out the running thread's slice. Four busy loops at
niceness 10 doubled a small query's p99 (12 -> 25 ms); in the idle class 17 -> 20 ms.

Only where the process may raise a thread's priority back (root with CAP_SYS_NICE, or a
RLIMIT_NICE that allows it): elsewhere a lowered thread would stay low for its next sub-query,
maybe a short one, so nothing is lowered at all.

A niceness does not reach the GIL, though: while sub-queries of several queries are in flight,
`LongWorkGate` lets only one long sub-query of the process run, the others waiting at their next
check.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

log = logging.getLogger("svclog")
P = ParamSpec("P")
R = TypeVar("R")

LONG_AFTER_S = 0.05  # a small query's whole sub-query takes a few ms on an idle querier
LONG_NICENESS = 10  # CFS weight 110 against 1024 at niceness 0
LONG_CPU_S = 0.02  # and its own thread's CPU past this: a light sub-query waiting for cores uses ~5 ms


def _set_niceness(tid: int, niceness: int) -> None:
    os.setpriority(os.PRIO_PROCESS, tid, niceness)


# A thread's CPU priority: (scheduling policy, niceness).
Priority = tuple[int, int]


def _priority(tid: int) -> Priority:
    return os.sched_getscheduler(tid), os.getpriority(os.PRIO_PROCESS, tid)


def _set_priority(tid: int, priority: Priority) -> None:
    policy, niceness = priority
    if os.sched_getscheduler(tid) != policy:
        os.sched_setscheduler(tid, policy, os.sched_param(0))
    _set_niceness(tid, niceness)


def _lowered(base: Priority, niceness: int) -> Priority:
    """`base` lowered to at least `niceness`, in the idle class where the thread can leave it again."""
    policy = os.SCHED_IDLE if can_leave_idle_class() else base[0]
    return policy, max(base[1], niceness)


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


@functools.cache
def can_leave_idle_class() -> bool:
    """Whether a thread of this process may enter the idle scheduling class and leave it again
    (root, or a RLIMIT_NICE allowing its niceness; tried on a throwaway thread)."""
    if not can_restore_priority() or not hasattr(os, "SCHED_IDLE"):
        return False
    outcome: list[bool] = []

    def probe() -> None:
        tid = threading.get_native_id()
        try:
            base = os.sched_getscheduler(tid)
            os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
            os.sched_setscheduler(tid, base, os.sched_param(0))
            outcome.append(os.sched_getscheduler(tid) == base)
        except OSError:
            outcome.append(False)

    thread = threading.Thread(target=probe, name="idle-class-probe")
    thread.start()
    thread.join()
    return outcome[0]


class LongWorkPriority:
    """Lowers the CPU priority of work that runs long, on the thread running it."""

    def __init__(self, after_s: float = LONG_AFTER_S, niceness: int = LONG_NICENESS, enabled: bool | None = None):
        self.after_s = after_s
        self.niceness = niceness
        self.enabled = can_restore_priority() if enabled is None else enabled

    @contextmanager
    def lowered_when_long(self, on_long: Callable[[], None] | None = None, at_once: bool = False) -> Iterator[None]:
        """Run the block at the thread's priority; past `after_s` lowered (and `on_long()` called,
        on a timer thread), and back after. `at_once`: lowered from the start (work known to be
        large), `on_long` still called past `after_s`."""
        if not self.enabled and on_long is None:
            yield
            return
        tid = threading.get_native_id()
        base = _priority(tid) if self.enabled else (0, 0)
        lock = threading.Lock()
        state = {"ended": False, "lowered": False}

        def lower() -> None:
            if not self.enabled or state["lowered"]:
                return
            try:
                _set_priority(tid, _lowered(base, self.niceness))
                state["lowered"] = True
            except OSError:
                pass

        def past_delay() -> None:
            with lock:  # never after the block ended: the thread would stay low
                if state["ended"]:
                    return
                if on_long is not None:
                    on_long()
                lower()

        if at_once:
            with lock:
                lower()
        timer = threading.Timer(self.after_s, past_delay)
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
                        _set_priority(tid, base)
                    except OSError:
                        log.warning("could not raise a querier thread's priority back to %s", base)


class LongWorkGate:
    """While sub-queries of more than one query are in flight in this process, their long ones run
    one at a time: the others wait at their next check (QueryGuard.pacer) until the one running
    ends or the process is left to a single query again. A query alone runs its pieces together,
    and short sub-queries never wait.

    Each long sub-query's threads (its own, the block helpers it feeds) take turns at the process's
    GIL with every other thread there, and a short query's work in that process (its sub-query, its
    planning call, the scheduler's event loop, Ray's call threads) needs the GIL again at each of
    its many steps. Single-node default (one process for the querier and the scheduler), 300k
    lines, another tenant's four parser-query loops, a light `{app="light"}` query every 0.1 s,
    alternating runs: letting one long sub-query run at a time, always, gave the light tenant
    p50 / p99 33 / 70 and 34 / 72 ms against 48 / 99 and 50 / 110 ms without (idle p99 23-33 ms),
    and the loops finished as many queries (the bench's 8 clients too: 33.6 / 33.7 q/s against
    35.7 / 32.7); only while another query's short sub-query ran: 95 / 86 against 116 / 88 ms (its
    planning call and the scheduler's steps came before). But one at a time always made the bench's
    lone queries over a 4-hour window (4-5 pieces each) 7-20% slower after the flush, and a light
    sub-query held up past `LONG_AFTER_S` waited behind a heavy one (a 1.1 s outlier): so a query
    alone runs its pieces together, and a sub-query only counts as long once its own thread has
    also spent `LONG_CPU_S` of CPU. As it is: light p99 87 and 68 ms against 110 and 100 ms without
    the gate (idle p99 20-31 ms), 60 and 101 against 126 and 141 ms in a slower hour; the 4-hour
    window's lone queries 894 against 904 MB/s after the flush; 8 clients 35.7 against 36.1 q/s."""

    WAIT_STEP_S = 0.05  # how often a waiting sub-query asks whether it should stop instead

    def __init__(self) -> None:
        self._turns = threading.Condition()
        self._in_flight: dict[object, int] = {}  # query -> its sub-queries running here
        self._running: LongTurn | None = None  # the long sub-query that runs while others wait

    def turn(self, query: object, stop: Callable[[], bool]) -> LongTurn:
        """The place of one sub-query of `query`, run on the calling thread; `stop()` ends a wait
        that has no point any more (cancelled, or past its deadline)."""
        with self._turns:
            self._in_flight[query] = self._in_flight.get(query, 0) + 1
        return LongTurn(self, query, stop)

    def enter(self, turn: LongTurn) -> None:
        """Return once `turn`'s long sub-query may go on (or `stop()` says to give up)."""
        with self._turns:
            while not turn.stop():
                if self._running is None:
                    self._running = turn
                if self._running is turn or self._in_flight.keys() == {turn.query}:
                    return
                self._turns.wait(self.WAIT_STEP_S)

    def ended(self, turn: LongTurn) -> None:
        with self._turns:
            left = self._in_flight[turn.query] - 1
            if left:
                self._in_flight[turn.query] = left
            else:
                del self._in_flight[turn.query]
            if self._running is turn:
                self._running = None
            self._turns.notify_all()


LOOK_EVERY_S = 0.002  # how often a long sub-query's checks ask the gate whether it may go on


class LongTurn:
    """One sub-query at the gate, made on (and owned by) the thread that runs it."""

    def __init__(self, gate: LongWorkGate, query: object, stop: Callable[[], bool]):
        self.gate = gate
        self.query = query
        self.stop = stop
        self.long = False
        self._owner = threading.get_ident()
        self._cpu_at_start = time.thread_time()
        self._timed_out = False  # past LONG_AFTER_S of wall time
        self._next_look = 0.0  # time.monotonic() before which `wait` returns at once

    def past_delay(self) -> None:
        self._timed_out = True  # set once, from the priority timer's thread

    def wait(self) -> None:
        """Called at the sub-query's checks. Only its own thread waits: a block helper or a page
        read ahead finishes the work it was handed (a pool thread left waiting could hold up the
        sub-query that runs), and the sub-query hands out nothing more meanwhile."""
        if not self._timed_out or threading.get_ident() != self._owner:
            return
        now = time.monotonic()
        if now < self._next_look:  # a select checks at every chunk: the gate is asked far less often
            return
        self._next_look = now + LOOK_EVERY_S
        if not self.long:
            if time.thread_time() - self._cpu_at_start < LONG_CPU_S:
                return  # held up by others, not working long itself: still short
            self.long = True
        self.gate.enter(self)

    def end(self) -> None:
        """On the sub-query's thread, when it ends (however it ends)."""
        self.gate.ended(self)


# below sub-queries lowered by niceness (CFS weight 15 against their 110); lowered sub-queries in
# the idle class (weight 3) sit below it: uploads stay niceness-only, as measured in session 20
BACKGROUND_NICENESS = 19


@contextmanager
def in_background() -> Iterator[None]:
    """Run the block on this thread at `BACKGROUND_NICENESS`, and back afterwards: work nobody
    waits on (an ingester's chunk uploads) then takes what the queries leave of the cores. Only
    where the priority can be raised back; the block must hold no lock a query or push waits on."""
    with _at_priority(lambda base: (base[0], max(base[1], BACKGROUND_NICENESS))):
        yield


def at_callers_priority(work: Callable[P, R]) -> Callable[P, R]:
    """`work` to run on a helper thread at the priority its caller has now (a lowered sub-query's
    blocks stay lowered on the helpers), and the helper's own priority back afterwards."""
    if not can_restore_priority():
        return work
    callers = _priority(threading.get_native_id())

    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        tid = threading.get_native_id()
        own = _priority(tid)
        if own == callers:
            return work(*args, **kwargs)
        _set_priority(tid, callers)
        try:
            return work(*args, **kwargs)
        finally:
            _set_priority(tid, own)

    return run


@contextmanager
def lowered(niceness: int = LONG_NICENESS) -> Iterator[None]:
    """Run the block on this thread as lowered long work runs, and back afterwards: work known
    to be large from its start (a large query's merge in the frontend)."""
    with _at_priority(lambda base: _lowered(base, niceness)):
        yield


@contextmanager
def _at_priority(lower: Callable[[Priority], Priority]) -> Iterator[None]:
    """Run the block on this thread at `lower(its priority)`, and back afterwards; only where
    the priority can be raised back."""
    if not can_restore_priority():
        yield
        return
    tid = threading.get_native_id()
    base = _priority(tid)
    _set_priority(tid, lower(base))
    try:
        yield
    finally:
        try:
            _set_priority(tid, base)
        except OSError:
            log.warning("could not raise a thread's priority back to %s", base)


# The GIL is handed to a waiting thread after this long (Python's default: 5 ms). A querier's
# threads run queries of several tenants at once, each releasing the GIL around every kernel call
# and waiting to get it back: a small query waited up to the interval at each of its calls while a
# heavy one ran Python. On the single-node default (one process for the querier and the scheduler,
# 300k lines, another tenant's four parser-query loops) a light tenant's p50 / p99 went from
# 258-293 / 1225-1233 ms to 128-130 / 303-319 ms with 0.5 ms (idle 20-22 / 77-180 ms), and the
# heavy loops finished as many queries. The bench's 8 clients (one tenant): 17.5-21.3 q/s against
# 18.4-19.3 (four alternating runs each).
QUERY_SWITCH_INTERVAL_S = 0.0005

# The gateway's too: its threads serve HTTP, plan, read a query's facts, run small queries (the
# local lane) and merge large ones, and a small query takes the GIL back several times on its
# way; at 5 ms each of those waited behind a large query's merge. In the e2e heavy-tenant test
# (four alternating pairs, session 27) B's p99 under A's loops was 42 / 43 / 37 / 35 ms at 1 ms
# against 50 / 69 / 46 / 43 ms; on the single-node default and in the bench no change.
GATEWAY_SWITCH_INTERVAL_S = 0.001


def share_the_gil(interval_s: float = QUERY_SWITCH_INTERVAL_S) -> None:
    """Hand this process's GIL over every `interval_s` (it hosts a querier, or the gateway), or
    sooner where it already does (a process hosting both keeps the querier's)."""
    sys.setswitchinterval(min(interval_s, sys.getswitchinterval()))


# How long a large query's merge in the gateway waits for small queries at one of its checkpoints
# (`give_way`): a 100000-line answer passes ~14 of them, so with small queries in flight without
# a break it ends at most ~0.3 s later.
FOREGROUND_PAUSE_S = 0.02


class ForegroundGate:
    """Small queries first at the gateway's GIL. A large query's merge and answer encoding in the
    gateway run at a lowered CPU priority (`lowered`), but a niceness does not reach the GIL: their
    Python steps between kernels, ~1 ms each, held a small query's thread up at each of its own
    steps, 2-7 ms per wait under four concurrent 100000-line selects (session 36, tracing a light
    query's planning read and select). Work that may be large registers as foreground until it is
    known to be large (`enter`, then `leave`); work known to be large runs `background()` and calls
    `give_way()` between its steps, which waits while foreground work is in flight, at most
    `max_pause_s` each time. On the event loop, `pause_async()` does the same for a large query's
    fetches of its partial answers (Ray deserialises them holding the GIL) and between the pieces
    of its body: with those too, a light query's p99 under the heavy loop fell by a median 0.75x
    (six alternating pairs on one server, session 37)."""

    def __init__(self, max_pause_s: float = FOREGROUND_PAUSE_S):
        self.max_pause_s = max_pause_s
        self._changed = threading.Condition()
        self._in_flight = 0
        self.pauses = 0  # checkpoints that found foreground work in flight
        # event-loop checkpoints waiting for the foreground to end: (their loop, their future)
        self._loop_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = []

    def enter(self) -> ForegroundWork:
        """Foreground work begins; it ends with the answer's `leave()`."""
        with self._changed:
            self._in_flight += 1
        return ForegroundWork(self)

    @property
    def in_flight(self) -> int:
        """Foreground work entered and not left yet."""
        return self._in_flight

    def _left(self) -> None:
        with self._changed:
            self._in_flight -= 1
            if not self._in_flight:
                self._changed.notify_all()
                waiters, self._loop_waiters = self._loop_waiters, []
            else:
                waiters = []
        for loop, waiter in waiters:
            loop.call_soon_threadsafe(_wake, waiter)

    def pause(self) -> None:
        """Wait while foreground work is in flight, at most `max_pause_s`."""
        if not self._in_flight:  # read without the lock: a stale answer costs one checkpoint
            return
        with self._changed:
            if self._in_flight:
                self.pauses += 1
                self._changed.wait_for(lambda: not self._in_flight, self.max_pause_s)

    async def pause_async(self) -> None:
        """`pause` for large work on an event loop (fetching a large query's partial answers,
        sending its body): the loop serves everything else meanwhile, this coroutine alone waits."""
        if not self._in_flight:
            return
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        with self._changed:
            if not self._in_flight:
                return
            self.pauses += 1
            self._loop_waiters.append((loop, waiter))
        try:
            async with asyncio.timeout(self.max_pause_s):
                await waiter
        except TimeoutError:
            pass
        finally:
            with self._changed:
                if (loop, waiter) in self._loop_waiters:
                    self._loop_waiters.remove((loop, waiter))

    @contextmanager
    def background(self) -> Iterator[None]:
        """The block's `give_way()` checkpoints (on this thread) pause for this gate's foreground."""
        previous = getattr(_BACKGROUND, "gate", None)
        _BACKGROUND.gate = self
        try:
            yield
        finally:
            _BACKGROUND.gate = previous


class ForegroundWork:
    """One piece of foreground work at a ForegroundGate; `leave()` ends it (again: nothing)."""

    def __init__(self, gate: ForegroundGate):
        self._gate = gate
        self._ended = False

    def leave(self) -> None:
        if not self._ended:
            self._ended = True
            self._gate._left()


def _wake(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)


_BACKGROUND = threading.local()


def give_way() -> None:
    """A checkpoint in work that may be large (merging partial answers, writing an answer's JSON):
    run inside `ForegroundGate.background()`, it waits there for the gate's foreground work;
    elsewhere (a querier's own merges, a small query) it returns at once."""
    gate: ForegroundGate | None = getattr(_BACKGROUND, "gate", None)
    if gate is not None:
        gate.pause()
