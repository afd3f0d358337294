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


def _pusher(url: str, stop: threading.Event, acked: list[int], refused: list[int]) -> None:
    seq = 0
    with httpx.Client(timeout=30) as client:
        while not stop.is_set() and seq < 20_000:
            batch = list(range(seq, seq + 50))
            body = {
                "streams": [
                    {
                        "stream": {"app": "crash", "part": str(p)},
                        "values": [[str(BASE + i), f"entry {i}"] for i in batch if i % 4 == p],
                    }
                    for p in range(4)
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
            seq += 50


def _count(url: str) -> set[int]:
    found: set[int] = set()
    resp = httpx.get(
        url + "/svc/api/v1/query_range",
        timeout=60,
        headers={"X-Scope-OrgID": TENANT},
        params={
            "query": '{app="crash"}',
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


def test_kill_ingester_mid_push_loses_no_acknowledged_entry(svc):
    stop = threading.Event()
    acked: list[int] = []
    refused: list[int] = []
    thread = threading.Thread(target=_pusher, args=(svc.url, stop, acked, refused), daemon=True)
    thread.start()
    time.sleep(1.5)
    victims = [svc.ingester_pid(i) for i in range(len(svc.handles["ingesters"]))]
    for pid in victims:  # every replica holder dies: only the WAL can bring the entries back
        os.kill(pid, signal.SIGKILL)
    time.sleep(3)
    stop.set()
    thread.join(timeout=60)
    deadline = time.time() + 60
    while time.time() < deadline:  # the actors restart and replay their WAL
        try:
            new = [svc.ingester_pid(i) for i in range(len(victims))]
            if all(n != o for n, o in zip(new, victims)):
                break
        except Exception:
            time.sleep(0.5)
    found = _count(svc.url)
    print(f"\nacked={len(acked)} refused={len(refused)} found={len(found)} acked_found={len(set(acked) & found)}")
    assert acked, "no push was acknowledged"
    assert set(acked) <= found, f"{len(set(acked) - found)} acknowledged entries lost"
