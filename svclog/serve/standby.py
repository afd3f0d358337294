"""The application Serve runs while svclog starts or stops: every route answers 503 with Retry-After.

Serve opens the HTTP port before any application is deployed, and between the real application
going and the port closing it would answer 404, which log shippers treat as final and drop
their batches. `launch` deploys this standby under the real application's name and route
prefix first (and again on a clean stop): a redeploy swaps replicas in place, so the route
never disappears and a request answers 503 (retryable) until the real gateway is up.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from starlette.responses import PlainTextResponse

RETRY_AFTER_S = "1"
MESSAGES = {
    "starting": "svclog is starting, please try again shortly",
    "stopping": "svclog is stopping, please try again shortly",
}
# The ingress deployment's name in both applications, so the swap is an in-place update of it.
GATEWAY_DEPLOYMENT = "gateway"


class StandbyApp:
    """A plain ASGI app: 503 + Retry-After for HTTP, a 503 denial (or 1013 close) for WebSockets."""

    def __init__(self, state: str):
        self.message = MESSAGES[state] + "\n"

    def response(self) -> PlainTextResponse:
        return PlainTextResponse(self.message, status_code=503, headers={"Retry-After": RETRY_AFTER_S})

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await self.response()(scope, receive, send)
        elif scope["type"] == "websocket":
            await receive()  # websocket.connect
            if "websocket.http.response" in scope.get("extensions", {}):
                response = self.response()
                await send(
                    {
                        "type": "websocket.http.response.start",
                        "status": response.status_code,
                        "headers": response.raw_headers,
                    }
                )
                await send({"type": "websocket.http.response.body", "body": response.body})
            else:
                await send({"type": "websocket.close", "code": 1013, "reason": self.message.strip()})
        elif scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return


class StandbySwitch:
    """Whether this gateway replica stands by: `app` is the StandbyApp it answers with, or None
    while it serves (the gateway deployment holds one and its app's middleware reads it)."""

    def __init__(self) -> None:
        self.app: StandbyApp | None = None

    def enter(self, state: str) -> None:
        self.app = StandbyApp(state)

    def leave(self) -> None:
        self.app = None


def standby_application(state: str) -> Any:
    """The bound Serve application answering 503 for `state` ("starting" or "stopping")."""
    from ray import serve

    asgi = StandbyApp(state)

    class Standby:
        pass

    # serve.deployment(**options)(cls): Ray's overloads type the (cls, **options) form as the decorator
    deployment = serve.deployment(
        name=GATEWAY_DEPLOYMENT,
        num_replicas=1,
        # no CPU: it must never keep the real gateway from being scheduled on a small node;
        # a short graceful stop so the swap to the real gateway does not wait on it
        ray_actor_options={"num_cpus": 0},
        graceful_shutdown_timeout_s=1.0,
        graceful_shutdown_wait_loop_s=0.2,
    )(serve.ingress(asgi)(Standby))
    return deployment.bind()
