"""Push requests straight to their handler, past the web framework's routing layers.

A push is the one request that arrives hundreds of times a second, and on a gateway holding one
GIL every layer it crosses is time no other push gets. FastAPI's stack between our middlewares and
the handler (exception middleware, exit-stack middleware, router, route, request/response wrapper,
dependency solving) was ~12% of the gateway's GIL time in a sustained ingest (docs/architecture.md,
session 17). This plain ASGI middleware sits innermost, under the body cap, the standby switch and
the tenant-header check, and hands a POST to a push path to the push handler itself; every other
request, and any other method on those paths, goes through the framework as before. The handler
answers its own errors (SvcError -> 4xx), so the answers are the framework's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from starlette.requests import Request
from starlette.responses import Response

from svclog.serve.body_limit import ASGIApp, Receive, Scope, Send, route_path

PushHandler = Callable[[Request], Awaitable[Response]]


class PushLane:
    def __init__(self, app: ASGIApp, handler: PushHandler, paths: Iterable[str]):
        self.app = app
        self.handler = handler
        self.paths = frozenset(paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or route_path(scope) not in self.paths:
            await self.app(scope, receive, send)
            return
        response = await self.handler(Request(scope, receive))
        await response(scope, receive, send)
