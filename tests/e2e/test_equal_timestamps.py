"""End to end: batches of entries sharing one timestamp, pushed over HTTP with a flush in
between (part in chunks, part in ingesters), read back in push order (forward) and reversed
(backward), whole and cut by a limit inside the tie run."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

pytestmark = pytest.mark.ray
TENANT = "e2e-ties"
T = 1_793_500_000 * 10**9


def _push(svc, labels: dict, lines: list[str], ts: int = T) -> None:
    body = {"streams": [{"stream": labels, "values": [[str(ts), line] for line in lines]}]}
    resp = httpx.post(
        svc.url + "/loki/api/v1/push",
        content=json.dumps(body),
        timeout=30,
        headers={"X-Scope-OrgID": TENANT, "Content-Type": "application/json"},
    )
    assert resp.status_code == 204, resp.text


def _read(svc, query: str, direction: str, limit: int = 1000) -> list[str]:
    resp = httpx.get(
        svc.url + "/loki/api/v1/query_range",
        headers={"X-Scope-OrgID": TENANT},
        timeout=60,
        params={
            "query": query,
            "start": str(T - 10**9),
            "end": str(T + 10**9),
            "direction": direction,
            "limit": str(limit),
        },
    )
    assert resp.status_code == 200, resp.text
    return [v[1] for stream in resp.json()["data"]["result"] for v in stream["values"]]


def test_equal_timestamp_batches_come_back_in_push_order(svc):
    labels = {"app": "ties", "run": uuid.uuid4().hex[:8]}
    # every line shares T; text order is the reverse of push order, so a sort by line would show
    batches = [[f"{chr(ord('z') - b * 4 - i)} batch{b} line{i}" for i in range(4)] for b in range(5)]
    _push(svc, labels, batches[0])
    _push(svc, labels, batches[1])
    _push(svc, labels, batches[1][:2])  # a client retry: true duplicates collapse
    assert httpx.post(svc.url + "/flush", timeout=120).status_code == 204  # batches 0-1 now in a chunk
    _push(svc, labels, batches[2])
    assert httpx.post(svc.url + "/flush", timeout=120).status_code == 204  # a second chunk, bounds (T, T) too
    _push(svc, labels, batches[3])
    _push(svc, labels, batches[4])  # batches 3-4 in the ingesters' heads
    pushed = [line for batch in batches for line in batch]
    query = "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"

    assert _read(svc, query, "forward") == pushed
    assert _read(svc, query, "backward") == pushed[::-1]
    assert _read(svc, query, "forward", limit=6) == pushed[:6]  # the cut falls inside the tie run
    assert _read(svc, query, "backward", limit=6) == pushed[::-1][:6]
    count = httpx.get(
        svc.url + "/loki/api/v1/query",
        headers={"X-Scope-OrgID": TENANT},
        timeout=60,
        params={"query": f"count_over_time({query}[5s])", "time": str(T + 10**9)},
    ).json()
    assert [s["value"][1] for s in count["data"]["result"]] == [str(len(pushed))]
