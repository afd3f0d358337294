"""A ring that is away when a member's actor starts (its process restarting) does not fail the
constructor: Ray does not restart an actor whose constructor raised, so the member would be gone
for good. The member joins later through its heartbeats. Ray-free: the join methods alone."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from svclog.actors import indexgateway_actor, ruler_actor
from svclog.actors.calls import ActorUnavailable, CallTimeout
from svclog.actors.ring_member import RingMember


class AwayRing(RingMember):
    """A RingMember whose ring answers `register` with `error` (None: registers)."""

    def __init__(self, error: Exception | None):
        super().__init__("ring")
        self.error = error
        self.registered: list[str] = []

    def exists(self) -> bool:
        return True

    def register(self, member_id, address, node, tokens=()):
        if self.error is not None:
            raise self.error
        self.registered.append(member_id)


AWAY = [ActorUnavailable("ring: the actor died"), CallTimeout("register: no answer within 30s")]


@pytest.mark.parametrize("error", AWAY, ids=["died", "timeout"])
def test_an_index_gateway_starts_outside_the_ring_and_its_heartbeat_loop_joins_later(error):
    ring = AwayRing(error)
    gateway = SimpleNamespace(_ring=ring, instance_id="index-gateway-0", _node="n")
    assert indexgateway_actor.IndexGatewayActor._join_ring(gateway) is False  # the loop tries again
    ring.error = None
    assert indexgateway_actor.IndexGatewayActor._join_ring(gateway) is True and ring.registered == ["index-gateway-0"]


@pytest.mark.parametrize("error", AWAY, ids=["died", "timeout"])
def test_a_ruler_whose_ring_is_away_still_counts_as_ringed(monkeypatch, error):
    # not in the ring means "the only ruler, owning every group": a ring that is merely away must
    # not make it evaluate every other ruler's groups too; its heartbeats register it
    monkeypatch.setattr(ruler_actor.ray, "get_runtime_context", lambda: SimpleNamespace(get_node_id=lambda: "n"))
    ruler = SimpleNamespace(_ring_member=AwayRing(error), instance_id="ruler-1")
    assert ruler_actor.RulerActor._join_ring(ruler) is True


def test_other_join_errors_still_fail_the_start():
    gateway = SimpleNamespace(_ring=AwayRing(KeyError("bug")), instance_id="index-gateway-0", _node="n")
    with pytest.raises(KeyError):
        indexgateway_actor.IndexGatewayActor._join_ring(gateway)
