"""The Ray implementation of the admin routes' backend: probes, log levels, ingester shutdown, rings.

Each gateway replica keeps one `RayAdmin`: a `ServiceSet` fed by probing every component
(actors by `ready`/`service_state`, Serve deployments by their status), and the last time
each ring-less instance answered, which its status page shows as a heartbeat.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from svclog import targets
from svclog.actors.calls import (
    CALL_TIMEOUT_S,
    PROBE_TIMEOUT_S,
    SHUTDOWN_TIMEOUT_S,
    ActorMissing,
    ActorUnavailable,
    Handles,
    acall,
)
from svclog.actors.clients import serve_deployment_states
from svclog.actors.options import (
    COMPACTOR_NAME,
    INDEX_GATEWAY_RING_NAME,
    PATTERN_INGESTER_NAME,
    RING_NAME,
    RULER_NAME,
    RULER_RING_NAME,
    index_gateway_name,
    querier_name,
    ruler_name,
)
from svclog.actors.scheduler_actor import SCHEDULER_NAME
from svclog.model import NotFoundError, SvcError, ValidationError
from svclog.ring.ring import ACTIVE, Member
from svclog.ring.status_page import RingView
from svclog.services import ServiceSet, State, parse_state

log = logging.getLogger("svclog")
DEPLOYMENT_STATES = {
    "HEALTHY": State.RUNNING,
    "UPSCALING": State.RUNNING,
    "DOWNSCALING": State.RUNNING,
    "UPDATING": State.STARTING,
    "UNHEALTHY": State.FAILED,
    "DEPLOY_FAILED": State.FAILED,
}
NOT_A_RING = "this component runs without a ring: its instances are listed with the time each last answered"
INDEX_GATEWAY_NOTE = (
    "no index gateway runs (no index-gateway ring): queriers read the index from the object "
    "store themselves; run a target with index-gateway (backend, index-gateway, all,index-gateway)"
)


class IngesterUnavailable(SvcError):
    """An ingester in the ring that does not answer (dead, restarting, or stuck): HTTP 503."""

    status = 503


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


class RayAdmin:
    def __init__(self, cfg: Any, deployments: Callable[[], dict[str, tuple[str, str]]] | None = None):
        """`deployments`: the gateway's deployment states (name -> (status, message)); Serve's by default."""
        self.cfg = cfg
        self._deployments = deployments or serve_deployment_states
        self.services_set = ServiceSet()
        self._handles = Handles()
        self._last_answer_ns: dict[str, int] = {}

    def now_ns(self) -> int:
        return time.time_ns()

    # ------------------------------------------------------------ actors

    def _handle(self, name: str) -> Any:
        """The named actor's handle; ActorMissing (a ValueError) when no such actor exists."""
        return self._handles.get(name)

    def _optional(self, name: str) -> Any | None:
        return self._handles.find(name)

    async def _call(self, name: str, method: str, *args: Any, timeout: float = CALL_TIMEOUT_S) -> Any:
        """`method(*args)` on the named actor; a dead one's handle is dropped (Ray may bring it back)."""
        try:
            return await acall(getattr(self._handle(name), method), *args, timeout=timeout)
        except ActorUnavailable as err:
            if not err.restarting:
                self._handles.drop(name)
            raise

    async def _probe(self, name: str, method: str = "ready") -> tuple[State, str]:
        try:
            value = await self._call(name, method, timeout=PROBE_TIMEOUT_S)
        except ActorMissing:
            return State.FAILED, "no such actor"
        except TimeoutError:
            return State.STARTING, "not answering yet"  # busy
        except ActorUnavailable as err:
            if err.restarting:
                return State.STARTING, "not answering yet"  # Ray is restarting it
            return State.FAILED, _first_line(err)
        except Exception as err:  # noqa: BLE001 - no such method, or it raised
            return State.FAILED, f"{method}: {err}".splitlines()[0]
        self._last_answer_ns[name] = time.time_ns()
        return (parse_state(value) if method == "service_state" else State.RUNNING), ""

    async def _ring_snapshot(self, name: str = RING_NAME) -> dict:
        return await self._call(name, "snapshot")

    async def _ingester_names(self) -> list[str]:
        return sorted(m.address for m in (await self._ring_snapshot())["members"])

    def _local(self, component: str) -> bool:
        """Is the component run by this process's targets (readiness covers only those)?"""
        return component in targets.components(self.cfg.targets())

    def _querier_names(self) -> list[str]:
        if not self._local("querier"):
            return []
        return [querier_name(i) for i in range(max(1, self.cfg.ray.num_queriers))]

    def _backend_names(self) -> list[str]:
        names = [COMPACTOR_NAME] if self._local("compactor") else []
        if self._local("ruler"):
            names += [ruler_name(i) for i in range(max(1, self.cfg.ray.num_rulers))]
        if self.cfg.pattern_ingester.enabled and self._local("pattern-ingester"):
            names.append(PATTERN_INGESTER_NAME)
        if self._local("index-gateway"):
            names += [
                INDEX_GATEWAY_RING_NAME,
                *(index_gateway_name(i) for i in range(max(1, self.cfg.ray.num_index_gateways))),
            ]
        # started by some topologies only: listed when they exist
        names += [name for name in (SCHEDULER_NAME, RULER_RING_NAME) if self._optional(name) is not None]
        return names

    # ------------------------------------------------------------ services

    async def services(self) -> list[tuple[str, State]]:
        probes: dict[str, Any] = {RING_NAME: self._probe(RING_NAME)}
        try:
            ingesters = await self._ingester_names() if self._local("ingester") else []
        except Exception as err:  # noqa: BLE001 - the ring's own probe reports it
            log.warning("ring snapshot for /services: %s", err)
            ingesters = []
        for name in ingesters:
            probes[name] = self._probe(name, "service_state")
        if self._local("ingester") and not ingesters:
            # not ready before an ingester has joined the ring: a push would meet an empty ring (503)
            probes["ingester"] = _answer(State.STARTING, "no ingester in the ring yet")
        for name in self._querier_names() + self._backend_names():
            probes[name] = self._probe(name)
        results = dict(zip(probes, await asyncio.gather(*probes.values()), strict=True))
        results.update(await asyncio.to_thread(_deployment_states, self._deployments))
        for hosted in ("distributor", "query-frontend"):  # hosted by the HTTP entry's replicas
            if self._local(hosted) and "gateway" in results:
                results[hosted] = results["gateway"]
        for name, (state, why) in results.items():
            self.services_set.observe(name, state, why)
        self.services_set.retain(set(results))  # an ingester that left the ring is no longer ours
        return self.services_set.states()

    async def set_log_level(self, level: str) -> dict[str, str]:
        """Share the level with every replica (they poll it, svclog/serve/runtime.py) and hand it to the actors."""
        from svclog.serve.runtime import publish_log_level

        await asyncio.to_thread(publish_log_level, level)
        return await self.actors_log_level(level)

    async def actors_log_level(self, level: str) -> dict[str, str]:
        """Set the level of every actor of this process's components: actor -> "ok" or the error."""
        names = [RING_NAME, *await self._ingester_names(), *self._querier_names(), *self._backend_names()]

        async def one(name: str) -> str:
            try:
                await self._call(name, "set_log_level", level)
                return "ok"
            except Exception as err:  # noqa: BLE001 - best effort, reported per component
                return f"failed: {str(err).splitlines()[0] if str(err) else type(err).__name__}"

        return dict(zip(names, await asyncio.gather(*(one(n) for n in names)), strict=True))

    # ------------------------------------------------------------ ingester shutdown

    async def _targets(self, ingester: str | None) -> list[str]:
        if ingester:
            try:
                self._handle(ingester)
            except ActorMissing:
                raise NotFoundError(f"no ingester named {ingester!r}") from None
            return [ingester]
        names = await self._ingester_names()
        if not names:
            raise SvcError("no ingesters in the ring")
        return names

    async def _on_ingesters(
        self, names: list[str], method: str, *args: Any, timeout: float = CALL_TIMEOUT_S
    ) -> dict[str, Any]:
        """`method(*args)` on each ingester, all at once: name -> answer. When some do not answer,
        IngesterUnavailable names each (the others have done the work); their own errors propagate."""

        async def one(name: str) -> tuple[Any, str | None]:
            try:
                return await self._call(name, method, *args, timeout=timeout), None
            except ActorMissing:
                return None, "no such actor"
            except TimeoutError:
                return None, f"no answer within {timeout:g}s"
            except ActorUnavailable as err:
                self._handles.drop(name)  # Ray may bring it back under the same name
                return None, _first_line(err)

        outcomes = dict(zip(names, await asyncio.gather(*(one(n) for n in names)), strict=True))
        down = {name: why for name, (_, why) in outcomes.items() if why is not None}
        if down:
            detail = "; ".join(f"ingester {name} is unavailable: {why}" for name, why in sorted(down.items()))
            raise IngesterUnavailable(f"{method}: {detail}")
        return {name: value for name, (value, _) in outcomes.items()}

    async def flush(self) -> dict[str, int]:
        """Flush every ingester in the ring: name -> chunks flushed."""
        return await self._on_ingesters(await self._targets(None), "flush", timeout=SHUTDOWN_TIMEOUT_S)

    async def prepare_shutdown(self, action: str, ingester: str | None) -> dict[str, bool]:
        return await self._on_ingesters(await self._targets(ingester), "prepare_shutdown", action)

    async def shutdown(
        self, ingester: str | None, flush: bool, delete_ring_tokens: bool, terminate: bool
    ) -> dict[str, dict]:
        names = await self._targets(ingester)
        reports = await self._on_ingesters(
            names, "shutdown", flush, delete_ring_tokens, False, timeout=SHUTDOWN_TIMEOUT_S
        )
        if terminate:
            for name in names:
                await self._terminate(name)
        return reports

    async def _terminate(self, name: str) -> None:
        try:
            await self._call(name, "terminate")
        except ActorUnavailable:
            pass  # expected: the caller of exit_actor() observes the actor's death
        self._handles.drop(name)

    # ------------------------------------------------------------ rings

    async def ring(self, kind: str, now_ns: int) -> RingView:
        if kind == "ingester":
            return _ring_view(await self._ring_snapshot())
        if kind == "ruler" and self._optional(RULER_RING_NAME) is not None:
            return _ring_view(await self._ring_snapshot(RULER_RING_NAME))
        if kind == "index-gateway":
            return await self._index_gateway_ring()
        names = {"ruler": [RULER_NAME], "compactor": [COMPACTOR_NAME]}.get(kind)
        if names is None:
            raise NotFoundError(f"unknown ring {kind!r}")
        states = await asyncio.gather(*(self._probe(n) for n in names))
        members = tuple(
            Member(n, n, "", (), ACTIVE if s is State.RUNNING else str(s).upper(), self._last_answer_ns.get(n, 0), 0)
            for n, (s, _) in zip(names, states, strict=True)
        )
        return RingView(members, self._ring_timeout(kind), forgettable=False, note=NOT_A_RING)

    async def _index_gateway_ring(self) -> RingView:
        """The index-gateway ring's members; none, with a note, where no gateway runs (e.g. `-target=all`)."""
        if self._optional(INDEX_GATEWAY_RING_NAME) is not None:
            try:
                return _ring_view(await self._ring_snapshot(INDEX_GATEWAY_RING_NAME))
            except ActorUnavailable:
                self._handles.drop(INDEX_GATEWAY_RING_NAME)  # stopped since: look again next time
        return RingView((), self._ring_timeout("index-gateway"), forgettable=False, note=INDEX_GATEWAY_NOTE)

    def _ring_timeout(self, kind: str) -> int:
        rings = {
            "ruler": self.cfg.ruler.ring,
            "compactor": self.cfg.compactor.compactor_ring,
            "index-gateway": self.cfg.index_gateway.ring,
        }
        ring = rings.get(kind, self.cfg.common.ring)
        return int(ring.heartbeat_timeout)

    async def forget(self, kind: str, member_id: str) -> bool:
        if kind == "ingester":
            name = RING_NAME
        elif kind == "ruler" and self._optional(RULER_RING_NAME) is not None:
            name = RULER_RING_NAME
        elif kind == "index-gateway" and self._optional(INDEX_GATEWAY_RING_NAME) is not None:
            name = INDEX_GATEWAY_RING_NAME
        else:
            raise ValidationError(f"the {kind} has no ring to forget members from")
        return await self._call(name, "forget", member_id)


def _ring_view(snapshot: dict) -> RingView:
    return RingView(tuple(snapshot["members"]), int(snapshot["heartbeat_timeout_ns"]))


def _deployment_states(read: Callable[[], dict[str, tuple[str, str]]]) -> dict[str, tuple[State, str]]:
    """This application's deployments (this gateway among them) and their states."""
    return {
        name: (DEPLOYMENT_STATES.get(status, State.STARTING), message) for name, (status, message) in read().items()
    }


async def _answer(state: State, why: str) -> tuple[State, str]:
    return state, why
