"""CancelOnDisconnect: a client that leaves cancels its handler; a finished response is left alone,
and the body still reaches the app in order."""

from __future__ import annotations

import asyncio

from svclog.serve.disconnect import CancelOnDisconnect


def run(coro):
    return asyncio.run(coro)


class Server:
    """The server's side of one request: body messages, then a disconnect when `leave` is set."""

    def __init__(self, body: list[bytes]):
        self.body = list(body)
        self.leave = asyncio.Event()
        self.sent: list[dict] = []

    async def receive(self) -> dict:
        if self.body:
            chunk = self.body.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(self.body)}
        await self.leave.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict) -> None:
        self.sent.append(message)


def test_a_client_that_leaves_cancels_the_handler():
    async def main():
        server = Server([b""])
        cancelled = asyncio.Event()

        async def slow_app(scope, receive, send):
            await receive()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        call = asyncio.ensure_future(CancelOnDisconnect(slow_app)({"type": "http"}, server.receive, server.send))
        await asyncio.sleep(0.05)
        server.leave.set()
        await asyncio.wait_for(call, 2)  # returns quietly: nobody is there to answer
        return cancelled.is_set()

    assert run(main())


def test_body_reaches_the_app_in_order_and_a_finished_response_is_not_cancelled():
    async def main():
        server = Server([b"ab", b"cd", b"ef"])
        got: list[bytes] = []
        background_done = asyncio.Event()

        async def app(scope, receive, send):
            while True:
                message = await receive()
                got.append(message["body"])
                if not message["more_body"]:
                    break
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"".join(got)})
            server.leave.set()  # the server reports the end once the response is out
            await asyncio.sleep(0.05)  # work after the response (a background task)
            background_done.set()

        await CancelOnDisconnect(app)({"type": "http"}, server.receive, server.send)
        return got, server.sent[-1]["body"], background_done.is_set()

    got, body, background_done = run(main())
    assert got == [b"ab", b"cd", b"ef"] and body == b"abcdef"
    assert background_done


def test_other_scopes_pass_through():
    async def main():
        seen = []

        async def app(scope, receive, send):
            seen.append(scope["type"])

        await CancelOnDisconnect(app)({"type": "websocket"}, None, None)
        return seen

    assert run(main()) == ["websocket"]


def test_a_push_passes_straight_through_and_a_query_on_the_same_path_set_does_not():
    async def main():
        seen = []

        async def app(scope, receive, send):
            seen.append(receive)

        server = Server([b""])
        wrapper = CancelOnDisconnect(app, pushes=frozenset({"/loki/api/v1/push"}))
        await wrapper({"type": "http", "method": "POST", "path": "/loki/api/v1/push"}, server.receive, server.send)
        await wrapper({"type": "http", "method": "GET", "path": "/loki/api/v1/push"}, server.receive, server.send)
        return seen, server.receive

    seen, receive = run(main())
    assert seen[0] == receive  # the server's own receive: no watcher, no queue
    assert seen[1] != receive
