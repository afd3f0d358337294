"""Ray host of the Compactor: a background thread runs a pass every `compaction_interval`;
the delete-request API and `run_once` are remote methods."""

from __future__ import annotations

import logging
import threading

import ray

from svclog.compactor import Compactor, CompactorSettings
from svclog.config import Config, limits_for, object_store_uri
from svclog.log_level import apply_level
from svclog.storage.objstore import ObjectStore

log = logging.getLogger(__name__)


def compactor_settings(cfg: Config) -> CompactorSettings:
    comp, ing = cfg.compactor, cfg.ingester
    return CompactorSettings(
        compaction_interval=comp.compaction_interval,
        retention_enabled=comp.retention_enabled,
        retention_delete_delay=comp.retention_delete_delay,
        delete_request_cancel_period=comp.delete_request_cancel_period,
        delete_max_interval=comp.delete_max_interval,
        chunk_target_size=ing.chunk_target_size,
        chunk_encoding=ing.chunk_encoding,
        chunk_block_size=ing.chunk_block_size,
    )


class CompactorActor:
    def __init__(self, cfg: Config, *, background: bool = True):
        apply_level(cfg.server.log_level)  # the configured level; a POSTed one arrives from the gateways
        self.cfg = cfg
        self.compactor = Compactor(
            ObjectStore(object_store_uri(cfg)),
            compactor_settings(cfg),
            limits_for=lambda tenant: limits_for(cfg, tenant),
        )
        self._stop = threading.Event()
        self._loop: threading.Thread | None = None
        if background:
            self._loop = threading.Thread(target=self._background, name="compactor-loop", daemon=True)
            self._loop.start()

    def _background(self) -> None:
        period = max(1.0, self.cfg.compactor.compaction_interval / 1e9)
        while not self._stop.wait(period):
            try:
                self.compactor.run_once()
            except Exception:
                log.exception("compactor background pass")

    # ------------------------------------------------------------ remote API

    def ready(self) -> bool:
        return True

    def set_log_level(self, level: str) -> str:
        return apply_level(level)

    def run_once(self) -> dict:
        return self.compactor.run_once()

    def last_report(self) -> dict | None:
        report = self.compactor.last_report
        return None if report is None else vars(report).copy()

    def create_delete_request(
        self, tenant: str, query: str | None, start: str | None, end: str | None, max_interval: str | None
    ) -> str:
        return self.compactor.create_delete_request(tenant, query, start, end, max_interval)

    def list_delete_requests(self, tenant: str) -> list[dict]:
        return self.compactor.list_delete_requests(tenant)

    def cancel_delete_request(self, tenant: str, request_id: str | None, force: bool) -> None:
        self.compactor.cancel_delete_request(tenant, request_id, force)

    def stop(self) -> None:
        self._stop.set()


RemoteCompactor = ray.remote(CompactorActor)
