"""A member's side of a ring actor (svclog/actors/ring_actor.py): join, heartbeat, state, leave.

Ingesters, rulers and index gateways each keep one. Heartbeats carry the member's identity and
tokens, so a ring that restarted (and forgot everyone) takes the member back with the same ranges.
"""

from __future__ import annotations

import logging

from svclog.actors.calls import CALL_TIMEOUT_S, ActorUnavailable, Handles, call, fire

log = logging.getLogger(__name__)
# A ring that is away for now (its process restarting, or slow to answer). A member that meets one
# while starting goes on and joins by its heartbeats: Ray does not restart an actor whose
# constructor raised, so failing the start would lose the member for good.
RING_AWAY: tuple[type[Exception], ...] = (ActorUnavailable, TimeoutError)


class RingMember:
    """Calls to the ring actor named `ring_name` for members of it (blocking, CALL_TIMEOUT_S each).

    Satisfies the ingester lifecycle's RingMembership (register / set_state / forget)."""

    def __init__(self, ring_name: str, num_tokens: int = 128, handles: Handles | None = None):
        self.ring_name = ring_name
        self.num_tokens = num_tokens  # used when a member brings no tokens: they derive from its id
        self._handles = handles or Handles()

    def exists(self) -> bool:
        """Whether the ring actor runs (some topologies start none: then a member owns everything)."""
        return self._handles.find(self.ring_name) is not None

    def _ring(self):
        return self._handles.get(self.ring_name)

    def register(self, member_id: str, address: str, node: str, tokens: tuple[int, ...] = ()) -> None:
        """Join (or rejoin) the ring; ActorMissing when the ring actor does not run."""
        call(
            self._ring().register,
            member_id=member_id,
            address=address,
            node=node,
            num_tokens=len(tokens) or self.num_tokens,
            tokens=tuple(tokens),
            timeout=CALL_TIMEOUT_S,
        )

    def try_register(self, member_id: str, address: str, node: str, tokens: tuple[int, ...] = ()) -> bool:
        """`register`, or False when the ring is away (RING_AWAY): the member's heartbeats (or
        its next try) join it when the ring answers again."""
        try:
            self.register(member_id, address, node, tokens)
        except RING_AWAY as err:
            log.warning("%s: ring %r is away (%s); heartbeats will register it", member_id, self.ring_name, err)
            return False
        return True

    def heartbeat(
        self, member_id: str, address: str, node: str, tokens: tuple[int, ...] = (), state: str | None = None
    ) -> None:
        """A sign of life, not waited for (the next one follows a period later)."""
        try:
            ring = self._ring()
        except ValueError:
            return
        if (
            fire(
                ring.heartbeat,
                member_id=member_id,
                address=address,
                node=node,
                state=state,
                tokens=tuple(tokens),
                num_tokens=len(tokens) or self.num_tokens,
            )
            is None
        ):
            self._handles.drop(self.ring_name)  # a ring created anew needs a fresh handle

    def set_state(self, member_id: str, state: str) -> None:
        call(self._ring().set_state, member_id=member_id, state=state, timeout=CALL_TIMEOUT_S)

    def forget(self, member_id: str) -> bool:
        return bool(call(self._ring().forget, member_id=member_id, timeout=CALL_TIMEOUT_S))

    def leave(self, member_id: str) -> None:
        """Leave without waiting (a stopping member)."""
        try:
            fire(self._ring().forget, member_id=member_id)
        except ValueError:
            pass
