"""Ray host of a Ruler: the rules API, the evaluation loop (a background thread), compat views.

Rule queries go to the querier actors as instant queries. Each ruler registers in the
ruler ring (a RingActor named `RULER_RING_NAME`, created by the launcher), heartbeats, and
evaluates only the groups the ring gives it; without that ring it evaluates all. Any ruler
answers the rules API (one shared store) and tells the others to reload a changed tenant;
`rulers()` hands the HTTP layer every healthy ruler so the compat views can be merged.
"""

from __future__ import annotations

import logging
import threading
import time

import ray

from svclog.actors.calls import Handles, fire
from svclog.actors.clients import RingClient
from svclog.actors.options import RULER_RING_NAME, querier_name
from svclog.actors.ring_member import RingMember
from svclog.actors.service_clients import Queriers
from svclog.config import Config, limits_for, object_store_uri, rules_dir
from svclog.config.paths import store_uri_for
from svclog.log_level import apply_level
from svclog.model import now_ns
from svclog.querier.request import RangeRequest
from svclog.ring.ring import Ring
from svclog.ruler.api import RuleLimits, RulesAPI
from svclog.ruler.delivery import RetryPolicy
from svclog.ruler.notifier import AlertmanagerNotifier
from svclog.ruler.protocols import Sample, vector_from_query_data
from svclog.ruler.remote_write import FanoutWriter, RemoteWriter
from svclog.ruler.ruler import Ruler, RulerSettings
from svclog.ruler.service import RulerService
from svclog.ruler.sharding import healthy_ring
from svclog.ruler.store import RuleStore
from svclog.storage.objstore import ObjectStore

log = logging.getLogger(__name__)
__all__ = ["RULER_RING_NAME", "RemoteRuler", "RulerActor"]
TICK_S = 0.5


class RayInstantQuerier:
    """InstantQuerier over the querier actors (round robin; the next one when one is missing,
    dead, restarting or does not answer in time)."""

    def __init__(self, num_queriers: int):
        self.queriers = Queriers([querier_name(i) for i in range(max(1, num_queriers))])

    def instant(self, tenant: str, query: str, at_ns: int) -> list[Sample]:
        request = RangeRequest(query, at_ns, at_ns, 0, None, 100, "backward", instant=True)
        return vector_from_query_data(self.queriers.call("query", [tenant], request))


def rule_store_uri(cfg: Config) -> str:
    kind = (cfg.ruler.storage.type or "").lower()
    if kind in ("s3", "gcs"):
        return store_uri_for(cfg.common, cfg.storage_config, kind)
    if kind == "local" or object_store_uri(cfg).startswith("/"):
        return rules_dir(cfg)
    return object_store_uri(cfg)  # the shared bucket; keys start with `rules/`


def ruler_settings(cfg: Config, instance_id: str) -> RulerSettings:
    r = cfg.ruler

    def tenants(text: str) -> frozenset[str]:
        return frozenset(t.strip() for t in text.split(",") if t.strip())

    return RulerSettings(
        instance_id=instance_id,
        evaluation_interval_ns=r.evaluation_interval,
        poll_interval_ns=r.poll_interval,
        resend_delay_ns=r.resend_delay,
        evaluation_delay_ns=cfg.limits_config.ruler_evaluation_delay_duration,
        external_labels=tuple(sorted((str(k), str(v)) for k, v in (r.external_labels or {}).items())),
        external_url=r.external_url,
        enabled_tenants=tenants(r.enabled_tenants),
        disabled_tenants=tenants(r.disabled_tenants),
    )


def _remote_writer(cfg: Config) -> FanoutWriter | None:
    rw = cfg.ruler.remote_write
    if not rw.enabled:
        return None
    clients = [rw.client, *(rw.clients or {}).values()]
    writers = []
    for client in clients:
        get = client.get if isinstance(client, dict) else lambda k, c=client: getattr(c, k, None)
        url = get("url")
        if url:
            timeout = get("remote_timeout") or 30_000_000_000
            timeout_s = timeout / 1e9 if isinstance(timeout, int) else 30.0
            writers.append(
                RemoteWriter(
                    str(url),
                    RetryPolicy(timeout_s=timeout_s),
                    dict(get("headers") or {}),
                    rw.add_org_id_header,
                    get("proxy_url") or "",
                )
            )
    return FanoutWriter(writers) if writers else None


class RulerActor(RulerService):
    def __init__(self, cfg: Config, instance_id: str = "ruler-0", num_queriers: int = 1, *, background: bool = True):
        apply_level(cfg.server.log_level)  # the configured level; a POSTed one arrives from the gateways
        self.cfg = cfg
        self.instance_id = instance_id
        store = RuleStore(ObjectStore(rule_store_uri(cfg)))
        settings = ruler_settings(cfg, instance_id)
        notifier = None
        if cfg.ruler.alertmanager_url:
            notifier = AlertmanagerNotifier(
                cfg.ruler.alertmanager_url,
                RetryPolicy(timeout_s=max(1.0, cfg.ruler.notification_timeout / 1e9)),
                settings.external_labels,
            )
        self._handles = Handles()
        self._ring_member = RingMember(RULER_RING_NAME, cfg.ruler.ring.num_tokens, self._handles)
        self._ring = RingClient(ttl=0.0, name=RULER_RING_NAME, handles=self._handles)
        self._in_ring = self._join_ring()
        ruler = Ruler(
            store, RayInstantQuerier(num_queriers), settings, notifier, _remote_writer(cfg), ring=self._ring_snapshot
        )
        super().__init__(RulesAPI(store, self._limits, on_change=self._changed), ruler, peers=self._peers)
        self._stop = threading.Event()
        self._loop: threading.Thread | None = None
        if background:
            self._loop = threading.Thread(target=self._background, name="ruler-loop", daemon=True)
            self._loop.start()

    # ------------------------------------------------------------ ring and loop

    def _join_ring(self) -> bool:
        if not self._ring_member.exists():
            return False  # a single ruler: it owns every group
        node = ray.get_runtime_context().get_node_id()
        # a ring that is away still counts: its heartbeats register this ruler when it answers
        self._ring_member.try_register(self.instance_id, self.instance_id, node)
        return True

    def _ring_snapshot(self) -> Ring | None:
        if not self._in_ring:
            return None
        return healthy_ring(self._ring.get())

    def _ruler_names(self) -> list[str]:
        ring = self._ring_snapshot()
        return [] if ring is None else sorted(m.address for m in ring.members.values())

    def _peers(self) -> list:
        """Handles of the healthy rulers in the ring (this one included); [] without a ring."""
        handles = []
        for name in self._ruler_names():
            try:
                handles.append(self._handles.get(name))
            except ValueError:
                log.warning("ruler ring member %s has no actor", name)
        return handles

    def _changed(self, tenant: str) -> None:
        """After an API write: reload here at once, and have the other rulers reload too."""
        self.ruler.sync(now_ns(), tenant)
        try:
            for name in self._ruler_names():
                if name != self.instance_id:  # fire and forget: they poll the store anyway
                    fire(self._handles.get(name).sync_tenant, tenant)
        except Exception as err:  # noqa: BLE001 - the write succeeded; peers catch up at their next poll
            log.warning("ruler: telling the other rulers about tenant %s failed: %s", tenant, err)

    def _limits(self, tenant: str) -> RuleLimits:
        limits = limits_for(self.cfg, tenant)
        return RuleLimits(limits.ruler_max_rules_per_rule_group, limits.ruler_max_rule_groups_per_tenant)

    def _background(self) -> None:
        heartbeat_s = max(1.0, self.cfg.ruler.ring.heartbeat_period / 1e9)
        last_beat = 0.0
        node = ray.get_runtime_context().get_node_id()
        while not self._stop.wait(TICK_S):
            try:
                if self._in_ring and time.monotonic() - last_beat >= heartbeat_s:
                    self._ring_member.heartbeat(self.instance_id, self.instance_id, node)
                    last_beat = time.monotonic()
                self.ruler.tick(now_ns())
            except Exception:
                log.exception("ruler evaluation loop")

    # ------------------------------------------------------------ remote API

    def ready(self) -> bool:
        return True

    def set_log_level(self, level: str) -> str:
        return apply_level(level)

    def evaluate_now(self) -> int:
        """Run one scheduler pass at once (tests, debugging)."""
        return self.ruler.tick(now_ns())

    def stop(self) -> None:
        self._stop.set()
        if self._in_ring:
            self._ring_member.leave(self.instance_id)


RemoteRuler = ray.remote(RulerActor)
