"""What the gateway replica knows once it has started: config, handlers and actor handles.

Route modules are registered when the app is defined (import time), before any config
exists; they read settings and actors through these module-level functions, which
Serve pickles by reference, so each replica sees its own live values.
"""
from __future__ import annotations

from typing import Any

import ray

from svclog import targets

from svclog.actors.clients import IngesterPool, RingClient
from svclog.actors.options import COMPACTOR_NAME, NAMESPACE, PATTERN_INGESTER_NAME, RULER_NAME
from svclog.serve.errors import ErrorReply

_state: dict[str, Any] = {}


def configure(cfg: Any, distributor: Any) -> None:
    _state.clear()
    _state.update(cfg=cfg, distributor=distributor)


def config() -> Any:
    return _state["cfg"]


def exposes(path: str) -> bool:
    """Whether this process's components serve the endpoint group of `path` (else 404)."""
    if "cfg" not in _state:
        return True
    if "components" not in _state:
        _state["components"] = targets.components(config().targets())
    return targets.exposes(_state["components"], path)


def auth_enabled() -> bool:
    return config().auth_enabled


def max_body_bytes() -> int:
    return config().server.max_request_body_bytes


def max_decompressed_bytes() -> int:
    return config().server.max_decompressed_body_bytes


def _actor(name: str) -> Any:
    key = "actor:" + name
    if key not in _state:
        _state[key] = ray.get_actor(name, namespace=NAMESPACE)
    return _state[key]


def compactor() -> Any:
    return _actor(COMPACTOR_NAME)


def ruler() -> Any:
    return _actor(RULER_NAME)


def pattern_actor() -> Any | None:
    """None when the pattern ingester is disabled (its endpoint then answers 404)."""
    if not config().pattern_ingester.enabled:
        return None
    return _actor(PATTERN_INGESTER_NAME)


async def push_streams(tenant: str, streams: list) -> Any:
    """Push already-decoded streams (OTLP) through the distributor hosted by this replica."""
    return await _state["distributor"].push_decoded(tenant, streams)


# ---------------------------------------------------------------- tail (svclog/serve/tail_routes.py)

def set_query_frontend(frontend: Any) -> None:
    _state["frontend"] = frontend


async def query_logs(tenants: list[str], request: Any) -> dict:
    """A query through the query-frontend deployment (the tail's replay of [start, now))."""
    reply = await _state["frontend"].query.remote(tenants, request)
    if isinstance(reply, ErrorReply):
        reply.raise_()
    return reply


def ingester_pool() -> Any:
    """This replica's IngesterPool (ring snapshot + ingester actor handles), made on first use."""
    if "ingester_pool" not in _state:
        _state["ingester_pool"] = IngesterPool(RingClient(), config().common.replication_factor)
    return _state["ingester_pool"]


# ---------------------------------------------------------------- admin (svclog/serve/admin_routes.py)

def admin() -> Any:
    """This replica's admin backend (component probes, ingester shutdown, ring pages), made on first use."""
    if "admin" not in _state:
        from svclog.serve.admin_backend import RayAdmin  # the gateway only: it pulls in the ruler host

        _state["admin"] = RayAdmin(config())
    return _state["admin"]
