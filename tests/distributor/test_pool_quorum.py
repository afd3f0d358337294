"""IngesterPool.push_many answers at quorum and leaves slower replicas to the background (Ray stubbed)."""

from __future__ import annotations

import time

import pytest

from svclog.actors import clients
from svclog.model import Labels, StreamColumns
from svclog.ring.ring import Ring


class Ref:
    def __init__(self, member, outcome):
        self.member, self.outcome = member, outcome  # "ok", "error" or "hang"


class Handle:
    def __init__(self, member, outcome):
        self.push_payload = type("M", (), {"remote": staticmethod(lambda payload: Ref(member, outcome))})


class FakeRay:
    def __init__(self):
        self.waits = 0

    def wait(self, refs, num_returns=1, timeout=None):
        self.waits += 1
        ready = [r for r in refs if r.outcome != "hang"][:num_returns]
        if not ready and timeout:
            time.sleep(min(timeout, 0.05))
        return ready, [r for r in refs if r not in ready]

    def get(self, ref, timeout=None):
        if ref.outcome == "error":
            raise OSError(f"{ref.member} down")


@pytest.fixture
def pool(monkeypatch):
    fake = FakeRay()
    monkeypatch.setattr(clients, "ray", fake)
    ring = Ring()
    for i in range(3):
        ring.register(f"i{i}", f"i{i}", node=f"n{i}")
    ring_client = type("R", (), {"get": lambda self: ring})()
    pool = clients.IngesterPool(ring_client, 3)
    watched = []
    pool.stragglers.watch = lambda tenant, pending: watched.extend(pending.values())
    return pool, watched


def _assign(pool, outcomes):
    pool._handles = {m: Handle(m, o) for m, o in outcomes.items()}
    stream = StreamColumns(Labels({"app": "a"}.items()), [1], ["x"])
    return {m: [stream] for m in outcomes}


def test_returns_at_quorum_without_waiting_for_a_hung_replica(pool):
    pool, watched = pool
    began = time.monotonic()
    errors = pool.push_many("t", _assign(pool, {"i0": "ok", "i1": "hang", "i2": "ok"}))
    assert time.monotonic() - began < 1
    assert errors == {"i0": None, "i2": None} and watched == ["i1"]


def test_fails_fast_once_quorum_is_impossible(pool):
    pool, watched = pool
    errors = pool.push_many("t", _assign(pool, {"i0": "error", "i1": "hang", "i2": "error"}))
    assert isinstance(errors["i0"], OSError) and isinstance(errors["i2"], OSError)
    assert "i1" not in errors and watched == ["i1"]


def test_times_out_replicas_that_never_answer(pool, monkeypatch):
    pool, watched = pool
    monkeypatch.setattr(clients, "PUSH_TIMEOUT_S", 0.1)
    errors = pool.push_many("t", _assign(pool, {"i0": "ok", "i1": "hang", "i2": "hang"}))
    assert errors["i0"] is None and isinstance(errors["i1"], TimeoutError) and watched == []
