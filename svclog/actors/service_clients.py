"""Typed clients of the actors the gateway and the ruler call: compactor (delete requests), rulers,
pattern ingester, the querier pool and the query scheduler.

Each wraps a handle (or a name looked up on first use) and calls it through `calls.acall`/`call`,
so its callers (route modules among them) import no Ray and see only their own errors.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ray.exceptions import ObjectLostError

from svclog.actors.answers import inline_answer, unpack_answer
from svclog.actors.calls import (
    CALL_TIMEOUT_S,
    QUERY_TIMEOUT_S,
    ActorUnavailable,
    Handles,
    acall,
    acall_cancelling,
    awaitable,
    call,
    fire,
    translate,
)
from svclog.actors.scheduler_actor import TicketLost
from svclog.logql.engine.guard import QueryLimits, timeout_error
from svclog.model import Matcher

__all__ = [
    "AnswerLost",
    "CompactorClient",
    "PatternClient",
    "PatternFeed",
    "Queriers",
    "RulerClient",
    "SchedulerClient",
]


class CompactorClient:
    """Delete requests (svclog/serve/delete_routes.py)."""

    def __init__(self, handle: Any):
        self.handle = handle

    async def create_delete_request(
        self, tenant: str, query: str | None, start: str | None, end: str | None, max_interval: str | None
    ) -> None:
        await acall(self.handle.create_delete_request, tenant, query, start, end, max_interval)

    async def list_delete_requests(self, tenant: str) -> list[dict]:
        return list(await acall(self.handle.list_delete_requests, tenant))

    async def cancel_delete_request(self, tenant: str, request_id: str | None, force: bool) -> None:
        await acall(self.handle.cancel_delete_request, tenant, request_id, force)


class RulerClient:
    """The rules API (any one ruler answers: they share a store) and the compat views, which are
    merged from every ruler sharing the groups (svclog/serve/ruler_routes.py)."""

    def __init__(self, rulers: Any | Sequence[Any]):
        self._given = list(rulers) if isinstance(rulers, (list, tuple)) else None
        self.first: Any = self._given[0] if self._given else rulers  # a ruler's actor handle

    async def call(self, method: str, *args: Any) -> Any:
        return await acall(getattr(self.first, method), *args)

    async def all_rulers(self) -> list[Any]:
        """A given list as is, else the healthy rulers the first one names (itself when alone)."""
        if self._given is not None:
            return self._given
        return list(await acall(self.first.rulers)) or [self.first]

    async def on_all(self, method: str, *args: Any) -> list[Any]:
        rulers = await self.all_rulers()
        return list(await asyncio.gather(*(acall(getattr(r, method), *args) for r in rulers)))


class PatternClient:
    """The pattern ingester's queries (svclog/serve/pattern_routes.py)."""

    def __init__(self, handle: Any):
        self.handle = handle

    async def patterns(
        self, tenant: str, matchers: list[Matcher], start: int, end: int, step: int, limits: QueryLimits | None = None
    ) -> Any:
        """Waits until the query's deadline; past it, or when the caller is cancelled (the HTTP
        client went away), the call is cancelled in the pattern ingester too."""
        if limits is None or limits.deadline is None:
            return await acall_cancelling(self.handle.patterns, tenant, matchers, start, end, step, limits)
        wait = max(0.0, limits.deadline - time.time())
        try:
            return await acall_cancelling(
                self.handle.patterns, tenant, matchers, start, end, step, limits, timeout=wait
            )
        except TimeoutError:  # our wait ran out first: the same error the pattern ingester's guard raises
            raise timeout_error(limits.timeout_ns) from None


class PatternFeed:
    """The distributor's tee into the pattern ingester (svclog/distributor/tee.py): batches sent
    without waiting; the pattern ingester logs what it fails to mine."""

    def __init__(self, handle: Any):
        self.handle = handle

    def __call__(self, batches: list) -> None:
        fire(self.handle.push_batches, batches)


class Queriers:
    """The querier actors, called round robin; a call the querier cannot take (missing, dead or
    restarting: nothing of it runs) goes to the next one, once around the pool. A call unanswered
    in time is not sent again: a copy would compete with the first for the same slots."""

    RETRY_PAUSE_S = 0.2

    def __init__(self, names: Sequence[str], handles: Handles | None = None):
        self.names = list(names)
        self._handles = handles or Handles()
        self._next = itertools.count()

    def _pick(self, prefer: Sequence[str] | None = None) -> Any:
        names = [n for n in self.names if n in prefer] if prefer else self.names
        names = names or self.names
        return self._handles.get(names[next(self._next) % len(names)])

    def call(self, method: str, *args: Any, timeout: float = QUERY_TIMEOUT_S) -> Any:
        """Blocking (the ruler's evaluation thread)."""
        last: Exception | None = None
        for _ in range(len(self.names) + 1):
            try:
                querier = self._pick()
                return call(getattr(querier, method), *args, timeout=timeout)
            except ActorUnavailable as err:
                last = err
        raise ActorUnavailable(f"no querier could answer: {last}")

    async def acall(
        self,
        method: str,
        *args: Any,
        timeout: float = QUERY_TIMEOUT_S,
        prefer: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> Any:
        """The call's answer. Past `timeout`, or when the awaiting task is cancelled (the HTTP
        client went away), the call is cancelled in the querier too and CallTimeout (or the
        cancellation) is raised. `prefer`: the queriers to try first (round robin among them);
        a retry goes to any."""
        last: Exception | None = None
        for attempt in range(len(self.names) + 1):
            try:
                querier = self._pick(prefer if attempt == 0 else None)
                return await acall_cancelling(getattr(querier, method), *args, timeout=timeout, **kwargs)
            except ActorUnavailable as err:
                last = err
                await asyncio.sleep(self.RETRY_PAUSE_S)
        raise ActorUnavailable(f"no querier could answer: {type(last).__name__}")


class AnswerLost(Exception):
    """A sub-query's ticket or answer is gone (its scheduler restarted, or its querier died after
    answering): queue the sub-query again (reads are idempotent)."""


class SchedulerClient:
    """The query scheduler (svclog/actors/scheduler_actor.py), looked up on first use and again
    after it was lost. Errors: ActorUnavailable when it does not answer, AnswerLost, and the
    errors its queue raises (limits, the query's own timeout) as raised."""

    def __init__(self, name: str, handles: Handles | None = None):
        self.name = name
        self._handles = handles or Handles()

    def _scheduler(self) -> Any:
        return self._handles.get(self.name)

    def forget(self) -> None:
        """Look the scheduler up anew next time (one created anew is not the one restarted in place)."""
        self._handles.drop(self.name)

    async def enqueue(self, key: str, actor_path: tuple, items: list, deadline: float | None) -> list[int]:
        return list(await acall(self._scheduler().enqueue, key, actor_path, items, deadline, timeout=CALL_TIMEOUT_S))

    async def result(
        self, ticket: int | None, wait: float, before_fetch: Callable[[], Awaitable[None]] | None = None
    ) -> Any:
        """The sub-query's answer, waiting up to `wait` seconds for it; `before_fetch()` is awaited
        before a large answer (one in the object store) is fetched and deserialised here."""
        if ticket is None:
            raise AnswerLost("no ticket")
        try:
            box = await acall(self._scheduler().result, ticket, wait, timeout=None)
        except TicketLost as err:
            raise AnswerLost(str(err)) from None
        # a large answer is an object its querier owns: fetched here, so one lost with a querier
        # that died right after answering is queued again (small ones come inline: answers.py)
        if before_fetch is not None and not inline_answer(box):
            await before_fetch()
        try:
            return await unpack_answer(box, awaitable)
        except ObjectLostError as err:  # OwnerDiedError included
            raise AnswerLost(str(err).splitlines()[0]) from None
        except Exception as err:  # noqa: BLE001 - re-raised as the caller's error
            raise translate(err, "fetching an answer", None) from None

    def cancel(self, tickets: list[int]) -> None:
        """Drop the tickets, not waiting (best effort: the scheduler may be gone)."""
        try:
            fire(self._scheduler().cancel, tickets)
        except ValueError:
            pass
