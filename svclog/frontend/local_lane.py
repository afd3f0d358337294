"""Which queries the query frontend runs in its own process: those that read little."""

from __future__ import annotations


class LocalLane:
    """Seats for queries run where the frontend runs, not through the scheduler and a querier.

    A query whose selectors read at most `max_bytes` (the index's and the ingesters' sizes, known
    before any chunk is read) costs a few milliseconds of work; through the scheduler it pays
    three more process hops, each waiting on the querier process's GIL while heavy queries run
    there, which tripled a small query's latency under load (docs/architecture.md, session 25).
    Such a query needs no fair share of the queriers. `slots` bounds the frontend's own work, and
    a tenant holds one seat at a time, so one tenant's stream of small queries cannot take them
    all; a query finding no seat goes through the scheduler like any other.

    Used from the frontend's event loop only: no lock.
    """

    def __init__(self, slots: int):
        self.slots = max(0, slots)
        self.taken = 0  # seats given since the start
        self._seated: set[str] = set()

    def take(self, key: str, read_bytes: int | None, max_bytes: int) -> bool:
        """A seat for tenant `key`'s query reading `read_bytes` (None: unknown), or False."""
        if read_bytes is None or max_bytes <= 0 or read_bytes > max_bytes:
            return False
        if not self.open_to(key):
            return False
        self._seated.add(key)
        self.taken += 1
        return True

    def open_to(self, key: str) -> bool:
        """Whether tenant `key` would find a seat now (for a query that reads little)."""
        return len(self._seated) < self.slots and key not in self._seated

    def leave(self, key: str) -> None:
        self._seated.discard(key)

    def seated(self) -> int:
        return len(self._seated)
