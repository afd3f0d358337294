"""Cancel an HTTP request's handler when its client goes away.

Under Ray Serve the proxy does this for its replicas: a client that leaves cancels the replica's
handler, whose CancelledError stops the query everywhere (issue 17). A gateway serving HTTP itself
(svclog/serve/direct_gateway.py) runs under plain uvicorn, which only reports the disconnect to a
handler that asks for the next message; this ASGI wrapper asks on the handler's behalf.

It is the one reader of the server's `receive`: body messages are handed to the app through a
one-slot queue (the app's reading paces the client's upload, as before), and once the body is in,
it waits for `http.disconnect`. A disconnect before the response is complete cancels the handler;
after it (background work of a sent response) nothing is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from svclog.serve.body_limit import route_path

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]


class CancelOnDisconnect:
    """`pushes`: paths whose POSTs pass straight through. A push's work runs on a thread that no
    cancel stops, so watching for its client cost two tasks and a queue hop per body message
    (~5% of the gateway's GIL time in a sustained ingest) for nothing."""

    def __init__(self, app: ASGIApp, pushes: frozenset[str] = frozenset()):
        self.app = app
        self.pushes = pushes

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (scope.get("method") == "POST" and route_path(scope) in self.pushes):
            await self.app(scope, receive, send)
            return
        messages: asyncio.Queue[Message] = asyncio.Queue(maxsize=1)
        state = {"complete": False, "left": False}

        async def app_send(message: Message) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                state["complete"] = True

        handler = asyncio.ensure_future(self.app(scope, messages.get, app_send))
        watcher = asyncio.ensure_future(self._watch(receive, messages, handler, state))
        try:
            await handler
        except asyncio.CancelledError:
            if not state["left"]:  # this request itself is cancelled (the server stops): pass it on
                handler.cancel()
                raise
            # the client left: its handler stopped, nobody is there to answer
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    @staticmethod
    async def _watch(
        receive: Receive, messages: asyncio.Queue[Message], handler: asyncio.Future, state: dict[str, bool]
    ) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                if not state["complete"] and not handler.done():
                    state["left"] = True
                    handler.cancel()
                # the app may still ask (a streaming response listening for the end): it hears the end
                while True:
                    await messages.put(message)
            await messages.put(message)
