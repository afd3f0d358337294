"""Deadlines and liveness in the scheduler: expired sub-queries are never handed out, queriers
learn which running work is gone, and only a dead querier's work is queued again."""

from __future__ import annotations

import asyncio

import pytest

from svclog.actors.scheduler_actor import SchedulerActor
from svclog.config import load_config
from svclog.logql.engine.guard import QueryTimedOut
from svclog.scheduler import Scheduler, SchedulerSettings


class Clock:
    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def make(silence: float = 30.0) -> tuple[Scheduler, Clock, Clock]:
    mono, wall = Clock(), Clock()
    return Scheduler(SchedulerSettings(querier_silence_s=silence), clock=mono, wall=wall), mono, wall


def test_a_sub_query_past_its_deadline_is_dropped_not_handed_out():
    s, _, wall = make()
    [late] = s.enqueue_many("t", (), ["late"], deadline=wall.now + 1)
    [fine] = s.enqueue_many("t", (), ["fine"], deadline=wall.now + 60)
    wall.now += 5
    got = s.next_for_querier("q1")
    assert (got.ticket, got.item, got.deadline) == (fine, "fine", 1060.0)
    assert s.take_expired() == [late] and s.take_expired() == []
    assert s.stats().queued == {} and not s.complete(late)


def test_heartbeat_names_the_running_work_that_is_gone():
    s, _, wall = make()
    a, b, c = s.enqueue_many("t", (), ["a", "b", "c"], deadline=wall.now + 10)
    for _ in range(3):
        s.next_for_querier("q1")
    assert s.heartbeat("q1", [a, b, c]) == []
    s.cancel(a)  # the client went away
    assert s.heartbeat("q1", [a, b, c]) == [a]
    wall.now += 11  # the query's deadline passed
    assert s.heartbeat("q1", [b, c]) == [b, c]
    assert s.heartbeat("q1", [999]) == [999]  # unknown here (e.g. queued on a scheduler that restarted)


def test_slow_work_is_never_requeued_but_a_silent_querier_s_is():
    s, mono, _ = make(silence=30)
    [ticket] = s.enqueue_many("t", (), ["slow"])
    s.next_for_querier("q1")
    for _ in range(10):  # running for minutes, heartbeating: stays where it is
        mono.now += 20
        assert s.heartbeat("q1", [ticket]) == []
        assert s.reap_silent().requeued == ()
    mono.now += 31  # no heartbeat for longer than the silence allowed: the querier died
    assert s.reap_silent().requeued == (ticket,)
    assert s.stats().requeued == 1
    got = s.next_for_querier("q2")
    assert got.ticket == ticket and got.attempt == 2
    assert s.heartbeat("q1", [ticket]) == [ticket]  # a late copy on q1 is told to stop


def test_actor_fails_an_expired_ticket_with_a_timeout_and_cancels_via_heartbeat():
    async def scenario():
        actor = SchedulerActor(load_config(None, []))
        import time

        [expired] = await actor.enqueue("t", [], ["x"], time.time() - 1)
        assert await actor.dequeue("q1", timeout=0.05, incarnation="1") is None
        with pytest.raises(QueryTimedOut):
            await actor.result(expired, 1)
        [ticket] = await actor.enqueue("t", [], ["y"], time.time() + 60)
        got = await actor.dequeue("q1", timeout=1, incarnation="1")
        assert got.ticket == ticket
        assert await actor.heartbeat("q1", "1", [ticket]) == []
        await actor.cancel([ticket])
        assert await actor.heartbeat("q1", "1", [ticket]) == [ticket]

    asyncio.run(scenario())
