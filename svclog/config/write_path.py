"""Write-path sections: `distributor`, `ingester`, `ingester_client`, `pattern_ingester`."""
# The field helpers (duration, size, section, free, ...) return dataclasses.field(...).
# ruff: noqa: RUF009

from dataclasses import dataclass

from .fields import choice, duration, free, section, size
from .ring import LifecyclerConfig, RingConfig


@dataclass(frozen=True)
class DistributorConfig:
    ring: RingConfig = section(RingConfig)
    push_worker_count: int = 256
    rate_store: dict = free()
    write_failures_logging: dict = free()
    otlp_config: dict = free()
    tenant_topic: dict = free()
    kafka_writes_enabled: bool = False
    ingester_writes_enabled: bool = True
    ingest_limits_enabled: bool = False
    ingest_limits_dry_run_enabled: bool = False


@dataclass(frozen=True)
class WALConfig:
    enabled: bool = True
    dir: str = ""  # empty = <common.path_prefix>/wal (see paths.wal_dir)
    checkpoint_duration: int = duration("5m")
    flush_on_shutdown: bool = False
    replay_memory_ceiling: int = size("4GB")
    disk_full_threshold: float = 0.9


@dataclass(frozen=True)
class FlushBackoff:
    min_period: int = duration("10s")
    max_period: int = duration("1m")
    max_retries: int = 10


@dataclass(frozen=True)
class IngesterConfig:
    lifecycler: LifecyclerConfig = section(LifecyclerConfig)
    concurrent_flushes: int = 32
    flush_check_period: int = duration("30s")
    flush_op_backoff: FlushBackoff = section(FlushBackoff)
    flush_op_timeout: int = duration("10m")
    chunk_retain_period: int = duration("0s")
    chunk_idle_period: int = duration("30m")
    chunk_block_size: int = size(262144)
    chunk_target_size: int = size(1572864)
    chunk_encoding: str = choice("snappy", "none", "gzip", "lz4-64k", "lz4-256k", "lz4-1M", "lz4", "flate", "zstd")
    max_chunk_age: int = duration("2h")
    autoforget_unhealthy: bool = False
    sync_period: int = duration("1h")
    sync_min_utilization: float = 0.1
    max_returned_stream_errors: int = 10
    query_store_max_look_back_period: int = duration("0s")
    wal: WALConfig = section(WALConfig)
    index_shards: int = 32
    max_dropped_streams: int = 10
    shutdown_marker_path: str = ""
    owned_streams_check_interval: int = duration("30s")
    delegate_stream_limits_enabled: bool = False
    tailer: dict = free()
    kafka_ingestion: dict = free()


@dataclass(frozen=True)
class IngesterClientConfig:
    pool_config: dict = free()
    remote_timeout: int = duration("5s")
    grpc_client_config: dict = free()


@dataclass(frozen=True)
class PatternIngesterConfig:
    enabled: bool = False
    lifecycler: LifecyclerConfig = section(LifecyclerConfig)
    client_config: dict = free()
    concurrent_flushes: int = 32
    flush_check_period: int = duration("1m")
    max_clusters: int = 300
    max_eviction_ratio: float = 0.25
    metric_aggregation: dict = free()
    pattern_persistence: dict = free()
    tee_config: dict = free()
    connection_timeout: int = duration("2s")
    max_allowed_line_length: int = 3000
    retain_for: int = duration("3h")
    max_chunk_age: int = duration("1h")
    pattern_sample_interval: int = duration("10s")
    volume_threshold: float = 0.99
