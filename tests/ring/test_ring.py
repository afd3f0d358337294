import time

import pytest

from svclog.ring.ring import LEAVING, Ring, RingError, generate_tokens


def test_tokens_are_deterministic_per_member():
    assert generate_tokens("ingester-0", 64) == generate_tokens("ingester-0", 64)
    assert generate_tokens("ingester-0", 64) != generate_tokens("ingester-1", 64)


def test_replication_set_is_distinct_and_sized():
    ring = Ring()
    for i in range(5):
        ring.register(f"i{i}", f"i{i}", node=f"n{i}")
    for fp in range(0, 2**64, 2**58):
        owners = ring.replication_set(fp, 3)
        assert len({m.id for m in owners}) == 3


def test_replicas_spread_across_nodes_when_possible():
    ring = Ring()
    for i in range(6):
        ring.register(f"i{i}", f"i{i}", node=f"n{i % 3}")
    for fp in range(0, 2**64, 2**59):
        assert len({m.node for m in ring.replication_set(fp, 3)}) == 3


def test_small_ring_returns_what_it_has_and_empty_ring_errors():
    ring = Ring()
    with pytest.raises(RingError):
        ring.replication_set(1, 1)
    ring.register("only", "only")
    assert [m.id for m in ring.replication_set(123, 3)] == ["only"]


def test_ownership_is_balanced_roughly():
    ring = Ring()
    for i in range(3):
        ring.register(f"i{i}", f"i{i}", node=f"n{i}")
    counts = {}
    for fp in range(3000):
        owner = ring.replication_set(fp * 7919 * 2**40, 1)[0].id
        counts[owner] = counts.get(owner, 0) + 1
    assert min(counts.values()) > 600


def test_health_follows_heartbeats_and_state():
    ring = Ring(heartbeat_timeout_ns=10**9)
    member = ring.register("a", "a")
    assert ring.is_healthy(member)
    assert not ring.is_healthy(member, time.time_ns() + 2 * 10**9)
    ring.set_state("a", LEAVING)
    assert not ring.healthy_members()
    assert ring.forget("a") and not ring.members


def test_snapshot_round_trip():
    ring = Ring()
    ring.register("a", "addr-a", node="n1")
    copy = Ring.from_snapshot(ring.snapshot())
    assert copy.replication_set(42, 1)[0].address == "addr-a"


def test_ring_client_asks_again_while_the_ring_is_empty():
    """A start's first pushes follow /ready at once: the empty view fetched before the ingesters
    joined must not be kept for the cache's ttl (a push then got 503 "empty ring")."""
    from svclog.actors.clients import RingClient

    joined = Ring()
    joined.register("i0", "i0")
    answers = [Ring().snapshot(), joined.snapshot()]

    class Scripted(RingClient):
        def snapshot(self) -> dict:
            return answers.pop(0)

    client = Scripted(ttl=3600)
    assert client.get().empty
    assert [m.id for m in client.get().replication_set(1, 1)] == ["i0"]  # within the ttl, fetched anew
    assert not answers
    assert client.get() is client.get()  # a placed ring stays cached


def _scripted_client(views: list, ttl: float, stale_s: float, fetch_started, release):
    from svclog.actors.clients import RingClient

    class Scripted(RingClient):
        def snapshot(self) -> dict:
            fetch_started.set()
            release.wait(5)
            view = views.pop(0)
            if isinstance(view, Exception):
                raise view
            return view

    return Scripted(ttl=ttl, stale_s=stale_s)


def _ring_of(*ids: str) -> dict:
    ring = Ring()
    for member in ids:
        ring.register(member, member)
    return ring.snapshot()


def _ids(ring: Ring) -> list[str]:
    return sorted(ring.members)


def test_ring_client_hands_out_the_view_it_has_while_the_next_is_fetched():
    """The ring actor shares a process with the querier: a fetch made in line held up each request
    that found the view a second old. Past the ttl the view in hand is answered at once and the next
    one comes from a background fetch."""
    import threading

    started, release = threading.Event(), threading.Event()
    client = _scripted_client(
        [_ring_of("i0"), _ring_of("i0", "i1")], ttl=0.05, stale_s=60, fetch_started=started, release=release
    )
    release.set()
    assert _ids(client.get()) == ["i0"]  # the first view: fetched in line
    started.clear()
    release.clear()  # the ring actor is slow now
    time.sleep(0.1)
    began = time.monotonic()
    assert _ids(client.get()) == ["i0"]  # past the ttl: the old view, not a wait for the slow fetch
    assert time.monotonic() - began < 0.5
    assert started.wait(5)  # the next view is being fetched meanwhile
    release.set()
    deadline = time.monotonic() + 5
    while _ids(client.get()) != ["i0", "i1"] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _ids(client.get()) == ["i0", "i1"]


def test_ring_client_fetches_in_line_once_its_view_is_too_old_and_says_when_it_cannot():
    """A view is handed out for stale_s at most: past it (the ring actor gone), the caller waits for a
    fetch, and gets the error when there is none."""
    import threading

    started, release = threading.Event(), threading.Event()
    release.set()
    client = _scripted_client(
        [_ring_of("i0"), RuntimeError("ring actor gone"), RuntimeError("ring actor gone")],
        ttl=0.01,
        stale_s=0.2,
        fetch_started=started,
        release=release,
    )
    assert _ids(client.get()) == ["i0"]
    time.sleep(0.05)
    assert _ids(client.get()) == ["i0"]  # the background fetch fails; the view in hand still serves
    time.sleep(0.3)
    with pytest.raises(RuntimeError, match="ring actor gone"):
        client.get()


def test_ring_client_with_no_ttl_fetches_every_time():
    import threading

    started, release = threading.Event(), threading.Event()
    release.set()
    client = _scripted_client(
        [_ring_of("i0"), _ring_of("i1")], ttl=0.0, stale_s=60, fetch_started=started, release=release
    )
    assert _ids(client.get()) == ["i0"]
    assert _ids(client.get()) == ["i1"]
