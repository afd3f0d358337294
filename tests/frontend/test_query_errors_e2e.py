"""Errors raised while a query runs on a querier come back as the user's message (no Ray traceback)."""

from __future__ import annotations

import json
import time

import httpx
import pytest

pytestmark = pytest.mark.ray
TENANT = "errors-e2e"


def _get(svc, path, **params):
    return httpx.get(svc.url + path, params=params, headers={"X-Scope-OrgID": TENANT}, timeout=60)


def _push(svc, lines: list[str], now: int) -> None:
    values = [[str(now - 1_000_000_000 + i), line] for i, line in enumerate(lines)]
    body = json.dumps({"streams": [{"stream": {"app": "api"}, "values": values}]})
    resp = httpx.post(
        svc.url + "/svc/api/v1/push",
        content=body,
        timeout=30,
        headers={"X-Scope-OrgID": TENANT, "Content-Type": "application/json"},
    )
    assert resp.status_code == 204, resp.text


@pytest.mark.parametrize(
    "query, message",
    [
        # the reference names the line filter stage that failed to build
        (
            '{app="api"} |= ip("300.0.0.1")',
            'parse error : stage \'|= ip("300.0.0.1")\' : ip: invalid pattern: "300.0.0.1"',
        ),
        ('{app="api"} | line_format "{{.a"', None),
    ],
)
def test_remote_parse_errors_are_plain_messages(svc, query, message):
    resp = _get(svc, "/svc/api/v1/query_range", query=query, since="1h")
    assert resp.status_code == 400, resp.text
    assert "ray::" not in resp.text and "File " not in resp.text and "Traceback" not in resp.text
    if message is not None:
        assert resp.text.strip() == message


def test_unwrap_errors_and_honest_stats(svc):
    now = time.time_ns()
    _push(svc, ["msg=hello", "msg=hello again", "msg=bye"], now)
    resp = _get(svc, "/svc/api/v1/query", query='sum_over_time({app="api"}|logfmt|unwrap msg[5m])', time=str(now))
    assert resp.status_code in (200, 400), resp.text
    assert "ray::" not in resp.text and "File " not in resp.text
    resp = _get(
        svc,
        "/svc/api/v1/query_range",
        query='{app=~".+"} |= "hello"',
        start=str(now - 3600 * 10**9),
        end=str(now + 10**9),
    )
    assert resp.status_code == 200, resp.text
    ingester = resp.json()["data"]["stats"]["ingester"]
    assert ingester["totalLinesSent"] == 2
    assert ingester["totalReached"] <= ingester["totalBatches"]
    assert ingester["totalReached"] <= 3  # distinct ingesters, not a sum over sub-queries
