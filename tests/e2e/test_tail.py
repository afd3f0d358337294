"""Tail over a real WebSocket against the running service: replay, live delivery within 1 s, errors."""
from __future__ import annotations

import asyncio
import json
import time
from urllib.parse import urlencode

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

pytestmark = pytest.mark.ray
TENANT = "tail-e2e"


def _ws_url(svc, path: str = "/svc/api/v1/tail", **params: str) -> str:
    return svc.url.replace("http://", "ws://", 1) + path + "?" + urlencode(params)


async def _push(client: httpx.AsyncClient, svc, lines: list[str], app: str = "tail") -> None:
    now = time.time_ns()
    body = {"streams": [{"stream": {"app": app, "env": "e2e"},
                         "values": [[str(now + i), line] for i, line in enumerate(lines)]}]}
    resp = await client.post(svc.url + "/svc/api/v1/push", content=json.dumps(body),
                             headers={"X-Scope-OrgID": TENANT, "Content-Type": "application/json"})
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
