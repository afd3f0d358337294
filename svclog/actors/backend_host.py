"""One process for the cheap backend components of a local `-target=all` start.

Every Ray worker costs ~130 MB before it does anything; the ring, scheduler, compactor, ruler and
pattern ingester each do little on one node, so they share a process instead of five. Each part is
its usual actor class, built here, and keeps its own concurrency: coroutine methods (the
scheduler's) run on the host's event loop, blocking ones in the part's own thread pool, sized as
its `max_concurrency` was when it ran alone (one thread for the ring, whose state has no lock).
Callers reach a part through `registry.named_actor`, under the name it always had.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import ray

from svclog.actors import registry
from svclog.actors.calls import HOSTED_CALL
from svclog.actors.gc_freeze import freeze_startup_heap
from svclog.actors.idle_release import start_idle_release

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HostedPart:
    role: str  # the actor name callers know the part by
    factory: type  # its actor class (a plain class; `ray.remote` is not applied)
    args: tuple = ()
    threads: int = 1  # blocking calls that may run at once
    num_cpus: float = 0.05
    kwargs: dict = field(default_factory=dict)
    # threads of the part's concurrency groups (`@ray.method(concurrency_group=...)` methods), as the
    # actor's `concurrency_groups` option gave them: a tail's long polls never take a push's thread
    groups: dict[str, int] = field(default_factory=dict)
    # built after the host is up, on a thread of its own: a part whose construction calls other parts
    # (an ingester joining the ring) would otherwise wait on the host it is being built in
    deferred: bool = False


class BackendHost:
    def __init__(self, parts: list[HostedPart]):
        self._parts: dict[str, Any] = {}
        self._pools: dict[tuple[str, str | None], ThreadPoolExecutor] = {}
        self._built: dict[str, threading.Event] = {}
        self._failed: dict[str, BaseException] = {}
        registry.hosting([part.role for part in parts])
        for part in parts:
            self._pools[(part.role, None)] = ThreadPoolExecutor(max(1, part.threads), thread_name_prefix=part.role)
            for group, threads in part.groups.items():
                self._pools[(part.role, group)] = ThreadPoolExecutor(threads, thread_name_prefix=f"{part.role}-{group}")
            self._built[part.role] = threading.Event()
            if not part.deferred:
                self._build(part)
        later = [part for part in parts if part.deferred]
        if later:
            threading.Thread(target=self._build_later, args=(later,), name="deferred-parts", daemon=True).start()
        freeze_startup_heap()  # the pattern miner's many small objects set off full GCs (gc_freeze.py)
        start_idle_release()  # what a heavy query freed goes back once the host idles (idle_release.py)

    def _build(self, part: HostedPart) -> None:
        self._parts[part.role] = part.factory(*part.args, **part.kwargs)
        self._built[part.role].set()

    def _build_later(self, parts: list[HostedPart]) -> None:
        for part in parts:
            try:
                self._build(part)
            except BaseException as err:  # its callers get the error; Ray restarts nothing for it
                log.exception("building the hosted %s failed", part.role)
                self._failed[part.role] = err
                self._built[part.role].set()

    def roles(self) -> list[str]:
        return list(self._built)

    def ready(self) -> bool:
        return True

    async def _part(self, role: str) -> Any:
        built = self._built.get(role)
        if built is None:
            raise ValueError(f"the backend host runs no {role!r}")
        if not built.is_set():  # a deferred part still being built: its callers wait, as for an actor starting
            await asyncio.get_running_loop().run_in_executor(None, built.wait)
        if role in self._failed:
            raise RuntimeError(f"the hosted {role} failed to start: {self._failed[role]!r}")
        return self._parts[role]

    async def call(self, role: str, method: str, *args: Any, **kwargs: Any) -> Any:
        target = getattr(await self._part(role), method)
        if inspect.iscoroutinefunction(target):
            return await target(*args, **kwargs)
        pool = self._pools.get((role, getattr(target, "__ray_concurrency_group__", None))) or self._pools[(role, None)]
        cancelled = threading.Event()
        future = asyncio.get_running_loop().run_in_executor(
            pool, functools.partial(_run_call, cancelled, target, args, kwargs)
        )
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # ray.cancel of this call: the part's method sees it as a cancelled actor call
            # (calls.call_cancelled) and stops at its next check; nobody waits for its answer
            cancelled.set()
            raise


def _run_call(cancelled: threading.Event, target: Any, args: tuple, kwargs: dict) -> Any:
    HOSTED_CALL.cancelled = cancelled
    try:
        return target(*args, **kwargs)
    finally:
        HOSTED_CALL.cancelled = None


RemoteBackendHost = ray.remote(BackendHost)
