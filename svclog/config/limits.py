"""`limits_config`: per-tenant ingestion, query and retention limits (overridable per tenant)."""
# The field helpers (duration, size, section, free, ...) return dataclasses.field(...).
# ruff: noqa: RUF009

from dataclasses import dataclass

from .fields import choice, duration, free, section, seq, size, timestamp

DEFAULT_SERVICE_NAME_LABELS = (
    "service",
    "app",
    "application",
    "app_name",
    "name",
    "app_kubernetes_io_name",
    "container",
    "container_name",
    "k8s_container_name",
    "component",
    "workload",
    "job",
    "k8s_job_name",
)
DEFAULT_LOG_LEVEL_FIELDS = (
    "level",
    "LEVEL",
    "Level",
    "log.level",
    "severity",
    "SEVERITY",
    "Severity",
    "SeverityText",
    "lvl",
    "LVL",
    "Lvl",
    "severity_text",
    "Severity_Text",
    "SEVERITY_TEXT",
)


@dataclass(frozen=True)
class RetentionStream:
    selector: str = ""
    priority: int = 0
    period: int = duration("0s", prom=True)


@dataclass(frozen=True)
class ShardStreams:
    enabled: bool = True
    time_sharding_enabled: bool = False
    time_sharding_ignore_recent: int = duration("40m")
    logging_enabled: bool = False
    desired_rate: int = size("1536KB")


@dataclass(frozen=True)
class LimitsConfig:
    # distributor / validation
    ingestion_rate_strategy: str = choice("global", "local")
    ingestion_rate_mb: float = 4.0
    ingestion_burst_size_mb: float = 6.0
    max_label_name_length: int = 1024
    max_label_value_length: int = 2048
    max_label_names_per_series: int = 15
    reject_old_samples: bool = True
    reject_old_samples_max_age: int = duration("1w", prom=True)
    creation_grace_period: int = duration("10m", prom=True)
    max_line_size: int = size("256KB")
    max_line_size_truncate: bool = False
    max_line_size_truncate_identifier: str = ""
    simulated_push_latency: int = duration("0s")
    enable_multi_variant_queries: bool = False
    discover_generic_fields: dict = free()
    increment_duplicate_timestamp: bool = False
    discover_service_name: tuple[str, ...] = seq(*DEFAULT_SERVICE_NAME_LABELS)
    discover_log_levels: bool = True
    log_level_fields: tuple[str, ...] = seq(*DEFAULT_LOG_LEVEL_FIELDS)
    log_level_from_json_max_depth: int = 2
    use_owned_stream_count: bool = False
    max_streams_per_user: int = 0
    max_global_streams_per_user: int = 5000
    unordered_writes: bool = True
    per_stream_rate_limit: int = size("3MB")
    per_stream_rate_limit_burst: int = size("15MB")
    allow_structured_metadata: bool = True
    max_structured_metadata_size: int = size("64KB")
    max_structured_metadata_entries_count: int = 128
    otlp_config: dict = free()
    block_ingestion_until: str | None = timestamp()
    block_ingestion_status_code: int = 260
    block_ingestion_policy_until: dict = free()
    enforced_labels: tuple[str, ...] = seq()
    policy_enforced_labels: dict = free()
    policy_stream_mapping: dict = free()
    ingestion_partitions_tenant_shard_size: int = 0
    shard_streams: ShardStreams = section(ShardStreams)
    # query path
    max_chunks_per_query: int = 2000000
    max_query_series: int = 500
    max_query_lookback: int = duration("0s", prom=True)
    max_query_length: int = duration("721h", prom=True)
    max_query_range: int = duration("0s", prom=True)
    max_query_parallelism: int = 32
    tsdb_max_query_parallelism: int = 128
    tsdb_max_bytes_per_shard: int = size("600MB")
    tsdb_sharding_strategy: str = choice("power_of_two", "bounded")
    tsdb_precompute_chunks: bool = False
    cardinality_limit: int = 100000
    max_streams_matchers_per_query: int = 1000
    max_concurrent_tail_requests: int = 10
    max_entries_limit_per_query: int = 5000
    max_cache_freshness_per_query: int = duration("10m", prom=True)
    max_metadata_cache_freshness: int = duration("1d", prom=True)
    max_stats_cache_freshness: int = duration("10m", prom=True)
    max_queriers_per_tenant: int = 0
    max_query_capacity: float = 0.0
    query_ready_index_num_days: int = 0
    query_timeout: int = duration("1m", prom=True)
    # svclog's own: bytes one (sub-)query may hold in a querier (selected lines, parsed labels,
    # samples, results) before it fails with a 400; sized so a querier's slots fit a small node
    max_query_memory_bytes: int = size("512MB")
    # svclog's own: a query whose selectors read at most this much (the index's and the ingesters'
    # sizes, known before any chunk is read) runs in the query frontend's process instead of
    # through the scheduler and a querier (svclog/frontend/local_lane.py); 0 sends every query there
    local_query_max_bytes: int = size("1MB")
    split_queries_by_interval: int = duration("1h", prom=True)
    split_metadata_queries_by_interval: int = duration("1d", prom=True)
    split_recent_metadata_queries_by_interval: int = duration("1h", prom=True)
    recent_metadata_query_window: int = duration("0s", prom=True)
    split_instant_metric_queries_by_interval: int = duration("1h", prom=True)
    engine_results_cache_time_bucket_interval: int = duration("1d", prom=True)
    split_ingester_queries_by_interval: int = duration("0s", prom=True)
    min_sharding_lookback: int = duration("0s", prom=True)
    max_query_bytes_read: int = size(0)
    max_querier_bytes_read: int = size("150GB")
    volume_enabled: bool = True
    volume_max_series: int = 1000
    blocked_queries: tuple[dict, ...] = seq()
    required_labels: tuple[str, ...] = seq()
    minimum_labels_number: int = 0
    shard_aggregations: tuple[str, ...] = seq()
    index_gateway_max_capacity: float = 1.0
    # ruler
    ruler_max_rules_per_rule_group: int = 0
    ruler_max_rule_groups_per_tenant: int = 0
    ruler_evaluation_delay_duration: int = duration("0s", prom=True)
    ruler_alertmanager_config: dict = free()
    ruler_remote_write_disabled: bool = False
    ruler_remote_write_config: dict = free()
    ruler_tenant_shard_size: int = 0
    ruler_enable_wal_replay: bool = True
    ruler_remote_evaluation_timeout: int = duration("0s")
    ruler_remote_evaluation_max_response_size: int = 0
    # retention and deletes
    retention_period: int = duration("0s", prom=True)
    retention_stream: tuple[RetentionStream, ...] = seq()
    deletion_mode: str = choice("filter-and-delete", "disabled", "filter-only")
    allow_deletes: bool | None = None  # deprecated: use deletion_mode
    # pattern ingester
    pattern_persistence_enabled: bool = False
    metric_aggregation_enabled: bool = False
    pattern_ingester_tokenizable_json_fields_default: str = "log,message,msg,msg_,_msg,content"
    pattern_ingester_tokenizable_json_fields_append: str = ""
    pattern_ingester_tokenizable_json_fields_delete: str = ""
    # bloom filters (accepted; svclog builds no blooms)
    bloom_gateway_enable_filtering: bool = False
    bloom_creation_enabled: bool = False
    bloom_build_max_builders: int = 0
    bloom_build_task_max_retries: int = 3
    bloom_build_builder_response_timeout: int = duration("0s")
    bloom_planning_strategy: str = "split_keyspace_by_factor"
    bloom_split_series_keyspace_by: int = 256
    bloom_task_target_series_chunk_size: int = size("20GB")
    bloom_block_encoding: str = "none"
    bloom_prefetch_blocks: bool = False
    bloom_max_block_size: int = size("200MB")
    bloom_max_bloom_size: int = size("128MB")
    # legacy per-tenant override file (prefer runtime_config.file)
    per_tenant_override_config: str = ""
    per_tenant_override_period: int = duration("10s", prom=True)
    index_gateway_shard_size: int = 0

    def block_ingestion_until_ns(self) -> int | None:
        from svclog.model import parse_rfc3339

        return None if self.block_ingestion_until is None else parse_rfc3339(self.block_ingestion_until)
