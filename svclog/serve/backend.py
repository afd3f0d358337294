"""The Ray Serve implementation of the handlers' Backend: the frontend and distributor hosted in
this replica, and actor calls."""

from __future__ import annotations

import asyncio

from svclog.actors.clients import IngesterPool
from svclog.serve.errors import ErrorReply


def _raise_if_error(reply):
    if isinstance(reply, ErrorReply):
        reply.raise_()
    return reply


class ServeBackend:
    def __init__(self, distributor, frontend, ingesters: IngesterPool):
        self.distributor = distributor
        self.frontend = frontend
        self.ingesters = ingesters

    async def push(self, tenant, body, content_type, content_encoding):
        return _raise_if_error(await self.distributor.push(tenant, body, content_type, content_encoding))

    async def query(self, tenants, request, actor_path=()):
        return _raise_if_error(await self.frontend.query(tenants, request, actor_path))

    async def series(self, tenants, selectors, start, end):
        return _raise_if_error(await self.frontend.metadata("series", tenants, selectors, start, end))

    async def label_names(self, tenants, start, end, query):
        return _raise_if_error(await self.frontend.metadata("label_names", tenants, start, end, query))

    async def label_values(self, tenants, name, start, end, query):
        return _raise_if_error(await self.frontend.metadata("label_values", tenants, name, start, end, query))

    async def index_stats(self, tenants, query, start, end):
        return _raise_if_error(await self.frontend.metadata("index_stats", tenants, query, start, end))

    async def volume(self, tenants, *args):
        return _raise_if_error(await self.frontend.metadata("volume", tenants, *args))

    async def ingester_stats(self):
        return await asyncio.to_thread(self.ingesters.call_all, "stats")
