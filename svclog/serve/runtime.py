"""What gateway replicas share through the cluster's key-value store (GCS): whether the service has
started, and the log level every replica and actor runs at.

Nothing here is per-process state: the gateway deployment (svclog/serve/deployments.py) holds
what it built, its LevelSync among it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from svclog.actors.options import NAMESPACE
from svclog.log_level import LevelFollower, apply_level

log = logging.getLogger("svclog")

STARTED_KEY = b"started"  # set once the service first served; a replica Serve restarts serves at once


def mark_started(started: bool = True) -> None:
    from ray.experimental import internal_kv

    if started:
        internal_kv._internal_kv_put(STARTED_KEY, b"1", True, namespace=NAMESPACE)
    else:
        internal_kv._internal_kv_del(STARTED_KEY, namespace=NAMESPACE)


def has_started() -> bool:
    from ray.experimental import internal_kv

    return bool(internal_kv._internal_kv_get(STARTED_KEY, namespace=NAMESPACE))


# ---------------------------------------------------------------- log level (svclog/log_level.py)

# The level every replica and actor runs at lives in the cluster's key-value store (GCS):
# seeded from `server.log_level` by the first replica up, replaced by POST /log_level.
# Each replica polls it; the gateway replicas also hand it to the actors (which keep no
# poller of their own), at start, on a change, and now and then for actors Ray restarted.
LOG_LEVEL_KEY = b"log_level"
LEVEL_POLL_S = 2.0
ACTOR_LEVEL_RESYNC_S = 30.0


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


class LevelSync:
    """Runs this replica at the shared level (polled every LEVEL_POLL_S); `to_actors` is called with
    the level at start, on each change and every ACTOR_LEVEL_RESYNC_S."""

    def __init__(self, configured: str, to_actors: Callable[[str], Any] | None = None):
        self.configured = configured
        self.to_actors = to_actors
        self.follower = LevelFollower(shared_log_level)

    def start(self) -> None:
        try:
            publish_log_level(apply_level(self.configured), overwrite=False)  # first one up seeds it
        except Exception as err:  # noqa: BLE001 - no shared store: this replica still runs at the configured level
            log.warning("log level: cannot seed the shared level: %s", err)
        self.follower.refresh()
        threading.Thread(target=self._follow, name="log-level", daemon=True).start()

    def _follow(self) -> None:
        last_sync = None
        while True:
            level, changed = self.follower.refresh()
            if self.to_actors is not None and (
                changed or last_sync is None or time.monotonic() - last_sync >= ACTOR_LEVEL_RESYNC_S
            ):
                try:
                    self.to_actors(level)
                except Exception as err:  # noqa: BLE001 - best effort; the next resync tries again
                    log.warning("log level: handing %s to the actors: %s", level, err)
                last_sync = time.monotonic()
            time.sleep(LEVEL_POLL_S)
