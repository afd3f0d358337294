"""Tail over a real WebSocket against the running service: replay, live delivery within 1 s, errors."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from urllib.parse import urlencode

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.e2e.runtime_overrides import add_overrides

pytestmark = pytest.mark.ray
TENANT = "tail-e2e"
FLOOD_TENANT = "tail-flood"


def _ws_url(svc, path: str = "/svc/api/v1/tail", **params: str) -> str:
    return svc.url.replace("http://", "ws://", 1) + path + "?" + urlencode(params)


async def _push(client: httpx.AsyncClient, svc, lines: list[str], app: str = "tail", tenant: str = TENANT) -> None:
    now = time.time_ns()
    body = {
        "streams": [
            {"stream": {"app": app, "env": "e2e"}, "values": [[str(now + i), line] for i, line in enumerate(lines)]}
        ]
    }
    resp = await client.post(
        svc.url + "/svc/api/v1/push",
        content=json.dumps(body),
        headers={"X-Scope-OrgID": tenant, "Content-Type": "application/json"},
    )
    assert resp.status_code == 204, resp.text


async def _next_message(ws, timeout: float) -> dict:
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


def _lines(message: dict) -> list[str]:
    return [value[1] for stream in message["streams"] for value in stream["values"]]


async def _tail_session(svc) -> list[float]:
    query = '{app="tail"} |= "keep" | logfmt'
    async with httpx.AsyncClient(timeout=30) as client:
        await _push(client, svc, ["msg=keep n=0 replayed", "msg=skip n=0"])
        url = _ws_url(svc, query=query, limit="10")
        async with connect(url, additional_headers={"X-Scope-OrgID": TENANT}, open_timeout=60) as ws:
            replay = await _next_message(ws, 30)
            assert _lines(replay) == ["msg=keep n=0 replayed"]
            assert replay["streams"][0]["stream"] == {"app": "tail", "env": "e2e", "msg": "keep", "n": "0"}
            latencies = []
            for n in range(1, 6):
                sent = time.perf_counter()
                await _push(client, svc, [f"msg=skip n={n}", f"msg=keep n={n}"])
                await _push(client, svc, [f"msg=keep n={n}"], app="other")  # another stream: not selected
                message = await _next_message(ws, 5)
                latencies.append(time.perf_counter() - sent)
                assert _lines(message) == [f"msg=keep n={n}"]
                assert "dropped_entries" not in message
            with pytest.raises(asyncio.TimeoutError):  # nothing else (no duplicates, no other stream)
                await _next_message(ws, 0.5)
    return latencies


def _open_subscriptions(svc) -> int:
    import ray

    return sum(ray.get(h.stats.remote(), timeout=60)["tail_subscriptions"] for h in svc.handles["ingesters"])


def test_entries_pushed_after_connect_arrive_within_one_second(svc):
    latencies = asyncio.run(_tail_session(svc))
    print(f"tail delivery latency (push start -> message): {[round(x * 1000) for x in latencies]} ms")
    assert max(latencies) < 1.0
    # the client went away: every ingester subscription of the session is closed
    deadline = time.time() + 10
    while _open_subscriptions(svc) and time.time() < deadline:
        time.sleep(0.2)
    assert _open_subscriptions(svc) == 0


def test_several_tenants_are_refused_with_400(svc):
    params = {"query": '{app="cron"}'}
    resp = httpx.get(svc.url + "/svc/api/v1/tail", params=params, headers={"X-Scope-OrgID": "acme|globex"})
    assert resp.status_code == 400 and resp.text

    async def handshake(headers: dict, **query: str) -> int:
        try:
            async with connect(_ws_url(svc, "/loki/api/v1/tail", **query), additional_headers=headers):
                return 101
        except InvalidStatus as err:
            return err.response.status_code

    assert asyncio.run(handshake({"X-Scope-OrgID": "acme|globex"}, **params)) == 400
    assert asyncio.run(handshake({"X-Scope-OrgID": TENANT}, delay_for="6", **params)) == 400
    assert asyncio.run(handshake({"X-Scope-OrgID": TENANT}, query='rate({app="cron"}[1m])')) == 400


def test_deprecated_paths_upgrade(svc):
    async def opens(path: str) -> bool:
        url = _ws_url(svc, path, query='{app="nothing-here"}', start=str(time.time_ns()))
        async with connect(url, additional_headers={"X-Scope-OrgID": TENANT}, open_timeout=60):
            return True

    for path in ("/api/legacy/tail", "/api/prom/tail"):
        assert asyncio.run(opens(path))


class RawTailClient:
    """A tail client over a plain socket that reads only when told to (the sans-I/O websockets
    protocol does the framing), so the server meets a genuinely slow reader."""

    def __init__(self, svc, tenant: str, **params: str):
        from websockets.client import ClientProtocol
        from websockets.protocol import State
        from websockets.uri import parse_uri

        host, port = svc.url.removeprefix("http://").split(":")
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)  # a small window, before connect
        self.sock.settimeout(30)
        self.sock.connect((host, int(port)))
        self.protocol = ClientProtocol(parse_uri(_ws_url(svc, **params)), max_size=None)
        request = self.protocol.connect()
        request.headers["X-Scope-OrgID"] = tenant
        self.protocol.send_request(request)
        self.sock.sendall(b"".join(self.protocol.data_to_send()))
        while self.protocol.state is State.CONNECTING:
            data = self.sock.recv(65536)
            assert data, "the server closed the connection during the handshake"
            self.protocol.receive_data(data)
        assert self.protocol.handshake_exc is None, self.protocol.handshake_exc
        self.protocol.events_received()

    def drain(self, quiet_s: float) -> list[dict]:
        """Read until nothing arrives for `quiet_s`; the messages received."""
        self.sock.settimeout(quiet_s)
        messages = []
        while True:
            try:
                data = self.sock.recv(1 << 20)
            except TimeoutError:
                return messages
            if not data:
                return messages
            self.protocol.receive_data(data)
            messages += [
                json.loads(frame.data) for frame in self.protocol.events_received() if frame.opcode.name == "TEXT"
            ]

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def flood_limits(svc):
    """The flood tenant may push far beyond the test service's default ingestion rate."""
    add_overrides(
        svc,
        {
            FLOOD_TENANT: {
                "ingestion_rate_mb": 1024,
                "ingestion_burst_size_mb": 1024,
                "per_stream_rate_limit": "1GB",
                "per_stream_rate_limit_burst": "1GB",
            }
        },
    )
    return svc


def _flood_entries(entry_bytes: int) -> int:
    """Entries that overflow every bounded buffer between the ingester and a client that does not
    read, twice over: the kernel's socket buffers on the way (HAProxy's receive window from the
    gateway autotunes up to tcp_rmem's maximum, 32 MiB here, which once held a whole 150k flood)
    and the ingester's buffer plus the gateway's queue (10k + 4 x 5k entries)."""
    kernel_bytes = 4 << 20, 4 << 20  # defaults if /proc does not tell
    try:
        with open("/proc/sys/net/ipv4/tcp_rmem") as rmem, open("/proc/sys/net/ipv4/tcp_wmem") as wmem:
            kernel_bytes = int(rmem.read().split()[2]), int(wmem.read().split()[2])
    except (OSError, IndexError, ValueError):
        pass
    in_flight = (kernel_bytes[0] + 2 * kernel_bytes[1]) // entry_bytes + 30_000
    return max(150_000, -(-2 * in_flight // 10_000) * 10_000)


def test_a_client_that_does_not_read_gets_drops_not_unbounded_buffering(flood_limits):
    """Back-pressure reaches the ingesters' bounded buffers: the gateway holds no backlog.

    Without it, every pushed entry would wait in memory between the gateway and the socket
    and arrive late but complete; with it, most of the flood is dropped and reported.
    """
    svc = flood_limits
    app, batch, filler = "tail-slow", 10_000, "x" * 300
    pushed = _flood_entries(entry_bytes=len(filler) + 40)
    client = RawTailClient(svc, FLOOD_TENANT, query=f'{{app="{app}"}}', start=str(time.time_ns()))

    async def push_all() -> None:
        async with httpx.AsyncClient(timeout=60) as http:
            for start in range(0, pushed, batch):
                await _push(
                    http, svc, [f"n={n} {filler}" for n in range(start, start + batch)], app=app, tenant=FLOOD_TENANT
                )

    try:
        time.sleep(1.0)  # the session subscribes on every ingester before the push
        asyncio.run(push_all())
        messages = client.drain(quiet_s=5.0)
        received = sum(len(_lines(m)) for m in messages)
        dropped = sum(len(m.get("dropped_entries") or []) for m in messages)
        print(f"tail slow reader: pushed={pushed} received={received} dropped_reported={dropped}")
        # an unbounded backlog would deliver everything late and drop nothing
        assert received < pushed
        assert dropped > 0

        async def push_marker() -> None:
            async with httpx.AsyncClient(timeout=60) as http:
                await _push(http, svc, ["marker after the flood"], app=app, tenant=FLOOD_TENANT)

        asyncio.run(push_marker())  # the session goes on after dropping
        assert any("marker after the flood" in _lines(m) for m in client.drain(quiet_s=3.0))
    finally:
        client.close()
