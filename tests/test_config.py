"""svclog.config: defaults, YAML and flag loading, errors, YAML output, env expansion, tenant limits."""

import dataclasses
import os
import pickle
import time
from pathlib import Path

import pytest
import yaml

from svclog.config import (
    Config,
    ConfigError,
    config_to_yaml,
    default_config,
    limits_for,
    load_config,
    object_store_uri,
    parse_cli,
    replication_factor,
    wal_dir,
)

NS = 1_000_000_000
MINUTE = 60 * NS
HOUR = 60 * MINUTE
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def write(tmp_path: Path, text: str, name: str = "config.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# ---------------------------------------------------------------- defaults


def test_defaults() -> None:
    cfg = load_config()
    assert cfg.target == "all" and cfg.auth_enabled is True
    assert cfg.server.http_listen_address == "127.0.0.1"
    assert (cfg.server.http_listen_port, cfg.server.grpc_listen_port) == (3100, 9095)
    assert cfg.server.max_request_body_bytes == 64 * 1024**2
    assert cfg.server.max_decompressed_body_bytes == 256 * 1024**2
    assert cfg.common.path_prefix == "./data" and cfg.common.replication_factor == 1
    assert cfg.common.ring.kvstore.store == "inmemory"
    limits = cfg.limits_config
    assert limits.ingestion_rate_mb == 4.0 and limits.ingestion_burst_size_mb == 6.0
    assert limits.max_line_size == 256_000
    assert limits.reject_old_samples_max_age == 7 * 24 * HOUR
    assert limits.max_query_length == 721 * HOUR
    assert limits.query_timeout == MINUTE
    assert limits.block_ingestion_until is None and limits.block_ingestion_status_code == 260
    assert "service" in limits.discover_service_name
    assert cfg.ingester.chunk_idle_period == 30 * MINUTE
    assert cfg.ingester.chunk_target_size == 1_572_864
    assert cfg.ingester.chunk_encoding == "snappy"
    assert cfg.ingester.wal.enabled is True
    assert cfg.ingester.lifecycler.ring.replication_factor == 1
    assert cfg.querier.max_concurrent == 4 and cfg.querier.engine.max_look_back_period == 30 * NS
    assert cfg.query_scheduler.max_queue_hierarchy_levels == 3
    assert cfg.frontend.encoding == "json"
    assert cfg.ruler.storage.type == "local" and cfg.ruler.enable_api is False
    assert cfg.compactor.delete_request_cancel_period == 24 * HOUR
    assert cfg.pattern_ingester.enabled is False
    assert cfg.index_gateway.mode == "simple"
    assert cfg.ray.num_ingesters == 1 and cfg.ray.namespace == "svclog" and cfg.ray.address is None
    period = cfg.schema_config.configs[0]
    assert (period.store, period.object_store, period.schema) == ("tsdb", "filesystem", "v13")
    assert period.index.period == 24 * HOUR


def test_config_is_frozen_and_picklable() -> None:
    cfg = load_config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.server.http_listen_port = 1  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(cfg)) == cfg


def test_derived_paths(tmp_path: Path) -> None:
    cfg = load_config(args=[f"-common.path-prefix={tmp_path}"])
    assert object_store_uri(cfg) == str(tmp_path / "chunks")
    assert cfg.common.store_uri() == str(tmp_path / "chunks")
    assert wal_dir(cfg) == str(tmp_path / "wal")
    cfg = load_config(args=[f"-ingester.wal.dir={tmp_path}/w"])
    assert wal_dir(cfg) == str(tmp_path / "w")


def test_s3_store_uri(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
common:
  storage:
    s3: {bucketnames: logs, endpoint: "minio:9000", region: eu-west-1, insecure: true}
schema_config:
  configs:
    - {from: 2024-01-01, store: tsdb, object_store: s3, schema: v13, index: {prefix: i_, period: 24h}}
""",
    )
    uri = object_store_uri(load_config(path))
    assert uri.startswith("s3://logs?") and "endpoint_override=minio%3A9000" in uri and "scheme=http" in uri


# ---------------------------------------------------------------- YAML


def test_yaml_load(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
target: read,write
auth_enabled: false
server: {http_listen_port: 3200, log_level: debug}
common: {replication_factor: 3}
ingester:
  chunk_idle_period: 1h0m0s
  chunk_block_size: 512KB
  lifecycler: {tokens_file_path: /tmp/tokens}
limits_config:
  retention_period: 2w
  max_line_size: 1MiB
  block_ingestion_until: 2030-01-01T00:00:00Z
  retention_stream:
    - {selector: '{app="a"}', priority: 1, period: 24h}
ruler:
  remote_write:
    enabled: true
    clients:
      main: {url: "http://prom:9090/api/v1/write"}
schema_config:
  configs:
    - from: 2024-01-01
      store: tsdb
      object_store: filesystem
      schema: v13
      index: {prefix: index_, period: 24h}
""",
    )
    cfg = load_config(path)
    assert cfg.targets() == {"read", "write"}
    assert cfg.auth_enabled is False and cfg.server.http_listen_port == 3200
    assert cfg.ingester.chunk_idle_period == HOUR and cfg.ingester.chunk_block_size == 512_000
    assert cfg.ingester.lifecycler.tokens_file_path == "/tmp/tokens"
    assert cfg.ingester.lifecycler.ring.replication_factor == 3 and cfg.ray.num_ingesters == 3
    assert cfg.limits_config.retention_period == 14 * 24 * HOUR
    assert cfg.limits_config.max_line_size == 1024**2
    assert cfg.limits_config.block_ingestion_until == "2030-01-01T00:00:00Z"
    assert cfg.limits_config.block_ingestion_until_ns() == 1893456000 * NS
    assert cfg.limits_config.retention_stream[0].period == 24 * HOUR
    assert cfg.ruler.remote_write.clients["main"].url == "http://prom:9090/api/v1/write"
    assert cfg.schema_config.configs[0].from_ == "2024-01-01"


def test_empty_file_gives_defaults(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "")) == default_config()


@pytest.mark.parametrize("name", ["conformance.yaml", "minimal.yaml"])
def test_examples_load(name: str) -> None:
    cfg = load_config(str(EXAMPLES / name))
    assert cfg.common.path_prefix == "./data"


def test_conformance_example() -> None:
    cfg = load_config(str(EXAMPLES / "conformance.yaml"))
    limits = cfg.limits_config
    assert cfg.auth_enabled and cfg.querier.multi_tenant_queries_enabled
    assert limits.volume_enabled and limits.allow_structured_metadata and not limits.reject_old_samples
    assert limits.discover_service_name == ()
    assert limits.ingestion_rate_mb == 1024 and limits.per_stream_rate_limit == 512_000_000
    assert limits.max_entries_limit_per_query == 100_000 and limits.query_timeout == 5 * MINUTE
    assert cfg.ruler.enable_api and cfg.ruler.storage.type == "local"
    assert cfg.compactor.retention_enabled and cfg.compactor.delete_request_store == "filesystem"
    assert cfg.pattern_ingester.enabled


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "ingester: {chunk_idel_period: 1m}",
            "unknown key 'ingester.chunk_idel_period' (did you mean 'chunk_idle_period'?)",
        ),
        ("bogus: 1", "unknown key 'bogus'"),
        ("ingester: {wal: {enabeld: true}}", "unknown key 'ingester.wal.enabeld'"),
        ("schema_config: {configs: [{sotre: tsdb}]}", "unknown key 'schema_config.configs[0].sotre'"),
    ],
)
def test_unknown_keys(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, text))
    assert message in str(err.value)


@pytest.mark.parametrize(
    "text, message",
    [
        ("server: {http_listen_port: abc}", "'server.http_listen_port': expected int"),
        ("auth_enabled: 'yes'", "'auth_enabled': expected bool"),
        ("ingester: {chunk_idle_period: soon}", "'ingester.chunk_idle_period': expected a duration"),
        ("limits_config: {max_line_size: huge}", "'limits_config.max_line_size': expected a byte size"),
        ("limits_config: {ingestion_rate_mb: fast}", "'limits_config.ingestion_rate_mb': expected float"),
        ("limits_config: {discover_service_name: 3}", "'limits_config.discover_service_name': expected a list"),
        ("server: {log_level: loud}", "'server.log_level': 'loud' is not one of"),
        ("server: 5", "'server': expected a mapping"),
        ("target: everything", "unknown target everything"),
        ("limits_config: {block_ingestion_until: tomorrow}", "expected an RFC 3339 timestamp"),
    ],
)
def test_type_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, text))
    assert message in str(err.value)


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(str(tmp_path / "nope.yaml"))
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_config(write(tmp_path, "server: [unclosed"))
    with pytest.raises(ConfigError, match="mapping at the top level"):
        load_config(write(tmp_path, "- a list"))


# ---------------------------------------------------------------- flags


def test_flag_overrides_beat_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, "server: {http_listen_port: 3200}\nauth_enabled: false\n")
    cfg = load_config(
        path,
        [
            "-server.http-listen-port=3300",
            "-auth.enabled",
            "--target",
            "write",
            "-ingester.wal.enabled=false",
            "-common.path-prefix=/tmp/x",
            "-limits_config.max-line-size=1MB",
            "-ray.address=auto",
        ],
    )
    assert cfg.server.http_listen_port == 3300 and cfg.auth_enabled is True and cfg.target == "write"
    assert cfg.ingester.wal.enabled is False and cfg.common.path_prefix == "/tmp/x"
    assert cfg.limits_config.max_line_size == 1_000_000 and cfg.ray.address == "auto"


def test_flag_aliases() -> None:
    cfg = load_config(
        args=[
            "-log.level=debug",
            "-query-scheduler.max-queue-hierarchy-levels=4",
            "-ingester.token-file-path=/t",
            "-compactor.delete-request-cancel-period=1h",
            "-querier.multi-tenant-queries-enabled",
            "-ruler.enable-api=true",
            "-pattern-ingester.enabled",
            "-distributor.ingestion-rate-limit-mb=100",
            "-validation.reject-old-samples=false",
            "-limits.ingestion-burst-size-mb",
            "200",
            "-validation.discover-service-name=svc,app",
            "-store.retention=30d",
        ]
    )
    assert cfg.server.log_level == "debug"
    assert cfg.query_scheduler.max_queue_hierarchy_levels == 4
    assert cfg.ingester.lifecycler.tokens_file_path == "/t"
    assert cfg.compactor.delete_request_cancel_period == HOUR
    assert cfg.querier.multi_tenant_queries_enabled and cfg.ruler.enable_api and cfg.pattern_ingester.enabled
    limits = cfg.limits_config
    assert limits.ingestion_rate_mb == 100.0 and limits.ingestion_burst_size_mb == 200.0
    assert limits.reject_old_samples is False and limits.discover_service_name == ("svc", "app")
    assert limits.retention_period == 30 * 24 * HOUR


@pytest.mark.parametrize(
    "args, message",
    [
        (["-no.such-flag=1"], "unknown flag '-no.such-flag'"),
        (["-ingester.wal"], "unknown flag '-ingester.wal'"),
        (["-auth.enabled=maybe"], "flag '-auth.enabled': expected bool"),
        (["-server.http-listen-port=abc"], "'server.http_listen_port': expected int"),
        (["-server.http-listen-port"], "flag '-server.http-listen-port' needs a value"),
        (["stray"], "unexpected command-line argument"),
    ],
)
def test_flag_errors(args: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(args=args)
    assert message in str(err.value)


def test_parse_cli() -> None:
    assert parse_cli(["-config.file=a.yaml", "-target=read"]) == ("a.yaml", ["-target=read"])
    assert parse_cli(["--config.file", "b.yaml", "-x=1"]) == ("b.yaml", ["-x=1"])
    assert parse_cli(["-log.level=warn"]) == (None, ["-log.level=warn"])


def test_config_file_flag_in_args(tmp_path: Path) -> None:
    path = write(tmp_path, "server: {http_listen_port: 3201}\n")
    assert load_config(args=[f"-config.file={path}"]).server.http_listen_port == 3201


# ---------------------------------------------------------------- YAML output


def test_full_yaml_round_trip(tmp_path: Path) -> None:
    cfg = load_config(str(EXAMPLES / "conformance.yaml"), ["-ingester.chunk-idle-period=1h30m15s"])
    text = config_to_yaml(cfg)
    assert "chunk_idle_period: 1h30m15s" in text and "max_line_size: 256KB" in text
    assert load_config(write(tmp_path, text)) == cfg


def test_diffs_yaml(tmp_path: Path) -> None:
    assert config_to_yaml(default_config(), "diffs").strip() == "{}"
    cfg = load_config(args=["-server.http-listen-port=3200", "-limits.retention-period=2w", "-ray.num-queriers=5"])
    diffs = yaml.safe_load(config_to_yaml(cfg, "diffs"))
    assert diffs == {
        "server": {"http_listen_port": 3200},
        "limits_config": {"retention_period": "2w"},
        "ray": {"num_queriers": 5},
    }
    assert load_config(write(tmp_path, config_to_yaml(cfg, "diffs"))) == cfg


def test_defaults_yaml(tmp_path: Path) -> None:
    cfg = load_config(args=["-server.http-listen-port=3200"])
    text = config_to_yaml(cfg, "defaults")
    assert "http_listen_port: 3100" in text
    assert load_config(write(tmp_path, text)) == default_config()
    with pytest.raises(ConfigError):
        config_to_yaml(cfg, "everything")


# ---------------------------------------------------------------- env expansion


def test_env_expansion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SVCLOG_PORT", "3999")
    monkeypatch.delenv("SVCLOG_UNSET", raising=False)
    path = write(
        tmp_path, "server:\n  http_listen_port: ${SVCLOG_PORT}\ncommon:\n  path_prefix: ${SVCLOG_UNSET:-/var/svclog}\n"
    )
    cfg = load_config(path, expand_env=True)
    assert cfg.server.http_listen_port == 3999 and cfg.common.path_prefix == "/var/svclog"
    assert load_config(path, ["-config.expand-env=true"]) == cfg
    with pytest.raises(ConfigError, match="http_listen_port"):
        load_config(path)  # not expanded by default: the literal text is not an int


# ---------------------------------------------------------------- per-tenant limits


def test_limits_for(tmp_path: Path) -> None:
    overrides = write(
        tmp_path,
        """
overrides:
  tenant-a:
    ingestion_rate_mb: 50
    max_query_length: 12h
    shard_streams: {enabled: false}
""",
        "overrides.yaml",
    )
    path = write(tmp_path, f"runtime_config: {{file: {overrides}}}\nlimits_config: {{max_query_series: 42}}\n")
    cfg = load_config(path)
    a = limits_for(cfg, "tenant-a")
    assert a.ingestion_rate_mb == 50.0 and a.max_query_length == 12 * HOUR
    assert (
        a.shard_streams.enabled is False
        and a.shard_streams.desired_rate == cfg.limits_config.shard_streams.desired_rate
    )
    assert a.max_query_series == 42  # unset keys inherit limits_config, not the built-in defaults
    assert limits_for(cfg, "tenant-b") == cfg.limits_config
    assert limits_for(load_config(), "tenant-a") == load_config().limits_config


def test_limits_for_reloads_changed_file(tmp_path: Path) -> None:
    overrides = write(tmp_path, "overrides: {t: {max_query_series: 7}}\n", "overrides.yaml")
    cfg = load_config(args=[f"-runtime-config.file={overrides}", "-runtime-config.reload-period=0s"])
    assert limits_for(cfg, "t").max_query_series == 7
    Path(overrides).write_text("overrides: {t: {max_query_series: 8}}\n")
    future = time.time() + 5
    os.utime(overrides, (future, future))
    assert limits_for(cfg, "t").max_query_series == 8


def test_bad_overrides_fail_at_load(tmp_path: Path) -> None:
    overrides = write(tmp_path, "overrides: {t: {max_query_serie: 7}}\n", "overrides.yaml")
    with pytest.raises(ConfigError, match="unknown key 'overrides.t.max_query_serie'"):
        load_config(args=[f"-runtime-config.file={overrides}"])


def test_config_class_defaults_match_loader() -> None:
    assert dataclasses.replace(Config().ray, num_ingesters=1) == default_config().ray


# ---------------------------------------------------------------- replication factor


@pytest.mark.parametrize(
    ("yaml_text", "args", "expected"),
    [
        ("", (), 1),
        ("common: {replication_factor: 3}", (), 3),
        ("common: {replication_factor: 3}\ningester: {lifecycler: {ring: {replication_factor: 2}}}", (), 2),
        ("common: {replication_factor: 3}", ("-ingester.replication-factor=1",), 1),
        ("ingester: {lifecycler: {ring: {replication_factor: 2}}}", (), 2),
    ],
)
def test_ingester_replication_factor_wins_over_common(tmp_path: Path, yaml_text: str, args, expected) -> None:
    cfg = load_config(write(tmp_path, yaml_text or "{}"), args)
    assert replication_factor(cfg) == expected
    assert cfg.ingester.lifecycler.ring.replication_factor == expected
    assert cfg.ray.num_ingesters == expected


def test_printed_config_hides_store_secrets(tmp_path):
    """/config prints secrets as the reference does: `********` when set, the URL's password hidden."""
    path = tmp_path / "s3.yaml"
    path.write_text(
        "storage_config:\n  aws:\n    s3: s3://AKID:hunter2@us-east-1/bucket\n"
        "    access_key_id: AKID\n    secret_access_key: hunter2\n"
    )
    printed = config_to_yaml(load_config(str(path)))
    assert "hunter2" not in printed
    assert "secret_access_key: '********'" in printed and "session_token: ''" in printed
    assert "s3://AKID:********@us-east-1/bucket" in printed
    assert "access_key_id: AKID" in printed  # not a secret in the reference either
    assert "hunter2" not in config_to_yaml(load_config(str(path)), "diffs")


def test_prometheus_durations_print_as_prometheus_does():
    """model.Duration.String: weeks and years only when they divide exactly (30d1h, not 4w2d1h)."""
    from svclog.config.fields import format_duration

    day, hour = 86400 * 10**9, 3600 * 10**9
    assert [format_duration(ns, prom=True) for ns in (30 * day + hour, 28 * day, 365 * day, 0)] == [
        "30d1h",
        "4w",
        "1y",
        "0s",
    ]
    assert format_duration(1500 * 10**6 + 1, prom=True) == "1.500000001s"  # not whole ms: Go's spelling


def test_a_querier_caches_chunks_as_configured_else_as_the_references_default(tmp_path: Path) -> None:
    assert load_config().chunk_store_config.chunk_cache_bytes() == 100 << 20
    path = tmp_path / "c.yaml"
    path.write_text(
        "chunk_store_config:\n  chunk_cache_config:\n    embedded_cache:\n      enabled: true\n      max_size_mb: 10\n"
    )
    assert load_config(str(path)).chunk_store_config.chunk_cache_bytes() == 10 << 20
    path.write_text("chunk_store_config:\n  chunk_cache_config:\n    embedded_cache:\n      enabled: false\n")
    assert load_config(str(path)).chunk_store_config.chunk_cache_bytes() == 0
