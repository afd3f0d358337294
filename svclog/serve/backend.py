"""What the push, query and tail handlers need of the write and read paths (`Backend`), and its Ray
Serve implementation: the distributor and query frontend hosted in this replica, and actor calls.

tests/fuzz/harness.py's InProcessBackend is the other implementation (plain objects, no Ray);
tests/serve/test_backend_protocol.py keeps both in step with the protocol.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from svclog.frontend.params import RangeRequest
from svclog.model import PushStream
from svclog.serve.errors import ErrorReply


class Ingesters(Protocol):
    """The ingester pool's fan-out (svclog/actors/clients.IngesterPool, built by the Serve shell)."""

    def call_all(self, method: str, *args: Any) -> list: ...


class Backend(Protocol):
    async def push(self, tenant: str, body: bytes, content_type: str | None, content_encoding: str | None) -> Any:
        """Decode and ingest a push body; the outcome carries `lines` and `bytes` when known."""
        ...

    async def push_decoded(self, tenant: str, streams: list[PushStream]) -> Any:
        """Ingest streams already decoded (OTLP)."""
        ...

    async def query(self, tenants: list[str], request: RangeRequest, actor_path: Sequence[str] = ()) -> dict: ...

    async def series(self, tenants: list[str], selectors: list[str], start: int, end: int) -> list[dict]: ...

    async def label_names(self, tenants: list[str], start: int, end: int, query: str | None) -> list[str]: ...

    async def label_values(
        self, tenants: list[str], name: str, start: int, end: int, query: str | None
    ) -> list[str]: ...

    async def index_stats(self, tenants: list[str], query: str, start: int, end: int) -> dict: ...

    async def volume(
        self,
        tenants: list[str],
        query: str,
        start: int,
        end: int,
        limit: int,
        targets: tuple[str, ...],
        aggregate_by: str,
        step: int | None,
    ) -> Any: ...

    async def ingester_stats(self) -> list[dict]: ...

    async def give_way(self) -> None:
        """Wait while small queries are in flight, briefly (a large answer's body, between pieces)."""
        ...


def _raise_if_error(reply: Any) -> Any:
    if isinstance(reply, ErrorReply):
        reply.raise_()
    return reply


class ServeBackend:
    def __init__(self, distributor: Any, frontend: Any, ingesters: Ingesters):
        self.distributor = distributor  # deployments.HostedDistributor (None when the target has none)
        self.frontend = frontend  # deployments.HostedFrontend (likewise)
        self.ingesters = ingesters

    async def push(self, tenant: str, body: bytes, content_type: str | None, content_encoding: str | None) -> Any:
        return _raise_if_error(await self.distributor.push(tenant, body, content_type, content_encoding))

    async def push_decoded(self, tenant: str, streams: list[PushStream]) -> Any:
        return _raise_if_error(await self.distributor.push_decoded(tenant, streams))

    async def query(self, tenants: list[str], request: RangeRequest, actor_path: Sequence[str] = ()) -> dict:
        return _raise_if_error(await self.frontend.query(tenants, request, actor_path))

    async def give_way(self) -> None:
        if self.frontend is not None:
            await self.frontend.foreground.pause_async()

    async def series(self, tenants: list[str], selectors: list[str], start: int, end: int) -> list[dict]:
        return _raise_if_error(await self.frontend.metadata("series", tenants, selectors, start, end))

    async def label_names(self, tenants: list[str], start: int, end: int, query: str | None) -> list[str]:
        return _raise_if_error(await self.frontend.metadata("label_names", tenants, start, end, query))

    async def label_values(self, tenants: list[str], name: str, start: int, end: int, query: str | None) -> list[str]:
        return _raise_if_error(await self.frontend.metadata("label_values", tenants, name, start, end, query))

    async def index_stats(self, tenants: list[str], query: str, start: int, end: int) -> dict:
        return _raise_if_error(await self.frontend.metadata("index_stats", tenants, query, start, end))

    async def volume(
        self,
        tenants: list[str],
        query: str,
        start: int,
        end: int,
        limit: int,
        targets: tuple[str, ...],
        aggregate_by: str,
        step: int | None,
    ) -> Any:
        args = (query, start, end, limit, targets, aggregate_by, step)
        return _raise_if_error(await self.frontend.metadata("volume", tenants, *args))

    async def ingester_stats(self) -> list[dict]:
        return await asyncio.to_thread(self.ingesters.call_all, "stats")
