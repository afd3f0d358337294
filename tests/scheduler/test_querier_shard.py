"""`max_queriers_per_tenant`: a tenant's sub-queries go only to a stable subset of the queriers."""

import collections

from svclog.scheduler import Scheduler, SchedulerSettings
from svclog.scheduler.querier_shard import QuerierShards, max_consumers, shard_for

QUERIERS = [f"querier-{i}" for i in range(6)]


def test_max_consumers_follows_the_reference_rule():
    assert max_consumers(0, 0.0, 10) == 0  # no limit
    assert max_consumers(3, 0.0, 10) == 3
    assert max_consumers(0, 0.25, 10) == 3  # capacity rounds up
    assert max_consumers(2, 0.5, 10) == 2  # the smaller one wins
    assert max_consumers(8, 0.5, 10) == 5


def test_a_shard_is_stable_sized_and_moves_little_when_a_querier_joins():
    shard = shard_for("heavy", QUERIERS, 2)
    assert shard is not None and len(shard) == 2 and shard <= set(QUERIERS)
    assert shard_for("heavy", list(reversed(QUERIERS)), 2) == shard  # order of discovery does not matter
    assert shard_for("heavy", QUERIERS, 0) is None and shard_for("heavy", QUERIERS, 6) is None  # all may serve
    grown = shard_for("heavy", [*QUERIERS, "querier-6"], 2)
    assert grown is not None and len(grown & shard) >= 1  # at most one member moved
    # different tenants land on different subsets (not every tenant on the same two queriers)
    assert len({shard_for(f"t{i}", QUERIERS, 2) for i in range(20)}) > 3


def test_shards_recompute_when_the_limit_or_the_queriers_change():
    limit = {"heavy": 2}
    shards = QuerierShards(lambda tenant, total: limit.get(tenant, 0))
    shards.set_queriers(QUERIERS)
    assert shards.allowed("light") is None
    first = shards.allowed("heavy")
    assert first is not None and len(first) == 2
    limit["heavy"] = 3
    assert len(shards.allowed("heavy") or ()) == 3
    shards.set_queriers(QUERIERS[:3])
    assert shards.allowed("heavy") is None  # no more queriers than the limit: all of them


def _drain(scheduler: Scheduler, queriers: list[str]) -> dict[str, collections.Counter]:
    """Hand out everything queued, querier by querier in turns; who ran which tenant's work."""
    ran: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    progress = True
    while progress:
        progress = False
        for q in queriers:
            got = scheduler.next_for_querier(q)
            if got is not None:
                ran[got.tenant][q] += 1
                scheduler.complete(got.ticket)
                progress = True
    return ran


def test_the_scheduler_hands_a_limited_tenant_only_to_its_shard():
    limits = {"heavy": 2}
    scheduler: Scheduler[str] = Scheduler(SchedulerSettings(), max_queriers=lambda t, n: limits.get(t, 0))
    for q in QUERIERS:
        scheduler.register_querier(q, "1")
    scheduler.enqueue_many("heavy", (), [f"h{i}" for i in range(60)])
    scheduler.enqueue_many("light", (), [f"l{i}" for i in range(60)])
    assert scheduler.restricts("heavy") and not scheduler.restricts("light")
    ran = _drain(scheduler, QUERIERS)
    assert sum(ran["heavy"].values()) == 60 and sum(ran["light"].values()) == 60  # nothing left behind
    shard = scheduler.querier_shard("heavy")
    assert shard is not None and set(ran["heavy"]) == shard and len(shard) == 2
    # the unlimited tenant runs on the others as well (the shard's turns alternate with heavy's)
    assert set(ran["light"]) >= set(QUERIERS) - shard


def test_a_querier_outside_the_shard_gets_other_work_or_none():
    scheduler: Scheduler[str] = Scheduler(SchedulerSettings(), max_queriers=lambda t, n: 1 if t == "heavy" else 0)
    for q in QUERIERS[:3]:
        scheduler.register_querier(q, "1")
    [member] = scheduler.querier_shard("heavy") or ()
    outsider = next(q for q in QUERIERS[:3] if q != member)
    scheduler.enqueue_many("heavy", (), ["h1", "h2"])
    assert scheduler.next_for_querier(outsider) is None  # heavy's work waits for its own querier
    scheduler.enqueue("light", (), "l1")
    got = scheduler.next_for_querier(outsider)
    assert got is not None and got.tenant == "light"  # light's turn is not blocked behind heavy's
    got = scheduler.next_for_querier(member)
    assert got is not None and got.item == "h1"


def test_a_member_that_shuts_down_or_leaves_hands_its_place_on():
    scheduler: Scheduler[str] = Scheduler(SchedulerSettings(), max_queriers=lambda t, n: 1 if t == "heavy" else 0)
    for q in QUERIERS[:3]:
        scheduler.register_querier(q, "1")
    [member] = scheduler.querier_shard("heavy") or ()
    scheduler.notify_shutdown(member)
    scheduler.enqueue("heavy", (), "h1")
    others = [q for q in QUERIERS[:3] if q != member]
    taken = [scheduler.next_for_querier(q) for q in others]
    assert [t.item for t in taken if t is not None] == ["h1"]  # one of the others took its place
    scheduler.forget_querier(member)
    assert member not in (scheduler.querier_shard("heavy") or set(others))


def test_multi_tenant_keys_take_the_strictest_tenant():
    from svclog.actors.scheduler_actor import tenant_queriers
    from svclog.config import load_config

    cfg = load_config(None, ["-frontend.max-queriers-per-tenant=3"])
    count = tenant_queriers(cfg)
    assert count("a", 10) == 3 and count("a|b", 10) == 3


def test_the_actor_wakes_the_shard_member_at_once_though_an_outsider_waited_first():
    """A tenant's work queued while only an outsider is first in line for the wake-up: the
    member parked behind it still gets it now, not after its dequeue's timeout."""
    import asyncio
    import time

    from svclog.actors.scheduler_actor import SchedulerActor
    from svclog.config import load_config

    async def scenario():
        actor = SchedulerActor(load_config(None, ["-frontend.max-queriers-per-tenant=1"]))
        for q in QUERIERS[:3]:
            actor.scheduler.register_querier(q, "")
        [member] = actor.scheduler.querier_shard("heavy") or ()
        order = sorted(QUERIERS[:3], key=lambda q: q == member)  # the member parks last
        waiters = {q: asyncio.create_task(actor.dequeue(q, timeout=5)) for q in order}
        await asyncio.sleep(0.05)
        began = time.monotonic()
        [ticket] = await actor.enqueue("heavy", [], ["h"])
        got = await asyncio.wait_for(waiters[member], 2)
        assert got.ticket == ticket and time.monotonic() - began < 1
        assert not any(w.done() for q, w in waiters.items() if q != member)  # the outsiders wait on
        for w in waiters.values():
            w.cancel()

    asyncio.run(scenario())


def test_direct_calls_avoid_the_queriers_of_busy_limited_tenants():
    from svclog.scheduler.querier_shard import preferred_queriers

    limits = {"heavy": 2, "narrow": 1}
    count = lambda tenant, total: limits.get(tenant, 0)  # noqa: E731
    heavy = shard_for("heavy", QUERIERS, 2)
    assert heavy is not None
    # nothing limited in flight: every querier
    assert preferred_queriers(QUERIERS, "light", [], count) == QUERIERS
    assert preferred_queriers(QUERIERS, "light", ["light", "other"], count) == QUERIERS
    # heavy busy: light's direct calls go elsewhere; heavy's own stay in its shard
    assert set(preferred_queriers(QUERIERS, "light", ["heavy"], count)) == set(QUERIERS) - heavy
    assert set(preferred_queriers(QUERIERS, "heavy", ["heavy"], count)) == heavy
    # a limited tenant whose whole shard is taken by others keeps its shard rather than nothing
    narrow = shard_for("narrow", QUERIERS, 1)
    assert narrow is not None
    assert preferred_queriers(QUERIERS, "narrow", ["x"], lambda t, n: 1 if t in ("narrow", "x") else 0) != []
    only = preferred_queriers(QUERIERS[:2], "narrow", ["heavy"], lambda t, n: 1 if t == "narrow" else 2)
    assert len(only) == 1
