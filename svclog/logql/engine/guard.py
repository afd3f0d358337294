"""QueryGuard: one query's deadline, cancellation flag and memory budget, checked by the engine.

The engine calls `check()` between blocks and streams and `charge()` for what it materialises
(selected lines, parsed label columns, result entries, sample matrices), so a query that runs
past its deadline, is cancelled (client gone, frontend timed out) or holds too much memory stops
at the next block instead of running to the end. Plain object: the querier creates one per
sub-query and its cancel watcher sets the flag from another thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pyarrow as pa

from svclog.gocompat.durations import format_go_duration
from svclog.model import LimitError, SvcError

log = logging.getLogger("svclog")
PROBE_EVERY_S = 0.05  # how often `check` asks a cancel probe (a Ray probe costs ~12 us a call)
TIMEOUT_ADVICE = (
    "decrease the duration of the request or add more label matchers "
    "(prefer exact match over regex match) to reduce the amount of data processed"
)


class QueryCancelled(SvcError):
    """The query's work was abandoned (its client went away or the frontend gave up on it)."""

    status = 499  # the reference's "client closed request"


class QueryTimedOut(SvcError):
    status = 504


class QueryMemoryExceeded(LimitError):
    status = 400


def timeout_error(timeout_ns: int) -> QueryTimedOut:
    """The error of a query whose `query_timeout` passed, naming the timeout and its value."""
    return QueryTimedOut(f"request timed out after {format_go_duration(timeout_ns)} (query_timeout), {TIMEOUT_ADVICE}")


def memory_error(limit: int) -> QueryMemoryExceeded:
    return QueryMemoryExceeded(
        f"the query exceeded its memory budget (limit: {_mib(limit)}, max_query_memory_bytes); consider "
        "adding more specific stream selectors or line filters, or reducing the time range or the limit"
    )


def _mib(n: int) -> str:
    return f"{n / 1e6:g}MB" if n >= 1_000_000 else f"{n}B"


@dataclass(frozen=True)
class QueryLimits:
    """What a query may spend, as plain data that travels with its sub-queries: the deadline
    (wall clock seconds), the timeout it came from (for the error) and the memory budget."""

    deadline: float | None = None
    timeout_ns: int = 0
    memory_bytes: int = 0

    @classmethod
    def starting_now(cls, timeout_ns: int, memory_bytes: int, now: float | None = None) -> QueryLimits:
        now = time.time() if now is None else now
        return cls(now + timeout_ns / 1e9 if timeout_ns > 0 else None, timeout_ns, memory_bytes)

    def guard(self, cancelled_elsewhere: Callable[[], bool] | None = None) -> QueryGuard:
        return QueryGuard(self.deadline, self.timeout_ns, self.memory_bytes, cancelled_elsewhere=cancelled_elsewhere)


def smallest_positive(values: Iterable[int]) -> int:
    """The strictest of several tenants' limits, 0 (none) only when none sets one."""
    positive = [v for v in values if v > 0]
    return min(positive) if positive else 0


class QueryGuard:
    """Deadline (wall clock, seconds since the epoch, so it means the same in every process),
    cancellation and a byte budget for one query; `None`/0 disable a part.

    Cancellation comes from `cancel()` (another thread: the querier's heartbeat watcher) or from
    `cancelled_elsewhere`, a probe asked at most every PROBE_EVERY_S (the caller's RPC framework
    saying the call was cancelled). `on_cancel` hooks pass the cancellation on to work this query
    started elsewhere (an ingester's select)."""

    def __init__(
        self,
        deadline: float | None = None,
        timeout_ns: int = 0,
        memory_limit: int = 0,
        clock: Callable[[], float] = time.time,
        cancelled_elsewhere: Callable[[], bool] | None = None,
    ):
        self.deadline = deadline
        self.timeout_ns = timeout_ns
        self.memory_limit = memory_limit
        self._clock = clock
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self._elsewhere = cancelled_elsewhere
        self._probed_at = float("-inf")
        self._hooks: dict[int, Callable[[], None]] = {}
        self._next_hook = 0
        self.held = 0
        self.peak = 0
        # called first at every check: where a long sub-query waits for its turn to run
        # (cpu_priority.LongWorkGate); None: never waits
        self.pacer: Callable[[], None] | None = None

    def cancel(self) -> None:
        """Stop the query at its next check and run the `on_cancel` hooks (once)."""
        with self._lock:
            if self._cancelled.is_set():
                return
            self._cancelled.set()
            hooks, self._hooks = list(self._hooks.values()), {}
        for hook in hooks:
            try:
                hook()
            except Exception:  # noqa: BLE001 - best effort: the work elsewhere may be gone already
                log.debug("cancel hook failed", exc_info=True)

    def on_cancel(self, hook: Callable[[], None]) -> Callable[[], None]:
        """Run `hook` when the query is cancelled (at once if it already is); returns a function
        that removes it (call it once the work it would stop has finished)."""
        with self._lock:
            if not self._cancelled.is_set():
                key = self._next_hook
                self._next_hook += 1
                self._hooks[key] = hook
                return lambda: self._remove_hook(key)
        hook()
        return lambda: None

    def _remove_hook(self, key: int) -> None:
        with self._lock:
            self._hooks.pop(key, None)

    @property
    def cancelled(self) -> bool:
        if self._cancelled.is_set():
            return True
        if self._elsewhere is not None:
            now = time.monotonic()
            if now - self._probed_at >= PROBE_EVERY_S:
                self._probed_at = now
                if self._elsewhere():
                    self.cancel()
                    return True
        return False

    def expired(self) -> bool:
        return self.deadline is not None and self._clock() >= self.deadline

    def stopping(self) -> bool:
        """Whether the query should stop (what `check` raises for), without raising."""
        return self.cancelled or self.expired()

    def check(self) -> None:
        """Raise if the query should stop now: cancelled, or past its deadline."""
        if self.pacer is not None:
            self.pacer()
        if self.cancelled:
            raise QueryCancelled("the request was cancelled by the client")
        if self.expired():
            raise timeout_error(self.timeout_ns)

    def charge(self, nbytes: int) -> None:
        """Count bytes the query now holds; fail once they pass the budget (and check the deadline)."""
        with self._lock:
            self.held += max(0, int(nbytes))
            self.peak = max(self.peak, self.held)
            over = self.memory_limit > 0 and self.held > self.memory_limit
        if over:
            raise memory_error(self.memory_limit)
        self.check()

    def release(self, nbytes: int) -> None:
        """Bytes the query no longer holds (a transient batch it has dropped)."""
        with self._lock:
            self.held = max(0, self.held - max(0, int(nbytes)))


def array_bytes(*arrays: pa.Array | pa.ChunkedArray | None) -> int:
    """Bytes Arrow holds for these arrays (buffers of slices counted at their sliced size)."""
    total = 0
    for array in arrays:
        if array is not None:
            total += array.nbytes
    return total
