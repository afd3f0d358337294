"""Ray host of an IndexGateway, and the querier's index that asks the gateways.

Each gateway registers in the index-gateway ring (a RingActor named
`INDEX_GATEWAY_RING_NAME`, created by the launcher) with tokens and heartbeats. A querier's
`GatewayIndex` follows that ring from a background thread and sends each lookup to the
gateway owning the tenant (svclog/indexgateway/routing.py); with no healthy gateway, or
when none answers, it reads the index itself. Without the ring (e.g. `-target=all`) a
lookup costs one attribute read more than the plain IndexReader: no Ray call.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable

import ray

from svclog.actors.calls import Handles, call
from svclog.actors.clients import RingClient
from svclog.actors.options import INDEX_GATEWAY_RING_NAME
from svclog.actors.ring_member import RingMember
from svclog.config import Config, object_store_uri
from svclog.indexgateway.gateway import GatewaySettings, IndexGateway
from svclog.indexgateway.routing import gateways_for
from svclog.log_level import apply_level
from svclog.model import Labels, Matcher
from svclog.ring.ring import Ring
from svclog.storage.index import ChunkRef, IndexReader
from svclog.storage.objstore import ObjectStore

log = logging.getLogger(__name__)
__all__ = ["GatewayIndex", "IndexGatewayActor", "RemoteIndexGateway"]
LOOKUP_TIMEOUT_S = 60.0
RING_REFRESH_S = 2.0  # how stale a querier's view of the gateway ring may be
RING_PROBE_S = 5.0  # how often a querier without a gateway ring looks for one
WARN_EVERY_S = 60.0


class IndexGatewayActor:
    def __init__(self, cfg: Config, instance_id: str = "index-gateway-0", *, background: bool = True):
        apply_level(cfg.server.log_level)  # the configured level; a POSTed one arrives from the gateways
        self.cfg = cfg
        self.instance_id = instance_id
        self.gateway = IndexGateway(ObjectStore(object_store_uri(cfg)), GatewaySettings())
        self._node = ray.get_runtime_context().get_node_id()
        self._ring = RingMember(INDEX_GATEWAY_RING_NAME, cfg.index_gateway.ring.num_tokens)
        self._in_ring = self._join_ring()
        self._stop = threading.Event()
        if background:
            threading.Thread(target=self._heartbeats, name="indexgateway-heartbeat", daemon=True).start()

    def _join_ring(self) -> bool:
        if not self._ring.exists():
            return False  # not created (yet): the heartbeat loop keeps looking
        return self._ring.try_register(self.instance_id, self.instance_id, self._node)  # away: the loop joins later

    def _heartbeats(self) -> None:
        period_s = max(1.0, self.cfg.index_gateway.ring.heartbeat_period / 1e9)
        while not self._stop.wait(period_s):
            try:
                if not self._in_ring:
                    self._in_ring = self._join_ring()
                else:  # re-registers (same tokens: they derive from the id) with a ring that restarted
                    self._ring.heartbeat(self.instance_id, self.instance_id, self._node)
            except Exception:  # the ring restarts: try again next period
                log.warning("index gateway %s: heartbeat failed", self.instance_id, exc_info=True)
                self._in_ring = False

    # ------------------------------------------------------------ remote API

    def chunk_refs(
        self, tenant: str, matchers: tuple[Matcher, ...], start: int, end: int, shard: tuple[int, int] | None = None
    ) -> dict[Labels, list[ChunkRef]]:
        return self.gateway.chunk_refs(tenant, matchers, start, end, shard)

    def series(self, tenant: str, matchers: tuple[Matcher, ...], start: int, end: int) -> set[Labels]:
        return self.gateway.series(tenant, matchers, start, end)

    def stats(self) -> dict:
        return self.gateway.stats()

    def ready(self) -> bool:
        return True

    def set_log_level(self, level: str) -> str:
        return apply_level(level)

    def stop(self) -> None:
        self._stop.set()
        if self._in_ring:
            self._ring.leave(self.instance_id)


RemoteIndexGateway = ray.remote(IndexGatewayActor)


class GatewayIndex:
    """The querier's index reader: lookups go to the tenant's index gateway when the gateway ring
    has a healthy one, else (or when none answers) to `local`, the querier's own IndexReader."""

    def __init__(
        self, local: IndexReader, mode: str = "simple", replication_factor: int = 1, *, follow_ring: bool = True
    ):
        self.local = local
        self.mode = mode
        self.replication_factor = replication_factor
        self.ring: Ring | None = None  # replaced whole by the follower thread; read without a lock
        self.remote_lookups = 0
        self.local_lookups = 0
        self._handles = Handles()
        self._warned = float("-inf")
        if follow_ring:
            threading.Thread(target=self._follow_ring, name="indexgateway-ring", daemon=True).start()

    def _follow_ring(self) -> None:
        ring = RingClient(ttl=0.0, name=INDEX_GATEWAY_RING_NAME)
        while True:
            try:
                self.ring = ring.get()
                time.sleep(RING_REFRESH_S)
            except Exception:  # noqa: BLE001 - no gateway ring (ActorMissing), or it died: read locally
                self.ring = None
                time.sleep(RING_PROBE_S)

    def chunk_refs(
        self, tenant: str, matchers: Iterable[Matcher], start: int, end: int, shard: tuple[int, int] | None = None
    ) -> dict[Labels, list[ChunkRef]]:
        return self._lookup("chunk_refs", tenant, tuple(matchers), start, end, shard)

    def series(self, tenant: str, matchers: Iterable[Matcher], start: int, end: int) -> set[Labels]:
        return self._lookup("series", tenant, tuple(matchers), start, end)

    def _lookup(self, method: str, tenant: str, *args):
        ring = self.ring
        if ring is not None:
            for address in gateways_for(ring, tenant, self.mode, self.replication_factor):
                try:
                    answer = call(getattr(self._handle(address), method), tenant, *args, timeout=LOOKUP_TIMEOUT_S)
                except Exception as err:  # noqa: BLE001 - dead, restarting or failing: the next one, then locally
                    self._handles.drop(address)
                    self._warn(address, err)
                    continue
                self.remote_lookups += 1
                return answer
        self.local_lookups += 1
        return getattr(self.local, method)(tenant, *args)

    def _handle(self, address: str):
        return self._handles.get(address)

    def _warn(self, address: str, err: Exception) -> None:
        if time.monotonic() - self._warned >= WARN_EVERY_S:
            self._warned = time.monotonic()
            text = str(err).strip().splitlines()
            log.warning(
                "index gateway %s did not answer (%s): reading the index locally",
                address,
                text[0] if text else type(err).__name__,
            )

    def stats(self) -> dict:
        return {
            "remote_lookups": self.remote_lookups,
            "local_lookups": self.local_lookups,
            "gateways": sorted(m.address for m in self.ring.members.values()) if self.ring else [],
        }
