"""Small sections: `memberlist`, `analytics`, `tracing`, `runtime_config`, and our `ray` block."""
# The field helpers (duration, size, section, free, ...) return dataclasses.field(...).

from dataclasses import dataclass, field

from .fields import BYTES, duration, seq


@dataclass(frozen=True)
class MemberlistConfig:
    node_name: str = ""
    randomize_node_name: bool = True
    stream_timeout: int = duration("2s")
    retransmit_factor: int = 4
    pull_push_interval: int = duration("30s")
    gossip_interval: int = duration("200ms")
    gossip_nodes: int = 3
    gossip_to_dead_nodes_time: int = duration("30s")
    dead_node_reclaim_time: int = duration("0s")
    compression_enabled: bool = True
    advertise_addr: str = ""
    advertise_port: int = 7946
    cluster_label: str = ""
    cluster_label_verification_disabled: bool = False
    join_members: tuple[str, ...] = seq()
    min_join_backoff: int = duration("1s")
    max_join_backoff: int = duration("1m")
    max_join_retries: int = 10
    abort_if_cluster_join_fails: bool = False
    rejoin_interval: int = duration("0s")
    left_ingesters_timeout: int = duration("5m")
    leave_timeout: int = duration("20s")
    broadcast_timeout_for_local_updates_on_shutdown: int = duration("10s")
    message_history_buffer_bytes: int = 0
    bind_addr: tuple[str, ...] = seq()
    bind_port: int = 7946
    packet_dial_timeout: int = duration("2s")
    packet_write_timeout: int = duration("5s")
    max_concurrent_writes: int = 3
    acquire_writer_timeout: int = duration("250ms")
    tls_enabled: bool = False
    tls_cert_path: str = ""
    tls_key_path: str = ""
    tls_ca_path: str = ""
    tls_server_name: str = ""
    tls_insecure_skip_verify: bool = False
    tls_cipher_suites: str = ""
    tls_min_version: str = ""


@dataclass(frozen=True)
class AnalyticsConfig:
    reporting_enabled: bool = True
    usage_stats_url: str = "https://stats.grafana.org/loki-usage-report"
    proxy_url: str = ""


@dataclass(frozen=True)
class TracingConfig:
    enabled: bool = True
    profiling_enabled: bool = False


@dataclass(frozen=True)
class RuntimeConfig:
    """Per-tenant overrides file (`overrides: {tenant: {limit: value}}`), re-read every `period`."""

    period: int = duration("10s")
    file: str = ""


@dataclass(frozen=True)
class RayConfig:
    """svclog extension: how components are placed on Ray."""

    address: str | None = None  # None = start a local Ray; "auto" or host:port joins a cluster
    namespace: str = "svclog"
    num_ingesters: int | None = None  # None = max(1, common.replication_factor)
    # One querier process runs querier.max_concurrent sub-queries at once, as the reference's single
    # binary does: a second process cost ~155 MB idle and measured no faster on 2 cores
    # (docs/architecture.md, footprint). Clusters set their own (cluster.yaml).
    num_queriers: int = 1
    # true: a local single-node start of one querier (hosted by the backend host) runs a second
    # querier in the first ingester's process. One process's Python runs on one core at a time, so
    # 8 bench clients got 24-27 against 15-16 q/s at about the same peak RSS; but pushes and a light
    # tenant's queries then wait on the ingester's process behind heavy queries (push p99 27 -> 55
    # ms, a light tenant's p50 under a heavy loop 223-284 -> 447-449 ms). Off by default for that
    # isolation (docs/architecture.md, session 15).
    ingester_querier: bool = False
    # On a joined cluster the querier count follows the scheduler's load between num_queriers and
    # max_queriers (0: fixed at num_queriers); svclog/actors/querier_scaler.py
    max_queriers: int = 0
    querier_scale_up_delay: int = duration("10s")
    querier_scale_down_delay: int = duration("5m")
    num_rulers: int = 1  # rulers share the rule groups through the ruler ring
    num_index_gateways: int = 1  # started by targets with index-gateway (backend); tenants shard over their ring
    # Declared (not enforced) shares: the whole single-node topology must fit 2 CPUs.
    ingester_num_cpus: float = 0.2
    querier_num_cpus: float = 0.2
    serve_num_cpus: float = 0.2
    scheduler_num_cpus: float = 0.05
    # Ray Serve's HAProxy front end instead of its Python HTTP proxy: measured 2x the push
    # throughput on 2 cores (the Python proxy re-sends every body to the replica).
    serve_haproxy: bool = True
    # A local start (no `address`) serves HTTP from the gateway actor itself, without Ray Serve: its
    # controller, HAProxy's manager and HAProxy cost ~340 MB to route to one replica
    # (svclog/serve/direct_gateway.py). true: the gateway runs as a Serve deployment, as on a cluster.
    local_serve: bool = False
    dashboard: bool = False
    object_store_memory: int | None = field(default=None, metadata={"kind": BYTES})  # None = Ray's default
