"""The querier's GatewayIndex: the tenant's gateway answers while one is healthy, else the querier reads.

Ray-free: gateway handles are stand-ins whose `.remote` answers at once (ray.get is the identity)."""

import pytest

from svclog.actors import indexgateway_actor
from svclog.actors.indexgateway_actor import GatewayIndex
from svclog.indexgateway.gateway import IndexGateway
from svclog.ring.ring import Ring
from svclog.storage.index import IndexReader
from tests.indexgateway.conftest import DAY


class _Method:
    def __init__(self, fn):
        self.fn = fn

    def remote(self, *args):
        return self.fn(*args)


class FakeHandle:
    def __init__(self, gateway: IndexGateway | None):
        self.gateway = gateway

    def __getattr__(self, name):
        if self.gateway is None:
            raise RuntimeError("actor died")
        return _Method(getattr(self.gateway, name))


@pytest.fixture(autouse=True)
def no_ray(monkeypatch):
    monkeypatch.setattr(indexgateway_actor.ray, "get", lambda ref, timeout=None: ref)


def _index(store, handles):
    index = GatewayIndex(IndexReader(store), follow_ring=False)
    ring = Ring()
    for name, handle in handles.items():
        ring.register(name, name, node=name, num_tokens=32)
        index._handles.put(name, handle)
    index.ring = ring if handles else None
    return index


def test_without_a_gateway_ring_lookups_are_local(store):
    index = _index(store, {})
    assert index.chunk_refs("t1", (), 0, 3 * DAY) == IndexReader(store).chunk_refs("t1", (), 0, 3 * DAY)
    assert index.stats() == {"remote_lookups": 0, "local_lookups": 1, "gateways": []}


def test_lookups_go_to_the_gateway(store):
    gateway = IndexGateway(store)
    index = _index(store, {"index-gateway-0": FakeHandle(gateway)})
    assert index.series("t1", (), 0, 3 * DAY) == IndexReader(store).series("t1", (), 0, 3 * DAY)
    index.chunk_refs("t2", (), 0, DAY, (0, 2))
    assert index.remote_lookups == 2 and index.local_lookups == 0
    assert gateway.stats()["lookups"] == {"chunk_refs": 1, "series": 1}


def test_a_dead_gateway_falls_over_to_the_next_then_to_a_local_read(store):
    alive = IndexGateway(store)
    index = _index(store, {"g-dead": FakeHandle(None), "g-alive": FakeHandle(alive)})
    expected = IndexReader(store).chunk_refs("t1", (), 0, 3 * DAY)
    for tenant in ("t1",) * 3:
        assert index.chunk_refs(tenant, (), 0, 3 * DAY) == expected
    assert index.remote_lookups == 3 and sum(alive.stats()["lookups"].values()) == 3
    index = _index(store, {"g-dead": FakeHandle(None)})
    assert index.chunk_refs("t1", (), 0, 3 * DAY) == expected
    assert (index.remote_lookups, index.local_lookups) == (0, 1)
