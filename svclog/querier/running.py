"""RunningQueries: the sub-queries one querier process runs, so their work can be stopped.

Each runs under a QueryGuard; a watcher sends the running tickets to the scheduler as a
heartbeat and cancels the guards of those it answers are gone (the query was cancelled, timed
out or re-queued elsewhere), so abandoned work stops at the engine's next check and frees its
slot and memory instead of running to the end.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

from svclog.logql.engine.guard import QueryGuard

log = logging.getLogger("svclog")

HEARTBEAT_S = 0.5


class RunningQueries:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._guards: dict[int, QueryGuard] = {}

    def start(self, ticket: int, guard: QueryGuard) -> None:
        with self._lock:
            self._guards[ticket] = guard

    def finish(self, ticket: int) -> None:
        with self._lock:
            self._guards.pop(ticket, None)

    def tickets(self) -> list[int]:
        with self._lock:
            return list(self._guards)

    def stop(self, tickets: Iterable[int]) -> int:
        """Cancel the work of these tickets (unknown ones are ignored); how many were stopped."""
        stopped = 0
        with self._lock:
            for ticket in tickets:
                guard = self._guards.get(ticket)
                if guard is not None and not guard.cancelled:
                    guard.cancel()
                    stopped += 1
        return stopped

    def beat(self, heartbeat: Callable[[list[int]], Iterable[int]]) -> int:
        """One heartbeat: tell the scheduler what runs, stop what it says is gone."""
        running = self.tickets()
        if not running:
            return 0
        return self.stop(heartbeat(running))

    def watch(
        self, heartbeat: Callable[[list[int]], Iterable[int]], stopping: threading.Event, period: float = HEARTBEAT_S
    ) -> None:
        """`beat` every `period` seconds until `stopping` is set (a daemon thread's loop)."""
        while not stopping.wait(period):
            try:
                self.beat(heartbeat)
            except Exception as err:  # noqa: BLE001 - a restarting scheduler: try again next period
                log.debug("querier heartbeat failed: %s", err)
