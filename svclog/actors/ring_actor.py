"""Ray host of the authoritative Ring."""

from __future__ import annotations

import ray

from svclog.log_level import apply_level
from svclog.ring.ring import Ring


class RingActor:
    def __init__(self, heartbeat_timeout_ns: int):
        self.ring = Ring(heartbeat_timeout_ns=heartbeat_timeout_ns)

    def register(
        self, member_id: str, address: str, node: str, num_tokens: int = 128, tokens: tuple[int, ...] = ()
    ) -> None:
        self.ring.register(member_id, address, node, tokens=tuple(tokens), num_tokens=num_tokens)

    def heartbeat(
        self,
        member_id: str,
        address: str,
        node: str,
        state: str | None = None,
        tokens: tuple[int, ...] = (),
        num_tokens: int = 128,
    ) -> None:
        """A member's periodic sign of life; it carries the member's tokens so that a ring that
        restarted (and forgot everyone) takes the member back with the same ranges."""
        if not self.ring.heartbeat(member_id, state):
            self.ring.register(member_id, address, node, tokens=tuple(tokens), num_tokens=num_tokens)

    def set_state(self, member_id: str, state: str) -> None:
        self.ring.set_state(member_id, state)

    def forget(self, member_id: str) -> bool:
        return self.ring.forget(member_id)

    def snapshot(self) -> dict:
        return self.ring.snapshot()

    def ready(self) -> bool:
        return True

    def set_log_level(self, level: str) -> str:
        return apply_level(level)


RemoteRing = ray.remote(RingActor)
