"""A querier's reserved slot: no single tenant fills every slot of a querier, so another tenant's
sub-query is handed out at once instead of queueing behind a heavy tenant's work (issue 16)."""

import asyncio

from svclog.actors.scheduler_actor import SchedulerActor
from svclog.config import load_config
from svclog.scheduler import Scheduler
from svclog.scheduler.service import RESERVED_SLOTS


def test_a_tenant_fills_all_but_the_reserved_slots_and_another_tenant_takes_the_last():
    scheduler: Scheduler[str] = Scheduler()
    scheduler.enqueue_many("heavy", (), [f"h{i}" for i in range(10)])
    taken = [scheduler.next_for_querier("q1", slots=4) for _ in range(4)]
    assert [a.tenant for a in taken if a is not None] == ["heavy"] * (4 - RESERVED_SLOTS)
    assert taken[-1] is None  # heavy keeps its turn; the querier's last slot stays free
    scheduler.enqueue_many("light", (), ["l0"])
    got = scheduler.next_for_querier("q1")  # the slot count it said before still holds
    assert got is not None and got.tenant == "light"
    # a finished heavy sub-query frees a slot heavy may take again
    assert scheduler.complete(taken[0].ticket)
    again = scheduler.next_for_querier("q1")
    assert again is not None and again.tenant == "heavy"


def test_no_reservation_without_a_slot_count_or_with_one_slot():
    scheduler: Scheduler[str] = Scheduler()
    scheduler.enqueue_many("heavy", (), [f"h{i}" for i in range(4)])
    assert all(scheduler.next_for_querier("q1") is not None for _ in range(2))  # slots unknown
    assert scheduler.next_for_querier("q2", slots=1) is not None  # one slot: nothing to keep back
    assert scheduler.next_for_querier("q2", slots=1) is not None


def test_the_cap_is_per_querier_and_another_querier_takes_the_work():
    scheduler: Scheduler[str] = Scheduler()
    scheduler.enqueue_many("heavy", (), [f"h{i}" for i in range(3)])
    assert scheduler.next_for_querier("q1", slots=2) is not None
    assert scheduler.next_for_querier("q1", slots=2) is None
    assert scheduler.at_slot_cap("heavy") and not scheduler.at_slot_cap("light")
    assert scheduler.next_for_querier("q2", slots=2) is not None


def test_a_parked_querier_with_room_is_woken_when_another_is_at_the_cap():
    """The enqueue of a tenant some querier passes over wakes every parked querier: the one
    woken first may be the one at its cap."""

    async def scenario():
        actor = SchedulerActor(load_config(None, []), node_of=lambda name: "")
        await actor.enqueue("heavy", [], ["h0"])
        assert (await actor.dequeue("q1", timeout=0.05, slots=2)) is not None
        full = asyncio.create_task(actor.dequeue("q1", timeout=2, slots=2))
        await asyncio.sleep(0.01)
        room = asyncio.create_task(actor.dequeue("q2", timeout=2, slots=2))
        await asyncio.sleep(0.01)
        await actor.enqueue("heavy", [], ["h1"])
        got = await asyncio.wait_for(room, 1.0)
        assert got is not None and got.item == "h1"
        full.cancel()

    asyncio.run(scenario())
