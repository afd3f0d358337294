"""Scheduler: ticket life cycle, queue time, querier restarts and shutdown."""

import pytest

from svclog.scheduler import QueueDepthError, Released, Scheduler, SchedulerSettings, TooManyOutstandingRequests


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


def make(clock, **settings) -> Scheduler:
    return Scheduler(SchedulerSettings(**settings), clock=clock)


def test_enqueue_dispatch_complete(clock):
    scheduler = make(clock)
    [ticket] = scheduler.enqueue_many("acme", ("dashboards",), ["sub-query"])
    clock.now += 2.5
    got = scheduler.next_for_querier("q1")
    assert (got.ticket, got.tenant, got.path, got.item, got.attempt) == (
        ticket,
        "acme",
        ("dashboards",),
        "sub-query",
        1,
    )
    assert got.queue_seconds == 2.5
    assert scheduler.running_on("q1") == {ticket}
    assert scheduler.complete(ticket) and not scheduler.complete(ticket)
    assert scheduler.running_on("q1") == frozenset()
    assert scheduler.next_for_querier("q1") is None


def test_dispatch_follows_the_fair_queue(clock):
    scheduler = make(clock)
    scheduler.enqueue_many("a", ("flood",), range(100))
    scheduler.enqueue("a", ("light",), "x")
    scheduler.enqueue("b", (), "y")
    first = [scheduler.next_for_querier(f"q{i}").item for i in range(4)]
    assert "x" in first and "y" in first


def test_limits_are_user_errors(clock):
    scheduler = make(clock, max_outstanding_per_tenant=2, max_queue_hierarchy_levels=1)
    with pytest.raises(QueueDepthError):
        scheduler.enqueue("a", ("x", "y"), 0)
    scheduler.enqueue_many("a", ("x",), [0, 1])
    with pytest.raises(TooManyOutstandingRequests):
        scheduler.enqueue("a", (), 2)
    assert scheduler.stats().discarded == {"a": 1}
    scheduler.next_for_querier("q")  # running work no longer counts against the queue limit
    scheduler.enqueue("a", (), 2)


def test_cancel_queued_and_running(clock):
    scheduler = make(clock)
    running, queued = scheduler.enqueue_many("a", (), ["running", "queued"])
    assert scheduler.next_for_querier("q").ticket == running
    assert scheduler.cancel(running) and not scheduler.cancel(running)
    assert not scheduler.complete(running)  # the late answer of a cancelled sub-query is dropped
    assert scheduler.cancel(queued) and len(scheduler.queue) == 0
    assert scheduler.stats().running == 0 and scheduler.next_for_querier("q") is None


def test_restarted_querier_gets_its_work_requeued_at_the_front(clock):
    scheduler = make(clock)
    scheduler.register_querier("q1", "pid-1")
    first, second = scheduler.enqueue_many("a", ("x",), ["first", "second"])
    assert scheduler.next_for_querier("q1").ticket == first
    released = scheduler.register_querier("q1", "pid-2")  # Ray restarted the querier process
    assert released.requeued == (first,) and released.abandoned == ()
    assert scheduler.register_querier("q1", "pid-2").requeued == ()  # same process: nothing to do
    retry = scheduler.next_for_querier("q2")
    assert (retry.ticket, retry.attempt) == (first, 2)
    assert retry.queue_seconds == 0.0  # measured from the first enqueue
    assert scheduler.next_for_querier("q2").ticket == second


def test_gives_up_after_max_attempts(clock):
    scheduler = make(clock, max_attempts=2)
    ticket = scheduler.enqueue("a", (), "poison")
    scheduler.next_for_querier("q1")
    assert scheduler.forget_querier("q1").requeued == (ticket,)
    scheduler.next_for_querier("q2")
    released = scheduler.forget_querier("q2")
    assert released.abandoned == (ticket,) and released.requeued == ()
    assert not scheduler.complete(ticket) and len(scheduler.queue) == 0


def test_first_answer_wins_after_a_requeue(clock):
    scheduler = make(clock)
    ticket = scheduler.enqueue("a", (), "q")
    scheduler.next_for_querier("slow")
    scheduler.forget_querier("slow")  # thought dead; the sub-query is queued again
    assert scheduler.complete(ticket)  # ... but the slow querier answers after all
    assert len(scheduler.queue) == 0 and scheduler.next_for_querier("other") is None


def test_shutting_down_querier_gets_no_new_work(clock):
    scheduler = make(clock)
    scheduler.enqueue("a", (), "q")
    scheduler.register_querier("q1", "p")
    scheduler.notify_shutdown("q1")
    assert scheduler.next_for_querier("q1") is None
    assert scheduler.next_for_querier("q2").item == "q"
    scheduler.notify_shutdown("unknown")  # harmless


def test_stats(clock):
    scheduler = make(clock)
    scheduler.enqueue_many("a", ("x",), range(3))
    scheduler.enqueue("b", (), 0)
    clock.now += 1
    scheduler.next_for_querier("q1")
    scheduler.next_for_querier("q2")
    stats = scheduler.stats()
    assert stats.queued == {"a": 2} and stats.running == 2 and stats.queriers == 2
    assert stats.dequeued == 2 and stats.queue_seconds_total == 2.0


def test_hierarchy_disabled_retries_stay_in_the_local_queue(clock):
    scheduler = make(clock, max_queue_hierarchy_levels=0)
    ticket = scheduler.enqueue("a", ("x", "y"), "q")
    assert scheduler.next_for_querier("q1").path == ()
    scheduler.forget_querier("q1")
    assert scheduler.queue.queue_lengths("a") == {(): 1} and ticket in scheduler.queue


def test_dispatches_record_querier_path_and_contenders(clock):
    scheduler = make(clock)
    scheduler.enqueue_many("acme", ("a",), ["a1", "a2"])
    scheduler.enqueue_many("acme", ("b",), ["b1"])
    scheduler.enqueue_many("other", (), ["o1"])
    took = [(q, scheduler.next_for_querier(q).item) for q in ("q1", "q2", "q1", "q2")]
    assert [item for _, item in took] == ["a1", "o1", "b1", "a2"]
    log = scheduler.recent_dispatches("acme")
    assert [(d.path, d.querier, d.contenders) for d in log] == [(("a",), "q1", 2), (("b",), "q1", 2), (("a",), "q2", 1)]
    assert [d.tenant for d in scheduler.recent_dispatches()] == ["acme", "other", "acme", "acme"]
    assert scheduler.stats().dispatched == {"q1": 2, "q2": 2}


def test_a_forgotten_querier_gets_no_work_until_a_new_process_takes_its_name(clock):
    scheduler = make(clock)
    scheduler.register_querier("q2", "pid-1")
    scheduler.forget_querier("q2")  # drained and stopped by the scaler
    [ticket] = scheduler.enqueue_many("acme", (), ["x"])
    # a dequeue the old process parked before the forget wakes up: no work for the dead
    assert scheduler.register_querier("q2", "pid-1") == Released()
    assert scheduler.next_for_querier("q2") is None
    assert scheduler.running_on("q2") == frozenset()
    # the pool grows again and a new process takes the name
    scheduler.register_querier("q2", "pid-2")
    assert scheduler.next_for_querier("q2").ticket == ticket


def test_queriers_take_the_turns_of_their_node_and_a_node_without_queriers_is_forgotten(clock):
    scheduler = make(clock)
    for path in ("a", "b", "c"):
        scheduler.enqueue_many("acme", (path,), [f"{path}{i}" for i in range(30)])
    for querier, node in (("q1", "n1"), ("q2", "n1"), ("q3", "n2"), ("q4", "n3")):
        scheduler.register_querier(querier, "pid")
        scheduler.set_group(querier, node)
    # the nodes take turns in lockstep: each still sees every path in its own rotation
    for _ in range(5):
        for querier in ("q1", "q3", "q4", "q2"):
            scheduler.next_for_querier(querier)
    log = scheduler.recent_dispatches("acme")
    assert {d.querier: d.group for d in log} == {"q1": "n1", "q2": "n1", "q3": "n2", "q4": "n3"}
    for node in ("n1", "n2", "n3"):
        paths = [d.path[0] for d in log if d.group == node]
        counts = {p: paths.count(p) for p in "abc"}
        assert max(counts.values()) - min(counts.values()) <= 1, (node, paths)
    scheduler.forget_querier("q3")  # n2's only querier
    assert "n2" not in scheduler.queue._root.orders and "n1" in scheduler.queue._root.orders
    scheduler.forget_querier("q1")  # n1 still has q2
    assert "n1" in scheduler.queue._root.orders


def test_sub_queries_queued_together_name_the_same_query(clock):
    scheduler = make(clock)
    first = scheduler.enqueue_many("acme", (), ["piece-1", "piece-2"])
    other = scheduler.enqueue_many("acme", (), ["piece-1"])
    handed = [scheduler.next_for_querier("q1") for _ in range(3)]
    by_ticket = {a.ticket: a.query for a in handed}
    assert by_ticket[first[0]] == by_ticket[first[1]] != by_ticket[other[0]]
