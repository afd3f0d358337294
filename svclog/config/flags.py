"""Command-line overrides: `-section.key-name=value` onto the raw YAML tree.

Generic flags map dots to nesting and dashes to underscores; `FLAG_ALIASES`
maps the reference's own flag names where they differ from the YAML path.
"""

import dataclasses
import typing
from collections.abc import Sequence
from typing import Any

import yaml

from .codec import fields_by_key, hints, unwrap_optional
from .errors import ConfigError

CONFIG_FILE = "config.file"
EXPAND_ENV = "config.expand-env"

FLAG_ALIASES: dict[str, str] = {
    "auth.enabled": "auth_enabled",
    "log.level": "server.log_level",
    "log.format": "server.log_format",
    "server.path-prefix": "server.http_path_prefix",
    "reporting.enabled": "analytics.reporting_enabled",
    "memberlist.join": "memberlist.join_members",
    "runtime-config.file": "runtime_config.file",
    "runtime-config.reload-period": "runtime_config.period",
    "ingester.token-file-path": "ingester.lifecycler.tokens_file_path",
    "ingester.tokens-file-path": "ingester.lifecycler.tokens_file_path",
    "ingester.wal-enabled": "ingester.wal.enabled",
    "ingester.wal-dir": "ingester.wal.dir",
    "ingester.checkpoint-duration": "ingester.wal.checkpoint_duration",
    "ingester.flush-on-shutdown": "ingester.wal.flush_on_shutdown",
    "ingester.wal-replay-memory-ceiling": "ingester.wal.replay_memory_ceiling",
    "ingester.chunks-idle-period": "ingester.chunk_idle_period",
    "ingester.chunks-block-size": "ingester.chunk_block_size",
    "ingester.replication-factor": "ingester.lifecycler.ring.replication_factor",
    "ingester.num-tokens": "ingester.lifecycler.num_tokens",
    "querier.engine.max-lookback-period": "querier.engine.max_look_back_period",
    "querier.max-outstanding-requests-per-tenant": "query_scheduler.max_outstanding_requests_per_tenant",
    "querier.compress-http-responses": "frontend.compress_responses",
    "querier.align-querier-with-step": "query_range.align_queries_with_step",
    "querier.parallelise-shardable-queries": "query_range.parallelise_shardable_queries",
    "querier.cache-results": "query_range.cache_results",
    "ruler.external.url": "ruler.external_url",
    "ruler.alertmanager-url": "ruler.alertmanager_url",
    "ruler.alertmanager-use-v2": "ruler.enable_alertmanager_v2",
    "ruler.remote-write.enabled": "ruler.remote_write.enabled",
    "index-gateway.mode": "index_gateway.mode",
    "boltdb.shipper.compactor.working-directory": "compactor.working_directory",
    "local.chunk-directory": "storage_config.filesystem.directory",
    "tsdb.shipper.active-index-directory": "storage_config.tsdb_shipper.active_index_directory",
    "tsdb.shipper.cache-location": "storage_config.tsdb_shipper.cache_location",
    "s3.url": "storage_config.aws.s3",
    "s3.buckets": "storage_config.aws.bucketnames",
    "s3.endpoint": "storage_config.aws.endpoint",
    "s3.region": "storage_config.aws.region",
    "s3.access-key-id": "storage_config.aws.access_key_id",
    "s3.secret-access-key": "storage_config.aws.secret_access_key",
    "s3.session-token": "storage_config.aws.session_token",
    "s3.insecure": "storage_config.aws.insecure",
    "s3.force-path-style": "storage_config.aws.s3forcepathstyle",
}

# The reference's flag names for limits_config keys.
_LIMIT_FLAGS = {
    "distributor.ingestion-rate-limit-strategy": "ingestion_rate_strategy",
    "distributor.ingestion-rate-limit-mb": "ingestion_rate_mb",
    "distributor.ingestion-burst-size-mb": "ingestion_burst_size_mb",
    "distributor.max-line-size": "max_line_size",
    "distributor.max-line-size-truncate": "max_line_size_truncate",
    "validation.max-length-label-name": "max_label_name_length",
    "validation.max-length-label-value": "max_label_value_length",
    "validation.max-label-names-per-series": "max_label_names_per_series",
    "validation.reject-old-samples": "reject_old_samples",
    "validation.reject-old-samples.max-age": "reject_old_samples_max_age",
    "validation.create-grace-period": "creation_grace_period",
    "validation.increment-duplicate-timestamps": "increment_duplicate_timestamp",
    "validation.discover-service-name": "discover_service_name",
    "validation.discover-log-levels": "discover_log_levels",
    "validation.allow-structured-metadata": "allow_structured_metadata",
    "validation.max-entries-limit": "max_entries_limit_per_query",
    "limits.max-structured-metadata-size": "max_structured_metadata_size",
    "limits.max-structured-metadata-entries-count": "max_structured_metadata_entries_count",
    "limits.block-ingestion-until": "block_ingestion_until",
    "limits.block-ingestion-status-code": "block_ingestion_status_code",
    "limits.volume-enabled": "volume_enabled",
    "limits.volume-max-series": "volume_max_series",
    "ingester.max-streams-per-user": "max_streams_per_user",
    "ingester.max-global-streams-per-user": "max_global_streams_per_user",
    "ingester.per-stream-rate-limit": "per_stream_rate_limit",
    "ingester.per-stream-rate-limit-burst": "per_stream_rate_limit_burst",
    "ingester.unordered-writes": "unordered_writes",
    "store.query-chunk-limit": "max_chunks_per_query",
    "store.max-query-length": "max_query_length",
    "store.cardinality-limit": "cardinality_limit",
    "store.retention": "retention_period",
    "querier.max-query-series": "max_query_series",
    "querier.max-query-lookback": "max_query_lookback",
    "querier.max-query-range": "max_query_range",
    "querier.max-query-parallelism": "max_query_parallelism",
    "querier.split-queries-by-interval": "split_queries_by_interval",
    "querier.split-metadata-queries-by-interval": "split_metadata_queries_by_interval",
    "querier.query-timeout": "query_timeout",
    "querier.max-concurrent-tail-requests": "max_concurrent_tail_requests",
    "frontend.max-cache-freshness": "max_cache_freshness_per_query",
    "frontend.max-queriers-per-tenant": "max_queriers_per_tenant",
    "frontend.min-sharding-lookback": "min_sharding_lookback",
    "compactor.deletion-mode": "deletion_mode",
}
FLAG_ALIASES.update({flag: f"limits_config.{key}" for flag, key in _LIMIT_FLAGS.items()})

_SECTION_ALIASES = {
    "limits": "limits_config",
    "storage": "storage_config",
    "schema": "schema_config",
    "runtime-config": "runtime_config",
    "chunk-store": "chunk_store_config",
}

_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def parse_cli(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """Pull `-config.file` / `--config.file` out of argv; return (path, remaining args)."""
    path: str | None = None
    rest: list[str] = []
    i = 0
    while i < len(argv):
        name, value = _split(argv[i])
        if name == CONFIG_FILE:
            if value is None:
                if i + 1 >= len(argv):
                    raise ConfigError("flag '-config.file' needs a value")
                i += 1
                value = argv[i]
            path = value
        else:
            rest.append(argv[i])
        i += 1
    return path, rest


def _split(arg: str) -> tuple[str | None, str | None]:
    if not arg.startswith("-") or arg in ("-", "--"):
        return None, None
    body = arg[2:] if arg.startswith("--") else arg[1:]
    name, sep, value = body.partition("=")
    return name, (value if sep else None)


@dataclasses.dataclass(frozen=True)
class FlagValues:
    config_file: str | None
    expand_env: bool | None
    overrides: list[tuple[list[str], Any]]  # YAML key path -> raw value


def parse_flags(args: Sequence[str], root: type) -> FlagValues:
    config_file = None
    expand_env = None
    overrides: list[tuple[list[str], Any]] = []
    i = 0
    while i < len(args):
        name, value = _split(args[i])
        if name is None:
            raise ConfigError(f"unexpected command-line argument {args[i]!r}")
        if name == CONFIG_FILE or name == EXPAND_ENV:
            tp: Any = str if name == CONFIG_FILE else bool
            keys = [name]
        else:
            keys, tp = resolve_flag(name, root)
        if value is None and tp is not bool:
            if i + 1 >= len(args):
                raise ConfigError(f"flag '-{name}' needs a value")
            i += 1
            value = args[i]
        raw = flag_value(name, tp, value)
        if name == CONFIG_FILE:
            config_file = raw
        elif name == EXPAND_ENV:
            expand_env = raw
        else:
            overrides.append((keys, raw))
        i += 1
    return FlagValues(config_file, expand_env, overrides)


def resolve_flag(name: str, root: type) -> tuple[list[str], Any]:
    """Flag name -> (YAML key path, leaf type); unknown flag -> ConfigError."""
    target = FLAG_ALIASES.get(name)
    if target is None:
        parts = name.split(".")
        parts[0] = _SECTION_ALIASES.get(parts[0], parts[0])
        target = ".".join(p.replace("-", "_") for p in parts)
    keys = target.split(".")
    cls: Any = root
    for depth, key in enumerate(keys):
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)) or key not in fields_by_key(cls):
            raise ConfigError(f"unknown flag '-{name}'")
        f = fields_by_key(cls)[key]
        cls, _ = unwrap_optional(hints(cls)[f.name])
        if depth == len(keys) - 1 and dataclasses.is_dataclass(cls):
            raise ConfigError(f"unknown flag '-{name}' ({target} is a section, not a value)")
    return keys, cls


def flag_value(name: str, tp: Any, text: str | None) -> Any:
    if tp is bool:
        if text is None or text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ConfigError(f"invalid value for flag '-{name}': expected bool, got {text!r}")
    assert text is not None
    if tp is int or tp is float:
        try:
            return tp(text)
        except ValueError:
            return text  # maybe a byte size or duration; the decoder reports type errors
    if tp is dict or typing.get_origin(tp) in (dict, tuple) and typing.get_args(tp)[0] is not str:
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise ConfigError(f"invalid value for flag '-{name}': {err}") from err
    return text


def apply_overrides(tree: dict, overrides: list[tuple[list[str], Any]]) -> dict:
    for keys, value in overrides:
        node = tree
        for key in keys[:-1]:
            child = node.get(key)
            if not isinstance(child, dict):
                child = node[key] = {}
            node = child
        node[keys[-1]] = value
    return tree
