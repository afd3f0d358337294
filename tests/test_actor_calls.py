"""The Ray boundary's call helper and clients (svclog/actors/calls.py, ring_member.py, service_clients.py),
Ray-free: handles are stand-ins whose `.remote` returns a coroutine, errors are Ray's own classes."""

import asyncio

import pytest
from ray.exceptions import ActorUnavailableError, RayActorError, RayTaskError

from svclog.actors import calls
from svclog.actors.calls import ActorMissing, ActorUnavailable, CallTimeout, Handles, acall, translate
from svclog.actors.ring_member import RingMember
from svclog.actors.service_clients import Queriers, RulerClient
from svclog.model import LimitError, SvcError


class _Method:
    def __init__(self, fn, delay=0.0):
        self.fn, self.delay = fn, delay
        self.calls: list = []

    def remote(self, *args, **kwargs):
        self.calls.append((args, kwargs))

        async def run():
            await asyncio.sleep(self.delay)
            return self.fn(*args, **kwargs)

        return run()


class Handle:
    def __init__(self, **methods):
        self.__dict__.update(methods)


class _Fired:
    """A method that is sent, never awaited (heartbeats)."""

    def __init__(self):
        self.calls: list = []

    def remote(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return "ref"


def _raise(err):
    def fn(*args, **kwargs):
        raise err

    return fn


def test_a_remote_methods_own_error_comes_back_as_raised():
    wrapped = RayTaskError("select", "traceback", LimitError("too many streams"))
    assert isinstance(translate(wrapped, "select", 30), LimitError)


def test_dead_restarting_and_slow_actors_map_to_503_and_504():
    dead = translate(RayActorError(), "push", 30)
    restarting = translate(ActorUnavailableError("gone", None), "push", 30)
    slow = translate(TimeoutError(), "push", 30)
    assert isinstance(dead, ActorUnavailable) and dead.status == 503 and not dead.restarting
    assert isinstance(restarting, ActorUnavailable) and restarting.restarting
    assert isinstance(slow, CallTimeout) and slow.status == 504 and "30s" in str(slow)


def test_acall_applies_the_timeout():
    slow = Handle(ready=_Method(lambda: True, delay=1.0))
    with pytest.raises(CallTimeout):
        asyncio.run(acall(slow.ready, timeout=0.05))
    assert asyncio.run(acall(slow.ready, timeout=5)) is True


def test_a_missing_actor_is_a_503_and_a_value_error(monkeypatch):
    def missing(name):
        raise ValueError(f"no actor named {name!r}")

    monkeypatch.setattr(calls, "named_actor", missing)
    handles = Handles()
    with pytest.raises(ActorMissing) as err:
        handles.get("ruler")
    assert isinstance(err.value, ValueError) and isinstance(err.value, SvcError) and err.value.status == 503
    assert handles.find("ruler") is None


def test_ring_member_sends_keyword_arguments_and_its_token_count(monkeypatch):
    register, heartbeat = _Method(lambda **kw: None), _Fired()
    ring = Handle(register=register, heartbeat=heartbeat)
    handles = Handles()
    handles.put("ruler-ring", ring)
    monkeypatch.setattr(calls.ray, "get", lambda ref, timeout=None: asyncio.run(ref))
    member = RingMember("ruler-ring", num_tokens=64, handles=handles)
    member.register("r0", "r0", "node-a")
    member.heartbeat("r0", "r0", "node-a", tokens=(1, 2, 3))
    assert register.calls == [
        ((), {"member_id": "r0", "address": "r0", "node": "node-a", "num_tokens": 64, "tokens": ()})
    ]
    ((_, kwargs),) = heartbeat.calls
    assert kwargs["tokens"] == (1, 2, 3) and kwargs["num_tokens"] == 3 and kwargs["state"] is None


def test_queriers_fail_over_to_the_next_one(monkeypatch):
    dead = Handle(query=_Method(_raise(RayActorError())))
    alive = Handle(query=_Method(lambda tenants, request: {"result": tenants}))
    handles = Handles()
    handles.put("q0", dead)
    handles.put("q1", alive)
    monkeypatch.setattr(Queriers, "RETRY_PAUSE_S", 0.0)
    pool = Queriers(["q0", "q1"], handles)
    assert asyncio.run(pool.acall("query", ["t"], None)) == {"result": ["t"]}
    only_dead = Queriers(["q0"], handles)
    with pytest.raises(ActorUnavailable, match="no querier could answer"):
        asyncio.run(only_dead.acall("query", ["t"], None))


def test_a_querys_own_error_is_not_retried_elsewhere():
    failing = Handle(query=_Method(_raise(RayTaskError("query", "tb", LimitError("max series")))))
    handles = Handles()
    handles.put("q0", failing)
    handles.put("q1", failing)
    with pytest.raises(LimitError):
        asyncio.run(Queriers(["q0", "q1"], handles).acall("query", ["t"], None))
    assert len(failing.query.calls) == 1


def test_ruler_client_merges_from_every_ruler_the_first_names():
    other = Handle(compat_alerts=_Method(lambda tenant: "b"))
    first = Handle(compat_alerts=_Method(lambda tenant: "a"), rulers=_Method(lambda: [first_ref[0], other]))
    first_ref = [first]
    assert asyncio.run(RulerClient(first).on_all("compat_alerts", "t")) == ["a", "b"]
    assert asyncio.run(RulerClient([other]).on_all("compat_alerts", "t")) == ["b"]
