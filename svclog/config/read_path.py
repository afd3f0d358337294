"""Read-path sections: `querier`, `query_range`, `query_scheduler`, `frontend`, `frontend_worker`,
`index_gateway`."""
# The field helpers (duration, size, section, free, ...) return dataclasses.field(...).
# ruff: noqa: RUF009

from dataclasses import dataclass

from .fields import choice, duration, free, section, seq, size
from .ring import RingConfig


@dataclass(frozen=True)
class EngineConfig:
    max_look_back_period: int = duration("30s")
    max_count_min_sketch_heap_size: int = 10000


@dataclass(frozen=True)
class QuerierConfig:
    query_ingesters_within: int = duration("3h")
    tail_max_duration: int = duration("1h")
    extra_query_delay: int = duration("0s")
    engine: EngineConfig = section(EngineConfig)
    max_concurrent: int = 4
    query_store_only: bool = False
    query_ingester_only: bool = False
    multi_tenant_queries_enabled: bool = False
    per_request_limits_enabled: bool = False
    query_partition_ingesters: bool = False


@dataclass(frozen=True)
class ResultsCacheConfig:
    cache: dict = free()
    compression: str = choice("", "snappy")


@dataclass(frozen=True)
class QueryRangeConfig:
    align_queries_with_step: bool = False
    results_cache: ResultsCacheConfig = section(ResultsCacheConfig)
    cache_results: bool = False
    max_retries: int = 5
    parallelise_shardable_queries: bool = True
    shard_aggregations: tuple[str, ...] = seq()
    cache_index_stats_results: bool = True
    index_stats_results_cache: dict = free()
    cache_volume_results: bool = True
    volume_results_cache: dict = free()
    cache_instant_metric_results: bool = False
    instant_metric_results_cache: dict = free()
    instant_metric_query_split_align: bool = False
    cache_series_results: bool = True
    series_results_cache: dict = free()
    cache_label_results: bool = True
    label_results_cache: dict = free()


@dataclass(frozen=True)
class QuerySchedulerConfig:
    max_outstanding_requests_per_tenant: int = 32768
    max_queue_hierarchy_levels: int = 3
    querier_forget_delay: int = duration("0s")
    grpc_client_config: dict = free()
    use_scheduler_ring: bool = False
    scheduler_ring: RingConfig = section(RingConfig)


@dataclass(frozen=True)
class FrontendConfig:
    log_queries_longer_than: int = duration("0s")
    max_body_size: int = size(10485760)
    query_stats_enabled: bool = False
    max_outstanding_per_tenant: int = 2048
    querier_forget_delay: int = duration("0s")
    scheduler_address: str = ""
    scheduler_dns_lookup_period: int = duration("10s")
    scheduler_worker_concurrency: int = 5
    grpc_client_config: dict = free()
    graceful_shutdown_timeout: int = duration("5m")
    # svclog's own: small queries the frontend runs at once in its own process (limits_config.
    # local_query_max_bytes); one tenant takes one of them at a time, the rest go to the queriers
    local_query_slots: int = 2
    instance_interface_names: tuple[str, ...] = seq()
    instance_addr: str = ""
    instance_port: int = 0
    compress_responses: bool = True
    downstream_url: str = ""
    tail_proxy_url: str = ""
    tail_tls_config: dict = free()
    encoding: str = choice("json", "protobuf")


@dataclass(frozen=True)
class FrontendWorkerConfig:
    frontend_address: str = ""
    scheduler_address: str = ""
    dns_lookup_duration: int = duration("3s")
    parallelism: int = 10
    match_max_concurrent: bool = True
    id: str = ""
    grpc_client_config: dict = free()
    query_frontend_grpc_client: dict = free()
    query_scheduler_grpc_client: dict = free()


@dataclass(frozen=True)
class IndexGatewayConfig:
    mode: str = choice("simple", "ring")
    ring: RingConfig = section(RingConfig)
