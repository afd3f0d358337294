"""Refuse a request that names its tenant more than once.

Handlers read the first `X-Scope-OrgID`; a proxy that appends its own header instead of
replacing the client's would then let the client's win. Refusing any request with several
(400, before a route runs) is the proxy-safe default, on every route including the tail's
WebSocket.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import PlainTextResponse

HEADER = b"x-scope-orgid"
MESSAGE = (
    "bad request: more than one X-Scope-OrgID header; send exactly one "
    "(several tenants go in one header, separated by '|')\n"
)


def org_id_headers(scope: dict) -> int:
    return sum(1 for name, _ in scope.get("headers", ()) if name.lower() == HEADER)


class SingleOrgIdHeader:
    """A plain ASGI middleware (no body re-streaming on the push path)."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and org_id_headers(scope) > 1:
            response = PlainTextResponse(MESSAGE, status_code=400)
            if scope["type"] == "http":
                await response(scope, receive, send)
            elif "websocket.http.response" in scope.get("extensions", {}):
                await receive()  # websocket.connect
                await send({"type": "websocket.http.response.start", "status": 400, "headers": response.raw_headers})
                await send({"type": "websocket.http.response.body", "body": response.body})
            else:
                await receive()
                await send({"type": "websocket.close", "code": 1008, "reason": MESSAGE.strip()[:120]})
            return
        await self.app(scope, receive, send)
