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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import ray

from svclog.actors import registry
from svclog.actors.gc_freeze import freeze_startup_heap


@dataclass(frozen=True)
class HostedPart:
    role: str  # the actor name callers know the part by
    factory: type  # its actor class (a plain class; `ray.remote` is not applied)
    args: tuple = ()
    threads: int = 1  # blocking calls that may run at once
    num_cpus: float = 0.05
    kwargs: dict = field(default_factory=dict)


class BackendHost:
    def __init__(self, parts: list[HostedPart]):
        self._parts: dict[str, Any] = {}
        self._pools: dict[str, ThreadPoolExecutor] = {}
        registry.hosting([part.role for part in parts])
        for part in parts:
            self._parts[part.role] = part.factory(*part.args, **part.kwargs)
            self._pools[part.role] = ThreadPoolExecutor(max(1, part.threads), thread_name_prefix=part.role)
        freeze_startup_heap()  # the pattern miner's many small objects set off full GCs (gc_freeze.py)

    def roles(self) -> list[str]:
        return list(self._parts)

    def ready(self) -> bool:
        return True

    async def call(self, role: str, method: str, *args: Any, **kwargs: Any) -> Any:
        try:
            target = getattr(self._parts[role], method)
        except KeyError:
            raise ValueError(f"the backend host runs no {role!r}") from None
        if inspect.iscoroutinefunction(target):
            return await target(*args, **kwargs)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pools[role], functools.partial(target, *args, **kwargs))


RemoteBackendHost = ray.remote(BackendHost)
