"""Ray resource and restart options of every actor, in one place.

Restart policy, chosen deliberately:
- ingesters restart forever (`max_restarts=-1`) and replay their WAL on start; their
  tasks are NOT retried (`max_task_retries=0`): a push that fails is reported to the
  distributor, which answers 5xx so the client retries — no silent double apply.
- queriers restart forever and their read-only tasks are retried by the caller on
  another querier.
- the ring restarts too; members re-register on their next heartbeat.
Fractional CPUs let the whole single-node topology fit a 2-core laptop.

Placement on a multi-node cluster (see docs/deployment.md): ingesters are pinned round-robin
to distinct alive nodes with a *soft* NodeAffinitySchedulingStrategy, preferring nodes that
advertise the custom resource `svclog_write` (queriers: `svclog_read`; compactor, ruler and
pattern ingester, index gateways: `svclog_backend`). Affinity rather than Ray's "SPREAD": SPREAD is a
best-effort round-robin shared with every other SPREAD request in the cluster (Serve replicas
use it), so two ingesters can land on one node; affinity makes "ingester i on node i mod n"
exact, and `soft=True` lets Ray restart an ingester elsewhere when its node dies. On a
single node (or without Ray initialised) no strategy is set and Ray's default applies.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

NAMESPACE = "svclog"
RING_NAME = "ring"
COMPACTOR_NAME = "compactor"
PATTERN_INGESTER_NAME = "pattern-ingester"
RULER_RING_NAME = "ruler-ring"
INDEX_GATEWAY_RING_NAME = "indexgateway-ring"
BACKEND_HOST_NAME = "backend"  # the process hosting the cheap backend parts of a local start
# Custom resources that cluster.yaml's node types advertise (svclog targets node types by them).
READ_RESOURCE = "svclog_read"
WRITE_RESOURCE = "svclog_write"
BACKEND_RESOURCE = "svclog_backend"


def ingester_name(index: int) -> str:
    return f"ingester-{index}"


def querier_name(index: int) -> str:
    return f"querier-{index}"


def ruler_name(index: int) -> str:
    return f"ruler-{index}"


def index_gateway_name(index: int) -> str:
    return f"index-gateway-{index}"


RULER_NAME = ruler_name(0)  # the rules API's entry; every ruler answers it (one shared store)


def arrow_pool_env() -> dict:
    """Actor options that start the worker with jemalloc as Arrow's memory pool (unless the
    operator chose one with ARROW_DEFAULT_MEMORY_POOL), for the actors that hold data.

    pyarrow's default, mimalloc, keeps freed pages in the heap of the thread that allocated them,
    and an ingester runs its calls on many threads. Measured on an ingester holding 200k lines
    (42 MB of Arrow data) after 11 queries: 560 MB anonymous memory with mimalloc, 450 MB with the
    system allocator, 152 MB with jemalloc, which returns freed pages to the OS after a short decay.
    Queriers keep mimalloc: with jemalloc their scans ran ~20% slower (pages faulted in again per
    query); they release their pool after each sub-query instead (querier_actor.py). Set as an
    environment variable, not `pa.set_memory_pool`, so Arrow's C++ code (Ray's Arrow serializer
    included) uses it from the first allocation."""
    pool = os.environ.get("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
    return {"runtime_env": {"env_vars": {"ARROW_DEFAULT_MEMORY_POOL": pool}}}


def driver_arrow_pool() -> None:
    """Make jemalloc this process's Arrow pool (unless the operator chose one) without handing the
    choice to the processes it starts: `svclog serve` hosts the gateway, whose pushes build Arrow
    arrays on several threads, and mimalloc kept ~30 MB more of them (the driver's anonymous memory
    grew 80 MB over a 1M-line ingest with mimalloc, 46 MB with jemalloc). Arrow reads the variable
    once, when the default pool is first asked for; it is gone again before Ray starts its daemons
    and workers (queriers keep mimalloc, see `arrow_pool_env`)."""
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "jemalloc"
    try:
        import pyarrow as pa

        pa.default_memory_pool()
    finally:
        del os.environ["ARROW_DEFAULT_MEMORY_POOL"]


def ring_options() -> dict:
    return {
        "name": RING_NAME,
        "namespace": NAMESPACE,
        "num_cpus": 0.05,
        "max_restarts": -1,
        "max_task_retries": 3,
        "get_if_exists": True,
    }


def choose_node(
    nodes: Iterable[Mapping], resource: str, index: int, num_cpus: float = 0.0, tagged_only: bool = False
) -> str | None:
    """Node id for replica `index` of a role: round-robin over alive nodes that can host it.

    `nodes` is `ray.nodes()`. Nodes advertising `resource` are preferred; when none do, every
    alive node with enough CPUs is a candidate (unless `tagged_only`). None when there is
    nothing to spread over (fewer than two untagged candidates): Ray's default then applies.
    """
    alive = [n for n in nodes if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) >= num_cpus]
    tagged = [n for n in alive if n.get("Resources", {}).get(resource, 0) > 0]
    if tagged:
        pool = sorted(n["NodeID"] for n in tagged)
    elif tagged_only or len(alive) < 2:
        return None
    else:
        pool = sorted(n["NodeID"] for n in alive)
    return pool[index % len(pool)]


def placement(resource: str, index: int, num_cpus: float, tagged_only: bool = False) -> dict:
    """Actor options pinning replica `index` of a role to a node (soft: survives node loss)."""
    if not ray.is_initialized():
        return {}
    node = choose_node(ray.nodes(), resource, index, num_cpus, tagged_only)
    return {} if node is None else {"scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=True)}


def ingester_options(index: int, num_cpus: float) -> dict:
    return {
        "name": ingester_name(index),
        "namespace": NAMESPACE,
        "num_cpus": num_cpus,
        "max_restarts": -1,
        "max_task_retries": 0,
        "max_concurrency": 16,
        "get_if_exists": True,
        **arrow_pool_env(),
        **placement(WRITE_RESOURCE, index, num_cpus),
    }


def compactor_options(num_cpus: float = 0.1) -> dict:
    # threaded: the delete API answers while a compaction pass runs (the Compactor locks what it shares)
    return {
        "name": COMPACTOR_NAME,
        "namespace": NAMESPACE,
        "num_cpus": num_cpus,
        "max_restarts": -1,
        "max_task_retries": 0,
        "max_concurrency": 8,
        "get_if_exists": True,
        **placement(BACKEND_RESOURCE, 0, num_cpus, tagged_only=True),
    }


def querier_options(index: int, num_cpus: float, max_concurrent: int) -> dict:
    return {
        "name": querier_name(index),
        "namespace": NAMESPACE,
        "num_cpus": num_cpus,
        "max_restarts": -1,
        "max_task_retries": 0,
        "max_concurrency": max(1, max_concurrent),
        "get_if_exists": True,
        **placement(READ_RESOURCE, index, num_cpus, tagged_only=True),
    }


GATEWAY_NAME = "svclog-gateway"


def gateway_options(num_cpus: float) -> dict:
    """A local start's gateway serving HTTP itself (svclog/serve/direct_gateway.py): restart forever (a
    restart binds the port again and serves at once), no task retries; its calls are the start's
    wait and the stop's standby and close, a few threads."""
    return {
        "name": GATEWAY_NAME,
        "namespace": NAMESPACE,
        "num_cpus": num_cpus,
        "max_restarts": -1,
        "max_task_retries": 0,
        "max_concurrency": 4,
    }


def pattern_ingester_options(num_cpus: float = 0.1) -> dict:
    """Restart forever (state is rebuilt from new pushes); no task retries for pushes."""
    return {
        "name": PATTERN_INGESTER_NAME,
        "namespace": NAMESPACE,
        "num_cpus": num_cpus,
        "max_restarts": -1,
        "max_task_retries": 0,
        "max_concurrency": 4,
        "get_if_exists": True,
        **placement(BACKEND_RESOURCE, 0, num_cpus, tagged_only=True),
    }


def ruler_options(index: int = 0) -> dict:
    return {
        "name": ruler_name(index),
        "namespace": NAMESPACE,
        "num_cpus": 0.05,
        "max_restarts": -1,
        "max_task_retries": 0,
        "max_concurrency": 4,
        "get_if_exists": True,
        **placement(BACKEND_RESOURCE, index, 0.05, tagged_only=True),
    }


def ruler_ring_options() -> dict:
    """The rulers' own ring (which ruler evaluates which group); restarts like the main ring."""
    return {**ring_options(), "name": RULER_RING_NAME}


def index_gateway_options(index: int = 0, num_cpus: float = 0.1) -> dict:
    """Restart forever (a cache, nothing to lose). No task retries: a querier whose lookup fails
    asks the next gateway or reads the index itself instead of waiting for a restart."""
    return {
        "name": index_gateway_name(index),
        "namespace": NAMESPACE,
        "num_cpus": num_cpus,
        "max_restarts": -1,
        "max_task_retries": 0,
        "max_concurrency": 8,
        "get_if_exists": True,
        **placement(BACKEND_RESOURCE, index, num_cpus, tagged_only=True),
    }


def index_gateway_ring_options() -> dict:
    """The index gateways' own ring (which gateway serves which tenant); restarts like the main ring."""
    return {**ring_options(), "name": INDEX_GATEWAY_RING_NAME}


def backend_host_options(num_cpus: float, querier: bool = False) -> dict:
    """The backend host restarts forever like each part it hosts (the ring's members re-register, the
    scheduler's frontends enqueue again); no task retries, as none of its parts had them except the
    ring, whose callers retry on their next heartbeat. Concurrency is the scheduler's: its dequeue
    long-polls park many calls at once (the blocking parts are bounded by their own thread pools).
    A host that runs the querier keeps the querier's Arrow pool (see `arrow_pool_env`)."""
    return {
        "name": BACKEND_HOST_NAME,
        "namespace": NAMESPACE,
        "num_cpus": num_cpus,
        "max_restarts": -1,
        "max_task_retries": 0,
        "max_concurrency": 10_000,
        "get_if_exists": True,
        **({} if querier else arrow_pool_env()),
    }
