"""The top-level `Config` in the reference's YAML shape, plus load-time resolution."""
# The field helpers (duration, size, section, free, ...) return dataclasses.field(...).
# ruff: noqa: RUF009

import dataclasses
from dataclasses import dataclass

from .backend import CompactorConfig, RulerConfig
from .errors import ConfigError
from .fields import free, section
from .limits import LimitsConfig
from .misc import (
    AnalyticsConfig,
    MemberlistConfig,
    RayConfig,
    RuntimeConfig,
    TracingConfig,
)
from .read_path import (
    FrontendConfig,
    FrontendWorkerConfig,
    IndexGatewayConfig,
    QuerierConfig,
    QueryRangeConfig,
    QuerySchedulerConfig,
)
from .server import ServerConfig
from .storage import (
    ChunkStoreConfig,
    CommonConfig,
    SchemaConfig,
    StorageConfig,
    TableManagerConfig,
)
from .write_path import (
    DistributorConfig,
    IngesterClientConfig,
    IngesterConfig,
    PatternIngesterConfig,
)

TARGETS = frozenset(
    {
        "all",
        "read",
        "write",
        "backend",
        "distributor",
        "ingester",
        "querier",
        "query-frontend",
        "query-scheduler",
        "ruler",
        "compactor",
        "index-gateway",
        "pattern-ingester",
    }
)


@dataclass(frozen=True)
class Config:
    target: str = "all"
    auth_enabled: bool = True
    ballast_bytes: int = 0
    server: ServerConfig = section(ServerConfig)
    distributor: DistributorConfig = section(DistributorConfig)
    querier: QuerierConfig = section(QuerierConfig)
    query_scheduler: QuerySchedulerConfig = section(QuerySchedulerConfig)
    frontend: FrontendConfig = section(FrontendConfig)
    query_range: QueryRangeConfig = section(QueryRangeConfig)
    ruler: RulerConfig = section(RulerConfig)
    ingester_client: IngesterClientConfig = section(IngesterClientConfig)
    ingester: IngesterConfig = section(IngesterConfig)
    pattern_ingester: PatternIngesterConfig = section(PatternIngesterConfig)
    index_gateway: IndexGatewayConfig = section(IndexGatewayConfig)
    storage_config: StorageConfig = section(StorageConfig)
    chunk_store_config: ChunkStoreConfig = section(ChunkStoreConfig)
    schema_config: SchemaConfig = section(SchemaConfig)
    compactor: CompactorConfig = section(CompactorConfig)
    limits_config: LimitsConfig = section(LimitsConfig)
    frontend_worker: FrontendWorkerConfig = section(FrontendWorkerConfig)
    table_manager: TableManagerConfig = section(TableManagerConfig)
    memberlist: MemberlistConfig = section(MemberlistConfig)
    runtime_config: RuntimeConfig = section(RuntimeConfig)
    tracing: TracingConfig = section(TracingConfig)
    analytics: AnalyticsConfig = section(AnalyticsConfig)
    common: CommonConfig = section(CommonConfig)
    ray: RayConfig = section(RayConfig)
    # Reference sections svclog accepts for compatibility but does not interpret.
    ui: dict = free()
    query_engine: dict = free()
    bloom_build: dict = free()
    bloom_gateway: dict = free()
    operational_config: dict = free()
    profiling: dict = free()
    kafka_config: dict = free()
    dataobj: dict = free()
    compactor_grpc_client: dict = free()
    block_builder: dict = free()
    block_scheduler: dict = free()

    def targets(self) -> frozenset[str]:
        return frozenset(t.strip() for t in self.target.split(","))


def resolve(cfg: Config) -> Config:
    """Validate cross-field rules and fill values that default from other sections."""
    unknown = sorted(t for t in cfg.targets() if t not in TARGETS)
    if unknown or not cfg.target.strip():
        raise ConfigError(
            f"invalid value for 'target': unknown target {', '.join(unknown) or repr('')}; "
            f"valid targets: {', '.join(sorted(TARGETS))}"
        )
    if not cfg.schema_config.configs:
        raise ConfigError("invalid value for 'schema_config.configs': at least one period is required")
    _check_positive(cfg)
    rf = replication_factor(cfg)
    ring = cfg.ingester.lifecycler.ring
    if ring.replication_factor is None:
        lifecycler = dataclasses.replace(cfg.ingester.lifecycler, ring=dataclasses.replace(ring, replication_factor=rf))
        cfg = dataclasses.replace(cfg, ingester=dataclasses.replace(cfg.ingester, lifecycler=lifecycler))
    if cfg.ray.num_ingesters is None:
        cfg = dataclasses.replace(cfg, ray=dataclasses.replace(cfg.ray, num_ingesters=max(1, rf)))
    return cfg


def replication_factor(cfg: Config) -> int:
    """The ingester ring's effective replication factor, the one accessor for it (distributor
    fan-out and quorum, ingester count, stream-limit share): `ingester.lifecycler.ring.
    replication_factor` (`-ingester.replication-factor`) when set, else `common.replication_factor`."""
    explicit = cfg.ingester.lifecycler.ring.replication_factor
    return explicit if explicit is not None else cfg.common.replication_factor


def _check_positive(cfg: Config) -> None:
    checks = {
        "common.replication_factor": cfg.common.replication_factor,
        "ingester.lifecycler.ring.replication_factor": replication_factor(cfg),
        "ray.num_queriers": cfg.ray.num_queriers,
        "querier.max_concurrent": cfg.querier.max_concurrent,
        "server.max_request_body_bytes": cfg.server.max_request_body_bytes,
        "server.max_decompressed_body_bytes": cfg.server.max_decompressed_body_bytes,
    }
    for path, value in checks.items():
        if value < 1:
            raise ConfigError(f"invalid value for '{path}': must be at least 1, got {value}")
    for path, port in (
        ("server.http_listen_port", cfg.server.http_listen_port),
        ("server.grpc_listen_port", cfg.server.grpc_listen_port),
    ):
        if not 0 <= port <= 65535:
            raise ConfigError(f"invalid value for '{path}': port out of range: {port}")
    if cfg.ray.num_ingesters is not None and cfg.ray.num_ingesters < 1:
        raise ConfigError(f"invalid value for 'ray.num_ingesters': must be at least 1, got {cfg.ray.num_ingesters}")
