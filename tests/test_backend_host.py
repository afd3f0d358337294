"""The backend host runs its parts with their own concurrency, and callers reach them by their names.

Ray-free: the host is a plain class; `call` is awaited on a test event loop as Ray would."""

from __future__ import annotations

import asyncio
import pickle
import threading
import time

import pytest
import ray

from svclog.actors import registry
from svclog.actors.backend_host import BackendHost, HostedPart
from svclog.actors.calls import call_cancelled
from svclog.config import load_config
from svclog.launch import backend_parts, hosts_backend


class Counter:
    """A blocking part whose state has no lock (like the ring): one thread may touch it."""

    def __init__(self, start: int):
        self.value = start
        self.threads: set[str] = set()

    def add(self, n: int) -> int:
        self.threads.add(threading.current_thread().name)
        value = self.value
        self.value = value + n
        return self.value

    def fail(self) -> None:
        raise KeyError("ticket 7")


class Waiter:
    """A coroutine part (like the scheduler): its calls park on the host's event loop."""

    def __init__(self):
        self.event = asyncio.Event()

    async def wait(self) -> str:
        await self.event.wait()
        return "woken"

    async def wake(self) -> None:
        self.event.set()


@pytest.fixture(autouse=True)
def _no_hosting_leaks():
    yield
    registry.hosting([])


def test_blocking_parts_run_in_their_own_pool_and_keep_their_errors():
    host = BackendHost([HostedPart("counter", Counter, (10,), threads=1)])

    async def run():
        values = await asyncio.gather(*(host.call("counter", "add", 1) for _ in range(50)))
        with pytest.raises(KeyError, match="ticket 7"):
            await host.call("counter", "fail")
        return values

    values = asyncio.run(run())
    assert sorted(values) == list(range(11, 61))  # one thread: no lost update
    assert host.roles() == ["counter"]
    assert host._parts["counter"].threads and all(name.startswith("counter") for name in host._parts["counter"].threads)


def test_coroutine_parts_share_the_event_loop():
    host = BackendHost([HostedPart("waiter", Waiter)])

    async def run():
        parked = asyncio.ensure_future(host.call("waiter", "wait"))
        await asyncio.sleep(0.01)
        assert not parked.done()
        await host.call("waiter", "wake")
        return await asyncio.wait_for(parked, 2)

    assert asyncio.run(run()) == "woken"


def test_an_unknown_role_is_a_clear_error():
    host = BackendHost([HostedPart("counter", Counter, (0,))])
    with pytest.raises(ValueError, match="runs no 'scheduler'"):
        asyncio.run(host.call("scheduler", "ready"))


def test_a_hosted_role_routes_method_calls_to_the_host_and_pickles():
    calls = []

    class FakeMethod:
        def __init__(self, name):
            self.name = name

        def remote(self, *args, **kwargs):
            calls.append((self.name, args, kwargs))
            return "ref"

    class FakeHost:
        call = FakeMethod("call")

    role = registry.HostedRole(FakeHost(), "scheduler")
    assert role.enqueue.remote("t", (), [1], deadline=5.0) == "ref"
    assert calls == [("call", ("scheduler", "enqueue", "t", (), [1]), {"deadline": 5.0})]
    with pytest.raises(AttributeError):
        role.__ray_ready__  # noqa: B018  dunder and private names are never remote methods
    assert pickle.loads(pickle.dumps(registry.HostedRole("host", "ring"))) == registry.HostedRole("host", "ring")


def test_a_part_looking_up_a_role_the_host_lacks_gets_value_error(monkeypatch):
    import ray

    def no_such_actor(name, namespace=None):
        raise ValueError(name)

    monkeypatch.setattr(ray, "get_actor", no_such_actor)
    registry.hosting(["ring", "compactor"])
    with pytest.raises(ValueError, match="ruler-ring"):
        registry.named_actor("ruler-ring")  # a single ruler then runs without its ring


def test_only_a_single_process_start_hosts_its_backend(tmp_path):
    cfg = load_config(None, [f"-common.path-prefix={tmp_path}"])
    assert hosts_backend(cfg)
    roles = [part.role for part in backend_parts(cfg, {"query-scheduler", "compactor", "ruler", "pattern-ingester"})]
    assert roles[0] == "ring" and "scheduler" in roles and "compactor" in roles and "ruler-0" in roles
    assert [p.threads for p in backend_parts(cfg, set())] == [1]  # the ring alone, single-threaded
    scaled = load_config(None, [f"-common.path-prefix={tmp_path}", "-target=querier"])
    assert not hosts_backend(scaled)
    two_rulers = load_config(None, [f"-common.path-prefix={tmp_path}", "-ray.num-rulers=2"])
    assert not hosts_backend(two_rulers)
    joined = load_config(None, [f"-common.path-prefix={tmp_path}", "-ray.address=auto"])
    assert not hosts_backend(joined)  # cluster.yaml's backend node type hosts the components


class Joiner:
    """A part whose construction calls the host it is built in (as an ingester joins the ring)."""

    def __init__(self, host_ready: threading.Event):
        assert host_ready.wait(5), "built before the host was up"
        self.saw_cancel: bool | None = None

    def push(self) -> str:
        return threading.current_thread().name

    @ray.method(concurrency_group="tail")
    def poll(self, release: threading.Event) -> str:
        release.wait(5)
        return threading.current_thread().name

    def select(self, started: threading.Event) -> None:
        started.set()
        deadline = time.monotonic() + 5
        while not call_cancelled() and time.monotonic() < deadline:
            time.sleep(0.01)
        self.saw_cancel = call_cancelled()


def test_a_deferred_part_is_built_after_the_host_and_its_groups_and_cancels_are_its_own():
    host_ready = threading.Event()
    part = HostedPart("ingester-0", Joiner, (host_ready,), threads=1, groups={"tail": 2}, deferred=True)
    host = BackendHost([HostedPart("counter", Counter, (0,)), part])
    assert host.roles() == ["counter", "ingester-0"]  # listed at once, built later
    host_ready.set()

    async def run():
        release = threading.Event()
        # a long poll runs in the tail group's threads: the part's own thread still takes a push
        poll = asyncio.ensure_future(host.call("ingester-0", "poll", release))
        pushed_by = await asyncio.wait_for(host.call("ingester-0", "push"), 5)
        release.set()
        polled_by = await asyncio.wait_for(poll, 5)
        # cancelling a call (ray.cancel of an async actor call) is what the part's method reads
        started = threading.Event()
        select = asyncio.ensure_future(host.call("ingester-0", "select", started))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 5)
        select.cancel()
        with pytest.raises(asyncio.CancelledError):
            await select
        return pushed_by, polled_by

    pushed_by, polled_by = asyncio.run(run())
    assert pushed_by.startswith("ingester-0_") and polled_by.startswith("ingester-0-tail")
    deadline = time.monotonic() + 5
    while host._parts["ingester-0"].saw_cancel is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert host._parts["ingester-0"].saw_cancel is True


def test_a_single_querier_start_hosts_its_querier_too(tmp_path):
    from svclog.launch import hosts_querier

    cfg = load_config(None, [f"-common.path-prefix={tmp_path}"])
    parts = backend_parts(cfg, {"query-scheduler", "querier", "ingester"})
    assert hosts_querier(cfg, {"querier"}) and parts[-1].role == "querier-0" and parts[-1].deferred
    assert "ingester-0" not in [p.role for p in parts]  # pushes keep a process (and a GIL) of their own
    two = load_config(None, [f"-common.path-prefix={tmp_path}", "-ray.num-queriers=2"])
    assert not hosts_querier(two, {"querier"})  # several queriers keep processes of their own
    assert [p.role for p in backend_parts(two, {"querier"})] == ["ring"]


def test_a_single_querier_start_runs_a_second_querier_in_the_ingesters_process(tmp_path):
    """The backend host's querier is one process (one core of Python at a time); the first ingester's
    process can pull sub-queries too (`ray.ingester_querier`), unless the queriers are actors."""
    from svclog.launch import ingester_querier

    off = load_config(None, [f"-common.path-prefix={tmp_path}"])
    assert ingester_querier(off, {"querier", "ingester"}) is None  # off by default: pushes keep their process
    cfg = load_config(None, [f"-common.path-prefix={tmp_path}", "-ray.ingester-querier=true"])
    assert ingester_querier(cfg, {"querier", "ingester", "query-scheduler"}) == "querier-1"
    assert ingester_querier(cfg, {"querier", "query-scheduler"}) is None  # no ingester in this start
    two = load_config(None, [f"-common.path-prefix={tmp_path}", "-ray.num-queriers=2", "-ray.ingester-querier=true"])
    assert ingester_querier(two, {"querier", "ingester"}) is None  # queriers of their own instead


def test_looking_up_a_role_while_the_host_restarts_is_a_missing_actor_not_an_error(monkeypatch):
    """A push during the backend host's restart looked the ring up and met Ray's ActorUnavailableError,
    which reached the client as a 500; it is the 503 of a missing actor, which shippers retry."""
    import ray
    from ray.exceptions import ActorUnavailableError

    from svclog.actors import calls

    class Host:
        class roles:  # noqa: N801 - a handle's method
            @staticmethod
            def remote():
                return "ref"

    def get_actor(name, namespace=None):
        if name == registry.BACKEND_HOST_NAME:
            return Host()
        raise ValueError(name)

    def restarting(ref, timeout=None):
        raise ActorUnavailableError(
            "The actor is temporarily unavailable: IOError: The actor is restarting.", b"\0" * 16
        )

    monkeypatch.setattr(registry, "_hosted_here", frozenset())
    monkeypatch.setattr(ray, "get_actor", get_actor)
    monkeypatch.setattr(ray, "get", restarting)
    with pytest.raises(calls.ActorMissing, match="backend host hosting it is unavailable") as caught:
        calls.lookup("ring")
    assert caught.value.status == 503
