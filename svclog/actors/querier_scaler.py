"""The read group's autoscaling: the scheduler sizes its querier pool to its own load.

Queriers pull sub-queries from the scheduler, so the scheduler alone sees their load (sub-queries
queued plus running). On a joined cluster with `ray.max_queriers` above `ray.num_queriers`, the
scheduler runs this pool once a second: `QuerierScaling` (svclog/scheduler/scaling.py) says how
many queriers to run, new ones are created as actors that need a read node (the `svclog_read`
resource, when the cluster has read nodes), so Ray's autoscaler launches read nodes for those that
do not fit, and surplus ones are drained: told to take no new work, killed once what they run is
answered, then forgotten. A drain never fails a query; work still running on a querier that
outlives the drain timeout is queued again (`forget_querier`).

The extra queriers are owned by the scheduler: if it dies they go with it and the count starts
again from `ray.num_queriers`, which the launcher created and which never scale away.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import ray

from svclog.actors.options import READ_RESOURCE, querier_name, querier_options
from svclog.config import Config
from svclog.scheduler import Released, Scheduler
from svclog.scheduler.scaling import QuerierScaling, ScalingSettings

DRAIN_TIMEOUT_S = 120.0  # a querier still running work this long after its drain began is stopped anyway
DRAIN_GRACE_S = 3.0  # kept this long after its last answer: frontends fetch answers the querier owns
EVENTS_KEPT = 500


def scaling_enabled(cfg: Config) -> bool:
    """Queriers scale only on a joined cluster (a local node has nothing to grow into) with room to move."""
    return bool(cfg.ray.address) and cfg.ray.max_queriers > max(1, cfg.ray.num_queriers)


def scaling_settings(cfg: Config) -> ScalingSettings:
    base = max(1, cfg.ray.num_queriers)
    return ScalingSettings(
        min_queriers=base,
        max_queriers=max(base, cfg.ray.max_queriers),
        target_per_querier=max(1, cfg.querier.max_concurrent),
        upscale_delay_s=cfg.ray.querier_scale_up_delay / 1e9,
        downscale_delay_s=cfg.ray.querier_scale_down_delay / 1e9,
    )


class QuerierPool:
    """The extra queriers beyond the launcher's `ray.num_queriers`, sized by `QuerierScaling`."""

    def __init__(self, cfg: Config, scheduler: Scheduler):
        self.cfg = cfg
        self.scheduler = scheduler
        self.scaling = QuerierScaling(scaling_settings(cfg))
        self.base = self.scaling.settings.min_queriers
        self.extras: dict[str, Any] = {}  # name -> handle, oldest first
        self.draining: dict[str, tuple[Any, float, float]] = {}  # name -> (handle, drain began, last busy)
        self.events: list[dict] = []

    def tick(self) -> Released:
        """One sample and decision; what forgotten queriers still ran goes back to the queue."""
        stats = self.scheduler.stats()
        load = sum(stats.queued.values()) + stats.running
        self.scaling.observe(load)
        current = self.base + len(self.extras)
        want = self.scaling.desired(current)
        if want > current:
            self._grow(want - current)
        elif want < current:
            self._shrink(current - want)
        if want != current:
            self._event("scale", load=load, queriers=want, previous=current)
        return self._reap()

    def _grow(self, count: int) -> None:
        for _ in range(count):
            index = self.base
            while querier_name(index) in self.extras or querier_name(index) in self.draining:
                index += 1
            name = querier_name(index)
            self.extras[name] = _remote_querier().options(**self._options(index)).remote(self.cfg, name)

    def _options(self, index: int) -> dict:
        options = querier_options(index, self.cfg.ray.querier_num_cpus, self.cfg.querier.max_concurrent)
        # not pinned to a node that exists: placed by resources, so a querier that fits nowhere is
        # demand the Ray autoscaler answers with a new read node
        options.pop("scheduling_strategy", None)
        if ray.cluster_resources().get(READ_RESOURCE, 0) > 0:
            options["resources"] = {READ_RESOURCE: 0.001}
        return options

    def _shrink(self, count: int) -> None:
        now = time.monotonic()
        for name in list(self.extras)[-count:]:  # the newest first
            self.scheduler.notify_shutdown(name)
            self.draining[name] = (self.extras.pop(name), now, now)

    def _reap(self) -> Released:
        now = time.monotonic()
        requeued: list[int] = []
        abandoned: list[int] = []
        for name, (handle, began, busy) in list(self.draining.items()):
            if self.scheduler.running_on(name):
                busy = now
                self.draining[name] = (handle, began, busy)
            if now - busy < DRAIN_GRACE_S and now - began < DRAIN_TIMEOUT_S:
                continue
            with contextlib.suppress(Exception):  # already gone
                ray.kill(handle, no_restart=True)
            released = self.scheduler.forget_querier(name)
            requeued += released.requeued
            abandoned += released.abandoned
            del self.draining[name]
            self._event("stopped", querier=name, requeued=len(released.requeued))
        return Released(tuple(requeued), tuple(abandoned))

    def _event(self, kind: str, **fields: Any) -> None:
        self.events.append({"at": time.time(), "event": kind, **fields})
        del self.events[:-EVENTS_KEPT]

    def state(self) -> dict:
        """For metrics and tests: the pool now and its recent scaling events."""
        return {
            "base": self.base,
            "extras": list(self.extras),
            "draining": list(self.draining),
            "load": self.scaling.average_load(),
            "events": list(self.events),
        }


def _remote_querier() -> Any:
    from svclog.actors.querier_actor import RemoteQuerier  # it imports the scheduler actor, our caller

    return RemoteQuerier
