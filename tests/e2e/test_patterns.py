"""End to end over real HTTP: push -> distributor tee -> pattern actor -> GET /patterns, and every
returned pattern, used as a `|>` filter, selects exactly the lines it counted."""

from __future__ import annotations

import json
import time
import uuid

import httpx
import pytest

pytestmark = pytest.mark.ray
NS = 10**9
BASE = 1_793_491_200 * NS  # 2026-11-01T00:00:00Z, an hour boundary: one step holds every line
SHAPES = {
    "user <_> logged in from <_>": [f"user u{i} logged in from 10.0.{i}.{i}" for i in range(20)],
    "GET /<_> 200 <_>": [f"GET /api/v1/orders/{i} 200 {i * 3}ms" for i in range(15)],
    'level=info msg="cache miss" key=<_> took=<_>': [
        f'level=info msg="cache miss" key=k{i} took={i}ms' for i in range(10)
    ],
    '{"level":"warn","msg":"slow query","ms":<_>}': [
        f'{{"level":"warn","msg":"slow query","ms":{i * 7}}}' for i in range(8)
    ],
}
WORDLESS = ["}", "***", "{}", "}"]  # skipped by the miner, as the reference skips too-few-token lines
SELECTOR = '{app="pattern-e2e"}'


def _get(svc, path: str, tenant: str, params: dict) -> dict:
    resp = httpx.get(svc.url + path, params=params, headers={"X-Scope-OrgID": tenant}, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()


def _patterns(svc, tenant: str) -> dict[str, int]:
    body = _get(
        svc,
        "/svc/api/v1/patterns",
        tenant,
        {"query": SELECTOR, "start": str(BASE), "end": str(BASE + 3600 * NS), "step": "1h"},
    )
    assert body["status"] == "success", body
    return {p["pattern"]: sum(count for _, count in p["samples"]) for p in body["data"]}


def test_pushed_lines_come_back_as_patterns_that_filter_them(svc):
    tenant = f"patterns-{uuid.uuid4().hex[:8]}"
    lines = [line for shape in SHAPES.values() for line in shape] + WORDLESS
    values = [[str(BASE + i * NS), line] for i, line in enumerate(lines)]
    resp = httpx.post(
        svc.url + "/svc/api/v1/push",
        json={"streams": [{"stream": {"app": "pattern-e2e"}, "values": values}]},
        headers={"X-Scope-OrgID": tenant},
        timeout=30,
    )
    assert resp.status_code == 204, resp.text

    expected = {pattern: len(shape) for pattern, shape in SHAPES.items()}
    deadline = time.monotonic() + 30  # the tee flushes every 0.5 s
    found = _patterns(svc, tenant)
    while found != expected and time.monotonic() < deadline:
        time.sleep(0.5)
        found = _patterns(svc, tenant)
    assert found == expected

    for pattern, count in found.items():
        query = f"{SELECTOR} |> {json.dumps(pattern)}"
        data = _get(
            svc,
            "/svc/api/v1/query_range",
            tenant,
            {"query": query, "start": str(BASE), "end": str(BASE + 3600 * NS), "limit": "1000"},
        )["data"]
        selected = sorted(v[1] for stream in data["result"] for v in stream["values"])
        assert len(selected) == count, query
        assert selected == sorted(SHAPES[pattern]), query


def test_patterns_stay_with_their_tenant(svc):
    assert _patterns(svc, f"patterns-other-{uuid.uuid4().hex[:8]}") == {}
