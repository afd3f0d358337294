"""Replication quorum of one push: which replica answers are enough to acknowledge it.

Every stream goes to its replicas (the ring's replication set); the push may be answered
once each stream has a quorum (RF/2+1) of successful replicas, and has failed as soon as
one stream can no longer reach its quorum. A Pusher feeds the answers in as they arrive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def quorum_size(replicas: int) -> int:
    """Successful replicas a stream needs: a majority (1 of 1, 2 of 2 or 3, 3 of 4 or 5)."""
    return replicas // 2 + 1 if replicas > 1 else 1


class QuorumTracker:
    """Per-stream success/failure counts over the members' answers; streams are told apart by identity."""

    def __init__(self, assignments: Mapping[str, Sequence[object]]):
        replicas: dict[int, int] = {}
        for streams in assignments.values():
            for stream in streams:
                replicas[id(stream)] = replicas.get(id(stream), 0) + 1
        self._streams_of = {member: [id(s) for s in streams] for member, streams in assignments.items()}
        # per stream: successes still needed, and failures it can still afford
        self._needed = {key: quorum_size(n) for key, n in replicas.items()}
        self._spare = {key: n - quorum_size(n) for key, n in replicas.items()}
        self._short = sum(1 for n in self._needed.values() if n > 0)  # streams without quorum yet
        self._lost = False

    def record(self, member: str, ok: bool) -> None:
        for key in self._streams_of.get(member, ()):
            if ok:
                self._needed[key] -= 1
                if self._needed[key] == 0:
                    self._short -= 1
            else:
                self._spare[key] -= 1
                if self._spare[key] < 0 and self._needed[key] > 0:
                    self._lost = True

    @property
    def reached(self) -> bool:
        """Every stream has its quorum: the push can be acknowledged."""
        return self._short == 0

    @property
    def lost(self) -> bool:
        """Some stream can no longer reach its quorum: the push has failed."""
        return self._lost

    @property
    def settled(self) -> bool:
        return self.reached or self.lost
