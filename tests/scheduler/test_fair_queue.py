"""FairQueue: the 1/N shares of API.md's query fairness, proven on long deterministic runs."""

import random
from collections import Counter

import pytest

from svclog.scheduler import FairQueue, QueueDepthError, TooManyOutstandingRequests


def drain(queue: FairQueue, count: int) -> list:
    out = []
    for _ in range(count):
        taken = queue.dequeue()
        assert taken is not None
        out.append(taken)
    return out


def shares(taken, key) -> dict:
    counts = Counter(key(t) for t in taken)
    return {k: v / len(taken) for k, v in counts.items()}


def assert_within(actual: float, expected: float, who: object = "", tolerance: float = 0.10) -> None:
    assert abs(actual - expected) <= tolerance * expected, (who, actual, expected)


# ---------------------------------------------------------------- FIFO and bookkeeping


def test_fifo_within_one_queue_and_empty_is_none():
    queue = FairQueue()
    assert queue.dequeue() is None
    for i in range(5):
        queue.enqueue("t", (), i)
    assert [t.item for t in drain(queue, 5)] == [0, 1, 2, 3, 4]
    assert queue.dequeue() is None and len(queue) == 0 and queue.lengths() == {}


def test_dequeued_carries_tenant_and_path():
    queue = FairQueue()
    ticket = queue.enqueue("acme", ("org", "team-b", "bob"), "q")
    taken = queue.dequeue()
    assert (taken.ticket, taken.tenant, taken.path, taken.item) == (ticket, "acme", ("org", "team-b", "bob"), "q")


def test_remove_cancels_a_queued_ticket_anywhere():
    queue = FairQueue()
    a = queue.enqueue("t", ("x",), "a")
    b = queue.enqueue("t", ("x",), "b")
    c = queue.enqueue("t", (), "c")
    assert queue.remove(b) and not queue.remove(b) and b not in queue
    assert queue.remove(c)
    assert len(queue) == 1 and queue.queue_lengths("t") == {("x",): 1}
    assert queue.dequeue().ticket == a
    assert queue.dequeue() is None


def test_removing_the_last_item_deactivates_the_sub_queue():
    queue = FairQueue()
    gone = queue.enqueue("t", ("gone",), 0)
    for i in range(4):
        queue.enqueue("t", ("stay",), i)
    queue.remove(gone)
    assert [t.path for t in drain(queue, 4)] == [("stay",)] * 4


def test_length_metrics():
    queue = FairQueue()
    queue.enqueue_many("a", (), range(3))
    queue.enqueue_many("a", ("dash", "x"), range(2))
    queue.enqueue("b", ("explore",), 0)
    assert len(queue) == 6
    assert queue.lengths() == {"a": 5, "b": 1}
    assert queue.tenant_length("a") == 5 and queue.tenant_length("none") == 0
    assert queue.queue_lengths("a") == {(): 3, ("dash", "x"): 2}
    assert queue.queue_lengths("none") == {}


def test_order_is_deterministic():
    def run() -> list:
        rng = random.Random(7)
        queue = FairQueue()
        order = []
        for step in range(2000):
            if rng.random() < 0.6:
                queue.enqueue(rng.choice("abc"), tuple(rng.choice(["x", "y"]) for _ in range(rng.randint(0, 2))), step)
            elif (taken := queue.dequeue()) is not None:
                order.append(taken.item)
        return order

    assert run() == run()


# ---------------------------------------------------------------- fairness


def test_three_actors_two_flooding_one_light_each_get_a_third():
    """Two actors flood one tenant; a light actor keeps one request queued at a time."""
    queue = FairQueue()
    queue.enqueue_many("acme", ("flood-1",), range(10_000))
    queue.enqueue_many("acme", ("flood-2",), range(10_000))
    queue.enqueue("acme", ("light",), 0)
    taken = []
    for _ in range(9_000):
        item = queue.dequeue()
        taken.append(item)
        if item.path == ("light",):
            queue.enqueue("acme", ("light",), 0)  # its next request arrives once the last is answered
    for actor, share in shares(taken, lambda t: t.path[0]).items():
        assert_within(share, 1 / 3, actor)
    # and the shares hold in every window, not only on average
    for start in range(0, 9_000, 300):
        window = shares(taken[start : start + 300], lambda t: t.path[0])
        assert all(abs(s - 1 / 3) <= 0.1 / 3 for s in window.values()), window


def test_light_actor_is_served_within_one_round_per_request_ahead_of_it():
    """Random bursts from two flooders never push a light actor's request back more than a round."""
    rng = random.Random(42)
    queue = FairQueue(max_outstanding_per_tenant=1_000_000)  # the flooders outpace the dequeues
    waits, light_enqueued_at, limits = [], {}, {}
    served = Counter()
    for step in range(30_000):
        if rng.random() < 0.05:
            queue.enqueue_many("acme", (f"flood-{rng.randint(1, 2)}",), range(rng.randint(10, 100)))
        if rng.random() < 0.02:
            ticket = queue.enqueue("acme", ("light",), step)
            light_enqueued_at[ticket] = step
            limits[ticket] = 3 * len(light_enqueued_at)  # one round of three turns per request ahead
        taken = queue.dequeue()
        if taken is None:
            continue
        served[taken.path[0]] += 1
        if taken.path == ("light",):
            waits.append(step - light_enqueued_at.pop(taken.ticket))
            assert waits[-1] < limits.pop(taken.ticket)
    assert served["light"] > 400 and all(step >= 30_000 - 3 for step in light_enqueued_at.values())


def test_tenants_get_equal_shares_whatever_their_queue_sizes():
    queue = FairQueue()
    queue.enqueue_many("big", (), range(30_000))
    queue.enqueue_many("mid", ("a",), range(5_000))
    queue.enqueue_many("mid", ("b",), range(5_000))
    queue.enqueue_many("small", (), range(2_000))
    taken = drain(queue, 6_000)
    for tenant, share in shares(taken, lambda t: t.tenant).items():
        assert_within(share, 1 / 3, tenant)


def test_new_tenant_joins_the_rotation_immediately():
    queue = FairQueue()
    queue.enqueue_many("busy", (), range(1_000))
    drain(queue, 10)
    queue.enqueue("late", (), "x")
    assert "late" in [t.tenant for t in drain(queue, 2)]


def test_local_queue_counts_as_one_participant():
    queue = FairQueue()
    queue.enqueue_many("acme", (), range(5_000))  # no header: the tenant's local queue
    queue.enqueue_many("acme", ("grafana",), range(5_000))
    queue.enqueue_many("acme", ("logcli",), range(5_000))
    taken = drain(queue, 6_000)
    got = shares(taken, lambda t: t.path[:1])
    assert set(got) == {(), ("grafana",), ("logcli",)}
    for share in got.values():
        assert_within(share, 1 / 3)


def test_empty_local_queue_takes_no_turn():
    queue = FairQueue()
    queue.enqueue_many("acme", ("a",), range(1_000))
    queue.enqueue_many("acme", ("b",), range(1_000))
    taken = drain(queue, 1_000)
    for share in shares(taken, lambda t: t.path).values():
        assert_within(share, 1 / 2)


def test_shares_split_recursively_per_level():
    queue = FairQueue()
    queue.enqueue_many("acme", ("org", "team-a", "alice"), range(5_000))
    queue.enqueue_many("acme", ("org", "team-a", "bob"), range(5_000))
    queue.enqueue_many("acme", ("org", "team-b", "carol"), range(5_000))
    taken = drain(queue, 8_000)
    got = shares(taken, lambda t: t.path[-1])
    assert_within(got["alice"], 1 / 4)
    assert_within(got["bob"], 1 / 4)
    assert_within(got["carol"], 1 / 2)


def test_mixed_depths_under_one_tenant():
    queue = FairQueue()
    queue.enqueue_many("acme", (), range(5_000))
    queue.enqueue_many("acme", ("dashboards",), range(5_000))
    queue.enqueue_many("acme", ("explore", "carol"), range(5_000))
    queue.enqueue_many("acme", ("explore",), range(5_000))  # explore's own local queue
    taken = drain(queue, 9_000)
    got = shares(taken, lambda t: t.path)
    assert_within(got[()], 1 / 3)
    assert_within(got[("dashboards",)], 1 / 3)
    assert_within(got[("explore",)], 1 / 6)
    assert_within(got[("explore", "carol")], 1 / 6)


def test_strict_round_robin_order():
    queue = FairQueue()
    for actor in ("a", "b", "c"):
        queue.enqueue_many("t", (actor,), range(3))
    assert [t.path[0] for t in drain(queue, 9)] == list("abcabcabc")


# ---------------------------------------------------------------- limits


def test_hierarchy_depth_limit():
    queue = FairQueue(max_levels=2)
    queue.enqueue("t", ("a", "b"), 0)
    with pytest.raises(QueueDepthError):
        queue.enqueue("t", ("a", "b", "c"), 0)
    assert len(queue) == 1


def test_default_depth_is_three_levels():
    queue = FairQueue()
    queue.enqueue("t", ("org", "team-b", "bob"), 0)
    with pytest.raises(QueueDepthError):
        queue.enqueue("t", ("org", "team-b", "bob", "tab"), 0)


def test_zero_levels_puts_everything_in_the_local_queue():
    queue = FairQueue(max_levels=0)
    queue.enqueue("t", ("a", "b", "c", "d"), 0)
    assert queue.queue_lengths("t") == {(): 1}


def test_too_many_outstanding_requests_is_a_429():
    queue = FairQueue(max_outstanding_per_tenant=3)
    queue.enqueue_many("t", ("a",), range(2))
    queue.enqueue("t", (), 2)
    with pytest.raises(TooManyOutstandingRequests) as err:
        queue.enqueue("t", ("b",), 3)
    assert err.value.status == 429
    assert "too many outstanding requests" in str(err.value)
    assert queue.discarded == {"t": 1}
    queue.enqueue("other", (), 0)  # other tenants are unaffected
    queue.dequeue()
    queue.dequeue()
    queue.enqueue("t", ("b",), 3)  # room again once dequeued


def test_a_batch_is_refused_whole():
    queue = FairQueue(max_outstanding_per_tenant=5)
    queue.enqueue_many("t", (), range(3))
    with pytest.raises(TooManyOutstandingRequests):
        queue.enqueue_many("t", ("x",), range(3))
    assert queue.tenant_length("t") == 3 and queue.queue_lengths("t") == {(): 3}
    assert queue.enqueue_many("t", ("x",), []) == []


def test_empty_tenant_is_refused():
    with pytest.raises(ValueError):
        FairQueue().enqueue("", (), 0)


def test_requeue_goes_to_the_front_and_ignores_the_limit():
    queue = FairQueue(max_outstanding_per_tenant=2)
    queue.enqueue_many("t", ("a",), ["first", "second"])
    taken = queue.dequeue()
    queue.enqueue("t", ("a",), "third")
    queue.requeue(taken.ticket, taken.tenant, taken.path, taken.item)
    assert [t.item for t in drain(queue, 3)] == ["first", "second", "third"]


def test_random_operations_lose_and_duplicate_nothing():
    rng = random.Random(3)
    queue = FairQueue(max_outstanding_per_tenant=1_000_000)
    live: set[int] = set()
    for _ in range(20_000):
        roll = rng.random()
        if roll < 0.5:
            path = tuple(rng.choice("xyz") for _ in range(rng.randint(0, 3)))
            live.add(queue.enqueue(rng.choice(["a", "b", "c"]), path, None))
        elif roll < 0.6 and live:
            ticket = rng.choice(sorted(live))
            assert queue.remove(ticket)
            live.discard(ticket)
        elif (taken := queue.dequeue()) is not None:
            live.remove(taken.ticket)
        assert len(queue) == len(live) == sum(queue.lengths().values())
    while (taken := queue.dequeue()) is not None:
        live.remove(taken.ticket)
    assert not live and queue.lengths() == {}


# ---------------------------------------------------------------- per consumer group (querier node)


def _per_group(rotation, groups_of, steps: int) -> dict[str, Counter]:
    """Three flooding actor paths; consumers dequeue in `rotation` order, each in group `groups_of(c)`."""
    queue = FairQueue()
    for path in ("a", "b", "c"):
        queue.enqueue_many("acme", (path,), range(steps))
    got: dict[str, Counter] = {}
    for step in range(steps):
        consumer = rotation(step)
        taken = queue.dequeue(groups_of(consumer))
        got.setdefault(consumer, Counter())[taken.path[0]] += 1
    return got


def test_each_node_gets_equal_shares_whatever_order_the_nodes_dequeue_in():
    rng = random.Random(3)
    for rotation in (
        lambda step: f"n{step % 3}",  # nodes in lockstep: global turns would give n0 only "a"
        lambda step: rng.choice(["n0", "n0", "n1", "n2"]),
    ):  # n0 twice as busy, random order
        got = _per_group(rotation, lambda node: node, 3_000)
        for node, counts in got.items():
            assert set(counts) == {"a", "b", "c"}, (node, counts)
            assert max(counts.values()) - min(counts.values()) <= 1, (node, counts)  # one round apart at most


def test_one_group_for_all_is_the_global_round_robin_and_unfair_per_node():
    """Why the turns are per node: with one shared rotation, nodes dequeuing in lockstep each see one path."""
    got = _per_group(lambda step: f"n{step % 3}", lambda node: "", 300)
    assert sorted(len(counts) for counts in got.values()) == [1, 1, 1]


def test_a_node_joining_late_starts_fair_and_a_forgotten_one_leaves_no_turns():
    queue = FairQueue()
    for path in ("a", "b", "c"):
        queue.enqueue_many("acme", (path,), range(100))
    first = [queue.dequeue("n0").path[0] for _ in range(4)]
    late = [queue.dequeue("n1").path[0] for _ in range(3)]
    assert first == ["a", "b", "c", "a"] and sorted(late) == ["a", "b", "c"]
    queue.forget_group("n1")
    node = queue._root
    stack = [node]
    while stack:
        node = stack.pop()
        assert "n1" not in node.orders
        stack.extend(node.children.values())
    assert queue.dequeue("n0").path[0] == "b"  # n0's own turns went on where they were
