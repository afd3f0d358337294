"""QuerierPool (the scheduler's autoscaled queriers): grows by creating queriers, drains before it
stops one, and never fails the work a drained querier ran. Ray's calls are replaced by fakes."""

from __future__ import annotations

import pytest

from svclog.actors import querier_scaler
from svclog.config import load_config
from svclog.scheduler import Scheduler


class FakeRemote:
    def __init__(self, made: list):
        self.made = made

    def options(self, **options):
        self.made.append(options)
        return self

    def remote(self, cfg, name):
        return f"handle:{name}"


@pytest.fixture
def pool(monkeypatch):
    made, killed = [], []
    clock = [1000.0]
    monkeypatch.setattr(querier_scaler, "_remote_querier", lambda: FakeRemote(made))
    monkeypatch.setattr(querier_scaler.ray, "cluster_resources", lambda: {"CPU": 8.0, "svclog_read": 2.0})
    monkeypatch.setattr(querier_scaler.ray, "kill", lambda handle, no_restart: killed.append(handle))
    monkeypatch.setattr(
        querier_scaler, "querier_options", lambda i, cpus, slots: {"name": f"querier-{i}", "num_cpus": cpus}
    )
    monkeypatch.setattr(querier_scaler.time, "monotonic", lambda: clock[0])
    cfg = load_config(
        None,
        [
            "-ray.address=auto",
            "-ray.num-queriers=2",
            "-ray.max-queriers=4",
            "-querier.max-concurrent=2",
            "-ray.querier-scale-up-delay=0s",
            "-ray.querier-scale-down-delay=0s",
        ],
    )
    scheduler = Scheduler()
    p = querier_scaler.QuerierPool(cfg, scheduler)
    p.scaling._clock = lambda: clock[0]
    return p, scheduler, made, killed, clock


def test_scaling_needs_a_cluster_and_room_to_move():
    assert querier_scaler.scaling_enabled(load_config(None, ["-ray.address=auto", "-ray.max-queriers=4"]))
    assert not querier_scaler.scaling_enabled(load_config(None, ["-ray.max-queriers=4"]))  # local Ray
    assert not querier_scaler.scaling_enabled(load_config(None, ["-ray.address=auto"]))  # max 0: fixed


def test_grows_with_read_node_demand_then_drains_before_stopping(pool):
    p, scheduler, made, killed, clock = pool
    scheduler.enqueue_many("t", (), range(20))  # load 20 / 2 slots: wants 10, capped at 4
    p.tick()
    assert list(p.extras) == ["querier-2", "querier-3"]
    assert [o["resources"] for o in made] == [{"svclog_read": 0.001}] * 2  # demand only read nodes answer
    assert all("scheduling_strategy" not in o for o in made)
    # querier-3 takes a sub-query, then the queue empties: the pool wants 2 again
    scheduler.register_querier("querier-3", "pid-3")
    running = scheduler.next_for_querier("querier-3")
    for _ in range(19):
        scheduler.complete(scheduler.next_for_querier("querier-0").ticket)
    for _ in range(12):  # the 10 s look-back forgets the busy samples
        clock[0] += 1
        p.tick()
    # both drain; the idle one is stopped after the grace period, the busy one keeps running
    assert p.extras == {} and set(p.draining) == {"querier-3"}
    assert killed == ["handle:querier-2"]
    scheduler.enqueue_many("t", (), ["late"])
    assert scheduler.next_for_querier("querier-3") is None  # draining: no new work
    scheduler.complete(running.ticket)
    clock[0] += querier_scaler.DRAIN_GRACE_S
    released = p.tick()
    assert killed == ["handle:querier-2", "handle:querier-3"] and released.requeued == ()
    assert [e["event"] for e in p.events].count("stopped") == 2


def test_a_querier_busy_past_the_drain_timeout_is_stopped_and_its_work_queued_again(pool):
    p, scheduler, _, killed, clock = pool
    scheduler.enqueue_many("t", (), range(8))
    p.tick()
    scheduler.register_querier("querier-2", "pid")
    stuck = scheduler.next_for_querier("querier-2")
    while (a := scheduler.next_for_querier("querier-0")) is not None:
        scheduler.complete(a.ticket)
    for _ in range(12):
        clock[0] += 1
        p.tick()
    assert "querier-2" in p.draining and killed == ["handle:querier-3"]
    clock[0] += querier_scaler.DRAIN_TIMEOUT_S
    released = p.tick()
    assert released.requeued == (stuck.ticket,)
    assert scheduler.next_for_querier("querier-0").ticket == stuck.ticket
