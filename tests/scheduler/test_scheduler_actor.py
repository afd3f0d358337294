"""The actor host's async behaviour, driven directly (no Ray cluster needed)."""

import asyncio
from dataclasses import replace

import pytest

from svclog.actors.scheduler_actor import Finished, SchedulerActor, scheduler_options
from svclog.config import load_config
from svclog.scheduler import QuerierLostError, TooManyOutstandingRequests


def make(*flags: str) -> SchedulerActor:
    return SchedulerActor(load_config(None, list(flags)))


def run(coro):
    return asyncio.run(coro)


def test_options_come_from_config():
    cfg = load_config(None, [])
    options = scheduler_options(cfg)
    assert options["num_cpus"] == cfg.ray.scheduler_num_cpus and options["name"] == "scheduler"


def test_dequeue_waits_for_work_and_result_returns_the_answer():
    async def scenario():
        actor = make()
        waiting = asyncio.create_task(actor.dequeue("q1", timeout=5))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        [ticket] = await actor.enqueue("acme", ["org", "bob"], ["sub"])
        got = await waiting
        assert (got.ticket, got.item, got.path) == (ticket, "sub", ("org", "bob"))
        answer = asyncio.create_task(actor.result(ticket))
        assert await actor.complete(ticket, {"rows": 1})
        assert await answer == {"rows": 1}
        assert not await actor.complete(ticket, "again")

    run(scenario())


def test_dequeue_times_out_with_none():
    assert run(make().dequeue("q1", timeout=0.05)) is None


def test_many_waiting_queriers_all_get_work():
    async def scenario():
        actor = make()
        waiters = [asyncio.create_task(actor.dequeue(f"q{i}", timeout=5)) for i in range(4)]
        await asyncio.sleep(0.01)
        tickets = await actor.enqueue("acme", [], list(range(4)))
        got = await asyncio.gather(*waiters)
        assert sorted(a.ticket for a in got) == tickets

    run(scenario())


def test_failure_reaches_the_frontend():
    async def scenario():
        actor = make()
        [ticket] = await actor.enqueue("acme", [], ["sub"])
        await actor.dequeue("q1", timeout=1)
        await actor.fail(ticket, ValueError("boom"))
        with pytest.raises(ValueError, match="boom"):
            await actor.result(ticket)

    run(scenario())


def test_results_in_ticket_order():
    async def scenario():
        actor = make()
        tickets = await actor.enqueue("acme", [], ["a", "b", "c"])
        for _ in tickets:
            got = await actor.dequeue("q1", timeout=1)
            await actor.complete(got.ticket, got.item.upper())
        assert await actor.results(tickets) == ["A", "B", "C"]
        with pytest.raises(KeyError):
            await actor.result(tickets[0])  # collected once

    run(scenario())


def test_overflow_raises_429():
    async def scenario():
        actor = make("-query-scheduler.max-outstanding-requests-per-tenant=2")
        with pytest.raises(TooManyOutstandingRequests):
            await actor.enqueue("acme", [], [1, 2, 3])

    run(scenario())


def test_cancel_wakes_the_waiting_frontend():
    async def scenario():
        actor = make()
        [ticket] = await actor.enqueue("acme", [], ["sub"])
        waiting = asyncio.create_task(actor.result(ticket))
        await asyncio.sleep(0.01)
        assert await actor.cancel([ticket]) == 1
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert await actor.dequeue("q1", timeout=0.01) is None

    run(scenario())


def test_restarted_querier_gets_work_again_then_gives_up():
    async def scenario():
        cfg = load_config(None, [])
        actor = SchedulerActor(replace(cfg, query_range=replace(cfg.query_range, max_retries=2)))
        [ticket] = await actor.enqueue("acme", [], ["sub"])
        assert (await actor.dequeue("q1", timeout=1, incarnation="pid-1")).attempt == 1
        retry = await actor.dequeue("q1", timeout=1, incarnation="pid-2")  # Ray restarted q1
        assert (retry.ticket, retry.attempt) == (ticket, 2)
        released = await actor.forget_querier("q1")  # lost again: max_attempts reached
        assert released.abandoned == (ticket,)
        with pytest.raises(QuerierLostError):
            await actor.result(ticket)

    run(scenario())


def test_requeued_work_wakes_a_waiting_querier():
    async def scenario():
        actor = make()
        [ticket] = await actor.enqueue("acme", [], ["sub"])
        await actor.dequeue("q1", timeout=1)
        waiting = asyncio.create_task(actor.dequeue("q2", timeout=5))
        await asyncio.sleep(0.01)
        assert (await actor.forget_querier("q1")).requeued == (ticket,)
        assert (await waiting).ticket == ticket

    run(scenario())


def test_stats_and_queue_lengths():
    async def scenario():
        actor = make()
        await actor.enqueue("acme", ["a"], [1, 2])
        assert (await actor.stats()).queued == {"acme": 2}
        assert await actor.queue_lengths("acme") == {("a",): 2}

    run(scenario())


def test_each_querier_is_placed_in_its_node_group_once_per_process():
    looked_up: list[str] = []

    def node_of(querier: str) -> str:
        looked_up.append(querier)
        return {"q1": "node-a", "q2": "node-b"}.get(querier, "")

    async def scenario():
        actor = SchedulerActor(load_config(None, []), node_of=node_of)
        await actor.enqueue("acme", ["x"], list(range(6)))
        for _ in range(2):
            for querier in ("q1", "q2", "q3"):
                assert await actor.dequeue(querier, timeout=1, incarnation="pid-1") is not None
        await actor.dequeue("q1", timeout=0.01, incarnation="pid-2")  # q1 restarted: looked up again
        return await actor.dispatches("acme")

    dispatches = run(scenario())
    assert {(d.querier, d.group) for d in dispatches} == {("q1", "node-a"), ("q2", "node-b"), ("q3", "")}
    assert sorted(looked_up) == ["q1", "q1", "q2", "q3"]


def test_next_dequeue_carries_the_previous_outcome():
    """A querier's answer (or error) rides on its next dequeue: the waiting frontend gets it
    before the querier's next sub-query is handed out, and an unknown ticket is ignored."""

    async def scenario():
        actor = make()
        tickets = await actor.enqueue("acme", [], ["a", "b", "c"])
        first = await actor.dequeue("q1", timeout=1)
        answer = asyncio.create_task(actor.result(first.ticket))
        second = await actor.dequeue("q1", timeout=1, finished=Finished(first.ticket, {"rows": 1}))
        assert await answer == {"rows": 1}
        failed = asyncio.create_task(actor.result(second.ticket))
        third = await actor.dequeue("q1", timeout=1, finished=Finished(second.ticket, error=ValueError("bad")))
        with pytest.raises(ValueError, match="bad"):
            await failed
        assert sorted(a.ticket for a in (first, second, third)) == tickets
        assert await actor.dequeue("q1", timeout=0.01, finished=Finished(999, "late")) is None
        assert not await actor.complete(first.ticket, "again")  # settled once

    run(scenario())
