"""Ray host of a Querier: reads the store and the ingesters, runs LogQL."""
from __future__ import annotations

import os

import ray

from svclog.actors.clients import IngesterPool, RingClient
from svclog.compactor import DeleteRequestStore, QueryTimeDeletes
from svclog.config import Config, object_store_uri
from svclog.querier.querier import Querier, QuerierSettings
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore


def querier_settings(cfg: Config) -> QuerierSettings:
    return QuerierSettings(
        query_ingesters_within=cfg.querier.query_ingesters_within,
        max_entries_limit_per_query=cfg.limits_config.max_entries_limit_per_query,
        max_query_series=cfg.limits_config.max_query_series,
    )


class QuerierActor:
    def __init__(self, cfg: Config):
        store = ObjectStore(object_store_uri(cfg))
        pool = IngesterPool(RingClient(), cfg.common.replication_factor)
        self.querier = Querier(IndexReader(store), ChunkStore(store), pool, querier_settings(cfg),
                               deletes=QueryTimeDeletes(DeleteRequestStore(store)))

    def ready(self) -> bool:
        return True

    def pid(self) -> int:
        return os.getpid()

    def query(self, tenants, request, queue_seconds: float = 0.0) -> dict:
        return self.querier.query(tenants, request, queue_seconds)

    def series(self, tenants, selectors, start, end) -> list[dict]:
        return self.querier.series(tenants, selectors, start, end)

    def index_stats(self, tenants, query, start, end) -> dict:
        return self.querier.index_stats(tenants, query, start, end)

    def volume(self, tenants, *args) -> dict:
        return self.querier.volume(tenants, *args)

    def label_names(self, tenants, start, end, query) -> list[str]:
        return self.querier.label_names(tenants, start, end, query)

    def label_values(self, tenants, name, start, end, query) -> list[str]:
        return self.querier.label_values(tenants, name, start, end, query)


RemoteQuerier = ray.remote(QuerierActor)
