"""Ray resource and restart options of every actor, in one place.

Restart policy, chosen deliberately:
- ingesters restart forever (`max_restarts=-1`) and replay their WAL on start; their
  tasks are NOT retried (`max_task_retries=0`): a push that fails is reported to the
  distributor, which answers 5xx so the client retries — no silent double apply.
- queriers restart forever and their read-only tasks are retried by the caller on
  another querier.
- the ring restarts too; members re-register on their next heartbeat.
Fractional CPUs let the whole single-node topology fit a 2-core laptop.
"""
from __future__ import annotations

NAMESPACE = "svclog"
RING_NAME = "ring"
COMPACTOR_NAME = "compactor"
PATTERN_INGESTER_NAME = "pattern-ingester"
RULER_NAME = "ruler-0"


def ingester_name(index: int) -> str:
    return f"ingester-{index}"


def querier_name(index: int) -> str:
    return f"querier-{index}"


def ring_options() -> dict:
    return {"name": RING_NAME, "namespace": NAMESPACE, "num_cpus": 0.05, "max_restarts": -1,
            "max_task_retries": 3, "get_if_exists": True}


def ingester_options(index: int, num_cpus: float) -> dict:
    return {"name": ingester_name(index), "namespace": NAMESPACE, "num_cpus": num_cpus,
            "max_restarts": -1, "max_task_retries": 0, "max_concurrency": 16, "get_if_exists": True}


def compactor_options(num_cpus: float = 0.1) -> dict:
    # threaded: the delete API answers while a compaction pass runs (the Compactor locks what it shares)
    return {"name": COMPACTOR_NAME, "namespace": NAMESPACE, "num_cpus": num_cpus, "max_restarts": -1,
            "max_task_retries": 0, "max_concurrency": 8, "get_if_exists": True}


def querier_options(index: int, num_cpus: float, max_concurrent: int) -> dict:
    return {"name": querier_name(index), "namespace": NAMESPACE, "num_cpus": num_cpus,
            "max_restarts": -1, "max_task_retries": 0, "max_concurrency": max(1, max_concurrent),
            "get_if_exists": True}


def pattern_ingester_options(num_cpus: float = 0.1) -> dict:
    """Restart forever (state is rebuilt from new pushes); no task retries for pushes."""
    return {"name": PATTERN_INGESTER_NAME, "namespace": NAMESPACE, "num_cpus": num_cpus,
            "max_restarts": -1, "max_task_retries": 0, "max_concurrency": 4, "get_if_exists": True}


def ruler_options() -> dict:
    return {"name": RULER_NAME, "namespace": NAMESPACE, "num_cpus": 0.05, "max_restarts": -1,
            "max_task_retries": 0, "max_concurrency": 4, "get_if_exists": True}
