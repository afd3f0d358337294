"""svclog configuration: frozen dataclasses in the reference's YAML shape.

`load_config` reads defaults, a YAML file and command-line overrides;
`config_to_yaml` prints the full config, its diffs or the defaults;
`limits_for` applies per-tenant runtime overrides.
"""

from .backend import CompactorConfig, RemoteWriteClient, RemoteWriteConfig, RulerConfig
from .errors import ConfigError
from .flags import FLAG_ALIASES, parse_cli
from .limits import LimitsConfig, RetentionStream, ShardStreams
from .loader import (
    config_to_yaml,
    default_config,
    expand_env_vars,
    limits_for,
    load_config,
)
from .misc import (
    AnalyticsConfig,
    MemberlistConfig,
    RayConfig,
    RuntimeConfig,
    TracingConfig,
)
from .paths import (
    compactor_dir,
    index_cache_dir,
    index_dir,
    object_store_uri,
    ruler_scratch_dir,
    rules_dir,
    wal_dir,
)
from .read_path import (
    FrontendConfig,
    IndexGatewayConfig,
    QuerierConfig,
    QueryRangeConfig,
    QuerySchedulerConfig,
)
from .ring import LifecyclerConfig, RingConfig
from .root import TARGETS, Config, replication_factor
from .server import ServerConfig
from .storage import CommonConfig, PeriodConfig, SchemaConfig, StorageConfig
from .write_path import IngesterConfig, PatternIngesterConfig, WALConfig

__all__ = [
    "FLAG_ALIASES",
    "TARGETS",
    "AnalyticsConfig",
    "CommonConfig",
    "CompactorConfig",
    "Config",
    "ConfigError",
    "FrontendConfig",
    "IndexGatewayConfig",
    "IngesterConfig",
    "LifecyclerConfig",
    "LimitsConfig",
    "MemberlistConfig",
    "PatternIngesterConfig",
    "PeriodConfig",
    "QuerierConfig",
    "QueryRangeConfig",
    "QuerySchedulerConfig",
    "RayConfig",
    "RemoteWriteClient",
    "RemoteWriteConfig",
    "RetentionStream",
    "RingConfig",
    "RulerConfig",
    "RuntimeConfig",
    "SchemaConfig",
    "ServerConfig",
    "ShardStreams",
    "StorageConfig",
    "TracingConfig",
    "WALConfig",
    "compactor_dir",
    "config_to_yaml",
    "default_config",
    "expand_env_vars",
    "index_cache_dir",
    "index_dir",
    "limits_for",
    "load_config",
    "object_store_uri",
    "parse_cli",
    "replication_factor",
    "ruler_scratch_dir",
    "rules_dir",
    "wal_dir",
]
