"""Hash ring: members with tokens, heartbeats and states; replica placement by stream fingerprint.

A member owns the token ranges ending at its tokens. The replication set of a
fingerprint is the first `rf` distinct members met walking the ring clockwise,
preferring members on distinct nodes (so one node never holds a whole replica set
while other nodes exist). Plain data: the ring actor holds the authoritative copy,
other components hold snapshots for lookups.
"""

from __future__ import annotations

import bisect
import random
import time
from dataclasses import dataclass, field, replace

ACTIVE, JOINING, LEAVING, PENDING = "ACTIVE", "JOINING", "LEAVING", "PENDING"
TOKEN_SPACE = 1 << 32


@dataclass(frozen=True)
class Member:
    id: str
    address: str  # how to reach it (the Ray actor name)
    node: str = ""
    tokens: tuple[int, ...] = ()
    state: str = ACTIVE
    heartbeat_ns: int = 0
    registered_ns: int = 0


def generate_tokens(member_id: str, count: int) -> tuple[int, ...]:
    """Deterministic per member id, so a restarted member takes back the same ranges."""
    rng = random.Random(member_id)
    return tuple(sorted({rng.randrange(TOKEN_SPACE) for _ in range(count)}))


class RingError(Exception):
    """Not enough healthy members to place or serve data."""


@dataclass
class Ring:
    heartbeat_timeout_ns: int = 60 * 1_000_000_000
    members: dict[str, Member] = field(default_factory=dict)
    _tokens: list[int] = field(default_factory=list, repr=False)
    _owners: list[str] = field(default_factory=list, repr=False)

    # ------------------------------------------------------------ membership

    def register(
        self,
        member_id: str,
        address: str,
        node: str = "",
        tokens: tuple[int, ...] = (),
        num_tokens: int = 128,
        state: str = ACTIVE,
    ) -> Member:
        now = time.time_ns()
        member = Member(member_id, address, node, tokens or generate_tokens(member_id, num_tokens), state, now, now)
        self.members[member_id] = member
        self._rebuild()
        return member

    def heartbeat(self, member_id: str, state: str | None = None) -> bool:
        member = self.members.get(member_id)
        if member is None:
            return False
        self.members[member_id] = replace(member, heartbeat_ns=time.time_ns(), state=state or member.state)
        return True

    def set_state(self, member_id: str, state: str) -> None:
        if member_id in self.members:
            self.members[member_id] = replace(self.members[member_id], state=state)
            self._rebuild()

    def forget(self, member_id: str) -> bool:
        found = self.members.pop(member_id, None) is not None
        self._rebuild()
        return found

    @property
    def empty(self) -> bool:
        """No member owns tokens: nothing can be placed (a start whose ingesters have not joined yet)."""
        return not self._tokens

    def is_healthy(self, member: Member, now_ns: int | None = None) -> bool:
        now_ns = now_ns or time.time_ns()
        return member.state == ACTIVE and now_ns - member.heartbeat_ns <= self.heartbeat_timeout_ns

    def healthy_members(self) -> list[Member]:
        now = time.time_ns()
        return [m for m in self.members.values() if self.is_healthy(m, now)]

    def _rebuild(self) -> None:
        pairs = sorted((t, m.id) for m in self.members.values() if m.state in (ACTIVE, LEAVING) for t in m.tokens)
        self._tokens = [t for t, _ in pairs]
        self._owners = [i for _, i in pairs]

    # ------------------------------------------------------------ placement

    def replication_set(self, fingerprint: int, rf: int) -> list[Member]:
        """The members owning a fingerprint (up to rf; fewer when the ring is smaller)."""
        if not self._tokens:
            raise RingError("empty ring: no ingesters registered")
        key = fingerprint % TOKEN_SPACE
        start = bisect.bisect_left(self._tokens, key)
        distinct_nodes = len({m.node for m in self.members.values()})
        chosen: list[str] = []
        nodes: set[str] = set()
        skipped: list[str] = []
        for offset in range(len(self._tokens)):
            owner = self._owners[(start + offset) % len(self._tokens)]
            if owner in chosen or owner in skipped:
                continue
            node = self.members[owner].node
            if node in nodes and len(nodes) < distinct_nodes:
                skipped.append(owner)  # same node as a chosen replica: use only if nothing else fits
                continue
            chosen.append(owner)
            nodes.add(node)
            if len(chosen) == rf:
                break
        for owner in skipped:
            if len(chosen) >= rf:
                break
            chosen.append(owner)
        return [self.members[i] for i in chosen]

    # ------------------------------------------------------------ snapshots

    def snapshot(self) -> dict:
        return {"heartbeat_timeout_ns": self.heartbeat_timeout_ns, "members": list(self.members.values())}

    @classmethod
    def from_snapshot(cls, data: dict) -> Ring:
        ring = cls(heartbeat_timeout_ns=data["heartbeat_timeout_ns"])
        ring.members = {m.id: m for m in data["members"]}
        ring._rebuild()
        return ring
