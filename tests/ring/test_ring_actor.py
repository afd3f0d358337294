"""The ring actor's logic, without Ray: a restarted ring takes members back with their own tokens."""

from __future__ import annotations

from svclog.actors.ring_actor import RingActor
from svclog.ring.ring import generate_tokens


def _tokens(actor: RingActor) -> dict[str, tuple[int, ...]]:
    return {m.id: m.tokens for m in actor.snapshot()["members"]}


def test_a_restarted_ring_takes_members_back_with_their_tokens():
    first = RingActor(heartbeat_timeout_ns=60 * 10**9)
    first.register("ingester-0", "ingester-0", "node-a", 3, (11, 22, 33))  # from a token file
    restarted = RingActor(heartbeat_timeout_ns=60 * 10**9)  # Ray restarted the actor: empty
    restarted.heartbeat("ingester-0", "ingester-0", "node-a", None, (11, 22, 33))
    restarted.heartbeat("ruler-0", "ruler-0", "node-a", None, (), 16)  # configured token count
    assert _tokens(restarted) == {"ingester-0": (11, 22, 33), "ruler-0": generate_tokens("ruler-0", 16)}


def test_a_heartbeat_of_a_known_member_changes_nothing_but_its_time():
    actor = RingActor(heartbeat_timeout_ns=60 * 10**9)
    actor.register("ingester-0", "ingester-0", "node-a", 3, (11, 22, 33))
    actor.heartbeat("ingester-0", "ingester-0", "node-a", None, (99,))
    assert _tokens(actor) == {"ingester-0": (11, 22, 33)}
