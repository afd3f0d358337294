"""Backend sections: `ruler` and `compactor`."""
# The field helpers (duration, size, section, free, ...) return dataclasses.field(...).
# ruff: noqa: RUF009

from dataclasses import dataclass

from .fields import choice, duration, free, section, seq
from .ring import RingConfig


@dataclass(frozen=True)
class LocalRuleStore:
    directory: str = ""  # empty = <common.path_prefix>/rules (see paths.rules_dir)


@dataclass(frozen=True)
class RuleStoreConfig:
    type: str = choice("local", "s3", "gcs", "azure", "swift", "cos", "bos", "alibabacloud", "")
    local: LocalRuleStore = section(LocalRuleStore)
    s3: dict = free()
    gcs: dict = free()
    azure: dict = free()
    swift: dict = free()
    cos: dict = free()
    bos: dict = free()
    alibabacloud: dict = free()
    hedging: dict = free()


@dataclass(frozen=True)
class RemoteWriteClient:
    """One Prometheus remote-write target."""

    url: str = ""
    name: str = ""
    remote_timeout: int = duration("30s")
    headers: dict = free()
    basic_auth: dict = free()
    authorization: dict = free()
    oauth2: dict = free()
    sigv4: dict = free()
    tls_config: dict = free()
    proxy_url: str = ""
    follow_redirects: bool = True
    enable_http2: bool = True
    queue_config: dict = free()
    metadata_config: dict = free()
    write_relabel_configs: tuple[dict, ...] = seq()
    send_exemplars: bool = False
    send_native_histograms: bool = False


@dataclass(frozen=True)
class RemoteWriteConfig:
    enabled: bool = False
    client: RemoteWriteClient = section(RemoteWriteClient)
    clients: dict[str, RemoteWriteClient] = free()
    config_refresh_period: int = duration("10s")
    add_org_id_header: bool = True


@dataclass(frozen=True)
class RulerWALConfig:
    dir: str = "ruler-wal"
    truncate_frequency: int = duration("1h")
    min_age: int = duration("5m")
    max_age: int = duration("4h")


@dataclass(frozen=True)
class RulerConfig:
    external_url: str = ""
    datasource_uid: str = ""
    external_labels: dict = free()
    ruler_client: dict = free()
    evaluation_interval: int = duration("1m")
    poll_interval: int = duration("1m")
    storage: RuleStoreConfig = section(RuleStoreConfig)
    rule_path: str = ""  # empty = <common.path_prefix>/rules-temp
    alertmanager_url: str = ""
    enable_alertmanager_discovery: bool = False
    alertmanager_refresh_interval: int = duration("1m")
    enable_alertmanager_v2: bool = False
    alertmanager_client: dict = free()
    notification_queue_capacity: int = 10000
    notification_timeout: int = duration("10s")
    for_outage_tolerance: int = duration("1h")
    for_grace_period: int = duration("10m")
    resend_delay: int = duration("1m")
    enable_sharding: bool = False
    sharding_strategy: str = choice("default", "shuffle-sharding")
    sharding_algo: str = choice("by-group", "by-rule")
    search_pending_for: int = duration("5m")
    ring: RingConfig = section(RingConfig)
    flush_period: int = duration("1m")
    enable_api: bool = False
    enabled_tenants: str = ""
    disabled_tenants: str = ""
    query_stats_enabled: bool = False
    disable_rule_group_label: bool = False
    wal: RulerWALConfig = section(RulerWALConfig)
    wal_cleaner: dict = free()
    remote_write: RemoteWriteConfig = section(RemoteWriteConfig)
    evaluation: dict = free()


@dataclass(frozen=True)
class CompactorConfig:
    working_directory: str = ""  # empty = <common.path_prefix>/compactor
    compaction_interval: int = duration("10m")
    apply_retention_interval: int = duration("0s")
    retention_enabled: bool = False
    retention_delete_delay: int = duration("2h")
    retention_delete_worker_count: int = 150
    retention_table_timeout: int = duration("0s")
    retention_backoff_config: dict = free()
    delete_request_store: str = ""
    delete_request_store_key_prefix: str = "index/"
    delete_request_store_db_type: str = choice("boltdb", "sqlite")
    delete_batch_size: int = 70
    delete_request_cancel_period: int = duration("24h")
    delete_max_interval: int = duration("24h")
    max_compaction_parallelism: int = 1
    upload_parallelism: int = 10
    compactor_ring: RingConfig = section(RingConfig)
    run_once: bool = False
    tables_to_compact: int = 0
    skip_latest_n_tables: int = 0
    horizontal_scaling_mode: str = choice("disabled", "main", "worker")
    worker_config: dict = free()
    jobs_config: dict = free()
