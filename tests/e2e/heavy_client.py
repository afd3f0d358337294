"""Tenant A's heavy sequence for test_heavy_tenant.py, looped in a process of its own.

In the test's process, A's threads reading 20 MB answers held up B's client at the test's own
GIL: B's latencies then measured the test as much as the service (session 38, the issue's
scenario driven from one process: 20 ms of a 32 ms sample passed outside the server's
handling). A separate process keeps B's figures the service's. Only httpx here: a spawned
process imports this module, not Ray.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

QUERY_RANGE = "/loki/api/v1/query_range"
QUANTILE = 'quantile_over_time(0.99, {env=~".+"} | logfmt | unwrap bytes [1h]) by (trace_id)'
FINE_COUNT = 'count_over_time({env=~".+"}[1m])'
SELECT_ALL = '{env=~".+"}'
JSON_COUNT = 'count_over_time({env=~".+"} | json | __error__="" [1m])'


def heavy_round(
    client: httpx.Client, pool: ThreadPoolExecutor, url: str, tenant: str, window: tuple[int, int], failures: list
) -> list[int]:
    """The outside tester's heavy sequence once: a per-trace quantile over every line, a
    fine-stepped count over every stream, four concurrent 100000-line selects, four concurrent
    `| json` counts. The HTTP statuses; server errors other than the timeout's 504 (and broken
    connections, 0) also go to `failures` with their bodies."""
    start, end = (str(t) for t in window)

    def one(query: str, **params: str) -> int:
        began = time.perf_counter()
        try:
            resp = client.get(
                url + QUERY_RANGE,
                headers={"X-Scope-OrgID": tenant},
                params={"query": query, "start": start, "end": end, **params},
                timeout=120,
            )
            status, body = resp.status_code, resp.text
        except httpx.HTTPError as err:
            status, body = 0, repr(err)
        if os.environ.get("HEAVY_VERBOSE"):
            took = time.perf_counter() - began
            print(f"  heavy {status} {took:.1f}s {query[:40]} {body[:300] if status != 200 else ''}")
        if status >= 500 and status != 504 or status == 0:
            failures.append((status, query, body[:300]))
        return status

    statuses = [one(QUANTILE, step="60"), one(FINE_COUNT, step="5")]
    statuses += pool.map(lambda _: one(SELECT_ALL, limit="100000"), range(4))
    statuses += pool.map(lambda _: one(JSON_COUNT, step="60"), range(4))
    return statuses


def loop_heavy_rounds(url: str, tenant: str, window: tuple[int, int], started: Any, stop: Any, results: Any) -> None:
    """A process's target: sets `started` (an Event) as its first round begins, loops rounds
    until `stop` is set, then puts (statuses, failures, rounds) onto `results` (a Queue)."""
    statuses: list[int] = []
    failures: list[tuple[int, str, str]] = []
    rounds = 0
    with httpx.Client() as client, ThreadPoolExecutor(4) as pool:
        started.set()
        while not stop.is_set():
            statuses.extend(heavy_round(client, pool, url, tenant, window, failures))
            rounds += 1
    results.put((statuses, failures, rounds))
