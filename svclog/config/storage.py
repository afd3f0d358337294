"""Where data lives: `common`, `storage_config`, `schema_config`, `chunk_store_config`."""
# The field helpers (duration, size, section, free, ...) return dataclasses.field(...).
# ruff: noqa: RUF009

from dataclasses import dataclass

from .fields import choice, duration, free, renamed, section, seq
from .ring import RingConfig


@dataclass(frozen=True)
class FilesystemStorage:
    chunks_directory: str = ""
    rules_directory: str = ""


@dataclass(frozen=True)
class S3Storage:
    s3: str = ""
    s3forcepathstyle: bool = False
    bucketnames: str = ""
    endpoint: str = ""
    region: str = ""
    access_key_id: str = ""
    secret_access_key: str = ""
    session_token: str = ""
    insecure: bool = False
    disable_dualstack: bool = False
    signature_version: str = "v4"
    storage_class: str = "STANDARD"
    http_config: dict = free()
    sse: dict = free()
    backoff_config: dict = free()


@dataclass(frozen=True)
class GCSStorage:
    bucket_name: str = ""
    service_account: str = ""
    chunk_buffer_size: int = 0
    request_timeout: int = duration("0s")
    enable_opencensus: bool = True
    enable_http2: bool = True
    enable_retries: bool = True


@dataclass(frozen=True)
class CommonStorage:
    filesystem: FilesystemStorage = section(FilesystemStorage)
    s3: S3Storage = section(S3Storage)
    gcs: GCSStorage = section(GCSStorage)
    azure: dict = free()
    swift: dict = free()
    bos: dict = free()
    cos: dict = free()
    alibabacloud: dict = free()
    hedging: dict = free()
    congestion_control: dict = free()
    object_store: dict = free()


@dataclass(frozen=True)
class CommonConfig:
    path_prefix: str = "./data"
    storage: CommonStorage = section(CommonStorage)
    persist_tokens: bool = False
    replication_factor: int = 1
    ring: RingConfig = section(RingConfig)
    instance_interface_names: tuple[str, ...] = seq()
    instance_addr: str = ""
    compactor_address: str = ""
    compactor_grpc_address: str = ""

    def store_uri(self) -> str:
        """pyarrow.fs location of the object store (see `object_store_uri`)."""
        from .paths import store_uri_for

        return store_uri_for(self)


@dataclass(frozen=True)
class FilesystemStoreConfig:
    directory: str = ""


@dataclass(frozen=True)
class ShipperConfig:
    """`tsdb_shipper` / `boltdb_shipper`; empty directories derive from `common.path_prefix`."""

    active_index_directory: str = ""
    shared_store: str = ""
    cache_location: str = ""
    cache_ttl: int = duration("24h")
    resync_interval: int = duration("5m")
    query_ready_num_days: int = 0
    index_gateway_client: dict = free()
    build_per_tenant_index: bool = False
    ingesterdbretainperiod: int = duration("0s")
    enable_postings_cache: bool = False


@dataclass(frozen=True)
class StorageConfig:
    filesystem: FilesystemStoreConfig = section(FilesystemStoreConfig)
    tsdb_shipper: ShipperConfig = section(ShipperConfig)
    boltdb_shipper: ShipperConfig = section(ShipperConfig)
    aws: S3Storage = section(S3Storage)
    gcs: GCSStorage = section(GCSStorage)
    azure: dict = free()
    bos: dict = free()
    swift: dict = free()
    cos: dict = free()
    alibabacloud: dict = free()
    bigtable: dict = free()
    cassandra: dict = free()
    grpc_store: dict = free()
    named_stores: dict = free()
    object_store: dict = free()
    hedging: dict = free()
    congestion_control: dict = free()
    index_queries_cache_config: dict = free()
    use_thanos_objstore: bool = False
    disable_broad_index_queries: bool = False
    max_parallel_get_chunk: int = 150
    max_chunk_batch_size: int = 50
    index_cache_validity: int = duration("5m")


@dataclass(frozen=True)
class PeriodicTable:
    prefix: str = ""
    period: int = duration("0s")
    tags: dict = free()


@dataclass(frozen=True)
class PeriodConfig:
    from_: str = renamed("2020-10-24", "from")
    store: str = choice(
        "tsdb",
        "boltdb-shipper",
        "boltdb",
        "aws",
        "aws-dynamo",
        "gcp",
        "gcp-columnkey",
        "bigtable",
        "bigtable-hashed",
        "cassandra",
        "grpc-store",
    )
    object_store: str = "filesystem"
    schema: str = "v13"
    index: PeriodicTable = section(PeriodicTable)
    chunks: PeriodicTable = section(PeriodicTable)
    row_shards: int = 16


DEFAULT_PERIOD = PeriodConfig(index=PeriodicTable(prefix="index_", period=24 * 3600 * 10**9))


@dataclass(frozen=True)
class SchemaConfig:
    configs: tuple[PeriodConfig, ...] = seq(DEFAULT_PERIOD)


# A querier's chunk cache when the configuration names none: the reference's default embedded
# cache (enabled, 100 MB). It earns its keep on a filesystem store too: at 1M bench lines the
# 8-client phase answered 16.4-17.0 q/s with a 64 MB cache and 14.1 without (file reads and
# their Python per chunk and query), for ~55 MB more at the peak.
DEFAULT_CHUNK_CACHE_MB = 100


@dataclass(frozen=True)
class ChunkStoreConfig:
    chunk_cache_config: dict = free()
    chunk_cache_config_l2: dict = free()
    write_dedupe_cache_config: dict = free()
    l2_chunk_cache_handoff: int = duration("0s")
    cache_lookups_older_than: int = duration("0s")

    def chunk_cache_bytes(self) -> int:
        """Bytes of chunk files a querier keeps: the `embedded_cache` the reference's config names
        (`enabled`, `max_size_mb`), by default enabled with DEFAULT_CHUNK_CACHE_MB."""
        embedded = self.chunk_cache_config.get("embedded_cache")
        embedded = embedded if isinstance(embedded, dict) else {}
        if not embedded.get("enabled", True):
            return 0
        return int(float(embedded.get("max_size_mb", DEFAULT_CHUNK_CACHE_MB)) * (1 << 20))


@dataclass(frozen=True)
class TableManagerConfig:
    throughput_updates_disabled: bool = False
    retention_deletes_enabled: bool = False
    retention_period: int = duration("0s")
    poll_interval: int = duration("2m")
    creation_grace_period: int = duration("10m")
    index_tables_provisioning: dict = free()
    chunk_tables_provisioning: dict = free()
