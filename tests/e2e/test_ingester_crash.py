"""Kill -9 an ingester process during a sustained push: every acknowledged entry survives."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import httpx
import pytest

pytestmark = pytest.mark.ray
TENANT = "crash-test"
BASE = 1_793_491_200 * 10**9


def _pusher(url: str, stop: threading.Event, acked: list[int], refused: list[int], parts: int = 4) -> None:
    """Pushes of `parts` streams each (four spread over both ingesters: actor calls; one stream goes
    to one ingester, over the gateway's push channel to it)."""
    seq = 0
    app = "crash" if parts > 1 else "crash-one"
    size = 50 if parts > 1 else 5  # small pushes on one stream: still pushing when the ingesters die
    with httpx.Client(timeout=30) as client:
        while not stop.is_set() and seq < 20_000:
            batch = list(range(seq, seq + size))
            body = {
                "streams": [
                    {
                        "stream": {"app": app, "part": str(p)},
                        "values": [[str(BASE + i), f"entry {i}"] for i in batch if i % parts == p],
                    }
                    for p in range(parts)
                ]
            }
            try:
                resp = client.post(
                    url + "/svc/api/v1/push",
                    content=json.dumps(body),
                    headers={"X-Scope-OrgID": TENANT, "Content-Type": "application/json"},
                )
                (acked if resp.status_code == 204 else refused).extend(batch)
            except httpx.HTTPError:
                refused.extend(batch)
            seq += size


def _count(url: str, app: str = "crash") -> set[int]:
    found: set[int] = set()
    resp = httpx.get(
        url + "/svc/api/v1/query_range",
        timeout=60,
        headers={"X-Scope-OrgID": TENANT},
        params={
            "query": f'{{app="{app}"}}',
            "start": str(BASE),
            "end": str(BASE + 10**9),
            "limit": "100000",
            "direction": "forward",
        },
    )
    assert resp.status_code == 200, resp.text
    for stream in resp.json()["data"]["result"]:
        found.update(int(line.split()[1]) for _, line in stream["values"])
    return found


def _channel_metrics(url: str) -> tuple[float, float]:
    """(pushes carried by push channels, channels broken) from the gateway's /metrics."""
    text = httpx.get(url + "/metrics", timeout=10).text
    values = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in ("svc_distributor_channel_pushes_total", "svc_distributor_channels_broken_total"):
            values[name] = float(value)
    return values["svc_distributor_channel_pushes_total"], values["svc_distributor_channels_broken_total"]


def test_kill_ingester_mid_push_loses_no_acknowledged_entry(svc):
    stop = threading.Event()
    acked: list[int] = []
    refused: list[int] = []
    acked_one: list[int] = []
    refused_one: list[int] = []
    thread = threading.Thread(target=_pusher, args=(svc.url, stop, acked, refused), daemon=True)
    thread_one = threading.Thread(target=_pusher, args=(svc.url, stop, acked_one, refused_one, 1), daemon=True)
    thread.start()
    thread_one.start()
    time.sleep(1.5)
    channel_pushes, broken_before = _channel_metrics(svc.url)
    assert channel_pushes > 0, "no push went over a push channel"
    victims = [svc.ingester_pid(i) for i in range(len(svc.handles["ingesters"]))]
    for pid in victims:  # every replica holder dies: only the WAL can bring the entries back
        os.kill(pid, signal.SIGKILL)
    time.sleep(3)
    stop.set()
    thread.join(timeout=60)
    thread_one.join(timeout=60)
    deadline = time.time() + 60
    while time.time() < deadline:  # the actors restart and replay their WAL
        try:
            new = [svc.ingester_pid(i) for i in range(len(victims))]
            if all(n != o for n, o in zip(new, victims)):
                break
        except Exception:
            time.sleep(0.5)
    found = _count(svc.url)
    found_one = _count(svc.url, "crash-one")
    print(f"\nacked={len(acked)} refused={len(refused)} found={len(found)} acked_found={len(set(acked) & found)}")
    print(f"one stream: acked={len(acked_one)} refused={len(refused_one)} found={len(found_one)}")
    assert acked, "no push was acknowledged"
    assert set(acked) <= found, f"{len(set(acked) - found)} acknowledged entries lost"
    assert acked_one, "no one-stream push was acknowledged"
    assert set(acked_one) <= found_one, f"{len(set(acked_one) - found_one)} entries acknowledged over a channel lost"
    # the channel to the killed ingester broke; pushes went on (actor calls, then a new channel)
    assert _channel_metrics(svc.url)[1] > broken_before
