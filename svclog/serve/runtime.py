"""What the gateway replica knows once it has started: config, handlers and actor handles.

Route modules are registered when the app is defined (import time), before any config
exists; they read settings and actors through these module-level functions, which
Serve pickles by reference, so each replica sees its own live values.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from svclog import targets
from svclog.actors.calls import lookup
from svclog.actors.clients import IngesterPool, RingClient
from svclog.actors.options import COMPACTOR_NAME, NAMESPACE, PATTERN_INGESTER_NAME, RULER_NAME
from svclog.actors.service_clients import CompactorClient, PatternClient, RulerClient
from svclog.config import replication_factor
from svclog.log_level import LevelFollower, apply_level
from svclog.serve.errors import ErrorReply

log = logging.getLogger("svclog")

_state: dict[str, Any] = {}


def configure(cfg: Any, distributor: Any) -> None:
    _state.clear()
    _state.update(cfg=cfg, distributor=distributor)


def config() -> Any:
    return _state["cfg"]


def enter_standby(state: str) -> None:
    """This replica answers every route like the standby application does ("stopping")."""
    from svclog.serve.standby import StandbyApp

    _state["standby"] = StandbyApp(state)


STARTED_KEY = b"started"  # set once the service first served; a replica Serve restarts serves at once


def leave_standby() -> None:
    """This replica serves again (its components answered while it was starting)."""
    _state.pop("standby", None)


def mark_started(started: bool = True) -> None:
    from ray.experimental import internal_kv

    if started:
        internal_kv._internal_kv_put(STARTED_KEY, b"1", True, namespace=NAMESPACE)
    else:
        internal_kv._internal_kv_del(STARTED_KEY, namespace=NAMESPACE)


def has_started() -> bool:
    from ray.experimental import internal_kv

    return bool(internal_kv._internal_kv_get(STARTED_KEY, namespace=NAMESPACE))


def standby() -> Any:
    """The standby answer this replica gives instead of serving, or None while it serves."""
    return _state.get("standby")


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


# Push routes cap their own bodies (server.max_request_body_bytes, their own 413 message).
PUSH_PATHS = frozenset(f"{prefix}{path}" for prefix in ("/svc", "/loki") for path in ("/api/v1/push",)) | {
    "/api/legacy/push",
    "/api/prom/push",
    "/otlp/v1/logs",
}


def body_limit(path: str) -> int | None:
    """The body cap of a route (svclog/serve/body_limit.py): None for push, which caps itself;
    else the request message cap (server.grpc_server_max_recv_msg_size, 4 MiB by default),
    never above server.max_request_body_bytes. Form POSTs and rule uploads are small."""
    if path in PUSH_PATHS:
        return None
    server = config().server
    return min(server.grpc_server_max_recv_msg_size, server.max_request_body_bytes)


def _actor(name: str) -> Any:
    key = "actor:" + name
    if key not in _state:
        _state[key] = lookup(name)
    return _state[key]


def compactor() -> CompactorClient:
    return CompactorClient(_actor(COMPACTOR_NAME))


def ruler() -> RulerClient:
    return RulerClient(_actor(RULER_NAME))


def pattern_actor() -> PatternClient | None:
    """None when the pattern ingester is disabled (its endpoint then answers 404)."""
    if not config().pattern_ingester.enabled:
        return None
    return PatternClient(_actor(PATTERN_INGESTER_NAME))


async def push_streams(tenant: str, streams: list) -> Any:
    """Push already-decoded streams (OTLP) through the distributor hosted by this replica."""
    return await _state["distributor"].push_decoded(tenant, streams)


# ---------------------------------------------------------------- tail (svclog/serve/tail_routes.py)


def set_query_frontend(frontend: Any) -> None:
    _state["frontend"] = frontend


async def query_logs(tenants: list[str], request: Any) -> dict:
    """A query through the query frontend this replica hosts (the tail's replay of [start, now))."""
    reply = await _state["frontend"].query(tenants, request)
    if isinstance(reply, ErrorReply):
        reply.raise_()
    return reply


def ingester_pool() -> Any:
    """This replica's IngesterPool (ring snapshot + ingester actor handles), made on first use."""
    if "ingester_pool" not in _state:
        _state["ingester_pool"] = IngesterPool(RingClient(), replication_factor(config()))
    return _state["ingester_pool"]


# ---------------------------------------------------------------- admin (svclog/serve/admin_routes.py)


def admin() -> Any:
    """This replica's admin backend (component probes, ingester shutdown, ring pages), made on first use."""
    if "admin" not in _state:
        from svclog.serve.admin_backend import RayAdmin  # the gateway only: it pulls in the ruler host

        _state["admin"] = RayAdmin(config())
    return _state["admin"]


# ---------------------------------------------------------------- log level (svclog/log_level.py)

# The level every replica and actor runs at lives in the cluster's key-value store (GCS):
# seeded from `server.log_level` by the first replica up, replaced by POST /log_level.
# Each replica polls it; the gateway replicas also hand it to the actors (which keep no
# poller of their own), at start, on a change, and now and then for actors Ray restarted.
LOG_LEVEL_KEY = b"log_level"
LEVEL_POLL_S = 2.0
ACTOR_LEVEL_RESYNC_S = 30.0
_level_follower: list[LevelFollower] = []


def shared_log_level() -> str | None:
    from ray.experimental import internal_kv

    raw = internal_kv._internal_kv_get(LOG_LEVEL_KEY, namespace=NAMESPACE)
    return raw.decode() if raw else None


def publish_log_level(level: str, *, overwrite: bool = True) -> None:
    from ray.experimental import internal_kv

    internal_kv._internal_kv_put(LOG_LEVEL_KEY, level.encode(), overwrite, namespace=NAMESPACE)


def clear_log_level() -> None:
    """Forget the shared level (a clean stop): the next start begins at the configured one."""
    from ray.experimental import internal_kv

    internal_kv._internal_kv_del(LOG_LEVEL_KEY, namespace=NAMESPACE)


def follow_log_level(configured: str, to_actors: Callable[[str], Any] | None = None) -> None:
    """Run this replica at the shared level from now on (polled every LEVEL_POLL_S); `to_actors`
    is called with the level at start, on each change and every ACTOR_LEVEL_RESYNC_S."""
    if _level_follower:
        return
    try:
        publish_log_level(apply_level(configured), overwrite=False)  # first one up seeds it
    except Exception as err:  # noqa: BLE001 - no shared store: this replica still runs at the configured level
        log.warning("log level: cannot seed the shared level: %s", err)
    follower = LevelFollower(shared_log_level)
    _level_follower.append(follower)
    follower.refresh()
    threading.Thread(target=_follow, args=(follower, to_actors), name="log-level", daemon=True).start()


def _follow(follower: LevelFollower, to_actors: Callable[[str], Any] | None) -> None:
    last_sync = None
    while True:
        level, changed = follower.refresh()
        if to_actors is not None and (
            changed or last_sync is None or time.monotonic() - last_sync >= ACTOR_LEVEL_RESYNC_S
        ):
            try:
                to_actors(level)
            except Exception as err:  # noqa: BLE001 - best effort; the next resync tries again
                log.warning("log level: handing %s to the actors: %s", level, err)
            last_sync = time.monotonic()
        time.sleep(LEVEL_POLL_S)


def hand_level_to_actors(level: str) -> None:
    """The gateway's `to_actors`: its components' actors run at `level` (svclog/serve/admin_backend.py)."""
    import asyncio

    asyncio.run(admin().actors_log_level(level))
