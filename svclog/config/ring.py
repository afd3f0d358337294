"""Ring blocks shared by several components: kvstore, ring membership, lifecycler."""
# The field helpers (duration, size, section, free, ...) return dataclasses.field(...).
# ruff: noqa: RUF009

from dataclasses import dataclass

from .fields import choice, duration, free, section, seq


@dataclass(frozen=True)
class KVStoreConfig:
    store: str = choice("inmemory", "consul", "etcd", "memberlist", "multi")
    prefix: str = "collectors/"
    consul: dict = free()
    etcd: dict = free()
    multi: dict = free()


@dataclass(frozen=True)
class RingConfig:
    """A component ring (`common.ring`, `ruler.ring`, `compactor.compactor_ring`, ...)."""

    kvstore: KVStoreConfig = section(KVStoreConfig)
    heartbeat_period: int = duration("15s")
    heartbeat_timeout: int = duration("1m")
    tokens_file_path: str = ""
    zone_awareness_enabled: bool = False
    num_tokens: int = 128
    replication_factor: int = 1
    instance_id: str = ""
    instance_interface_names: tuple[str, ...] = seq()
    instance_port: int = 0
    instance_addr: str = ""
    instance_availability_zone: str = ""
    instance_enable_ipv6: bool = False


@dataclass(frozen=True)
class IngesterRingConfig:
    """`ingester.lifecycler.ring`; replication_factor None = `common.replication_factor`."""

    kvstore: KVStoreConfig = section(KVStoreConfig)
    heartbeat_timeout: int = duration("1m")
    replication_factor: int | None = None
    zone_awareness_enabled: bool = False
    excluded_zones: str = ""


@dataclass(frozen=True)
class LifecyclerConfig:
    ring: IngesterRingConfig = section(IngesterRingConfig)
    num_tokens: int = 128
    heartbeat_period: int = duration("5s")
    heartbeat_timeout: int = duration("1m")
    observe_period: int = duration("0s")
    join_after: int = duration("0s")
    min_ready_duration: int = duration("15s")
    interface_names: tuple[str, ...] = seq()
    enable_inet6: bool = False
    final_sleep: int = duration("0s")
    tokens_file_path: str = ""
    availability_zone: str = ""
    unregister_on_shutdown: bool = True
    readiness_check_ring_health: bool = True
    address: str = ""
    port: int = 0
    id: str = ""
