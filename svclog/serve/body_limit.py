"""A cap on request bodies for every route, as one plain ASGI middleware.

A declared `Content-Length` over the cap is answered 413 before the body is read; a
streamed (chunked) body is cut off once it passes the cap and answered 413 the same way.
Routes the cap function exempts (`None`: push, which caps and reports on its own) pass
through untouched. Plain ASGI rather than Starlette's http middleware, which re-streams
every body through extra tasks (see OnlyExposedEndpoints in deployments.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


def route_path(scope: Scope) -> str:
    """The request's path below the app's root path (as routes are matched)."""
    path, root = scope["path"], scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


async def _reject(send: Send, message: str) -> None:
    body = (message + "\n").encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                # the rest of the body is never read: the connection cannot carry another request
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """413 for bodies over `limit_for(path)` bytes; `limit_for` returns None for exempt routes."""

    def __init__(self, app: ASGIApp, limit_for: Callable[[str], int | None]):
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = route_path(scope)
        limit = self.limit_for(path)
        if limit is None:
            await self.app(scope, receive, send)
            return
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            await _reject(send, f"request body too large: {declared} bytes > limit {limit} for {path}")
            return
        await _Capped(self.app, limit, path)(scope, receive, send)


class _Capped:
    """One request whose streamed body is counted: past the cap the app sees a disconnect,
    whatever it would answer is dropped, and the client gets the 413."""

    def __init__(self, app: ASGIApp, limit: int, path: str):
        self.app, self.limit, self.path = app, limit, path
        self.received = 0
        self.over = False
        self.started = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def counted_receive() -> Message:
            if self.over:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                self.received += len(message.get("body", b""))
                if self.received > self.limit:
                    self.over = True
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            if self.over and not self.started:
                return  # the app's answer to the cut-off body; the 413 replaces it
            if message["type"] == "http.response.start":
                self.started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except Exception:
            if not self.over:
                raise
        if self.over and not self.started:
            await _reject(send, f"request body too large: more than {self.limit} bytes for {self.path}")
