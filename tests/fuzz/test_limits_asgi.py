"""Limits through the in-process gateway (no Ray): runtime overrides per tenant, stream limits, tenant IDs."""

from __future__ import annotations

import json

import pytest

from svclog.ingester.instance import local_stream_limit
from tests.fuzz.harness import Client, InProcessBackend, build_app, harness_config

BASE = 1_793_491_200 * 10**9


@pytest.fixture
def client(tmp_path):
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text(
        "overrides:\n"
        "  slow: {ingestion_rate_mb: 0.001, ingestion_burst_size_mb: 0.002}\n"
        "  few-streams: {max_global_streams_per_user: 2}\n"
        "  one-stream: {max_streams_per_user: 1, max_global_streams_per_user: 0}\n"
    )
    cfg = harness_config(str(tmp_path), f"-runtime-config.file={overrides}", "-limits.reject-old-samples=false")
    c = Client(build_app(InProcessBackend(cfg, str(tmp_path), num_ingesters=2)))
    yield c
    c.close()


def _push(c, tenant, streams):
    body = json.dumps({"streams": streams}).encode()
    return c.request(
        "push",
        "POST",
        "/loki/api/v1/push",
        content=body,
        headers={"X-Scope-OrgID": tenant, "Content-Type": "application/json"},
    )


def _stream(n, line="x"):
    return {"stream": {"app": "a", "n": str(n)}, "values": [[str(BASE + n), line]]}


@pytest.mark.parametrize(
    "local,global_,healthy,rf,expected",
    [
        (0, 0, 3, 3, 0),  # both off
        (0, 5000, 3, 3, 5000),  # 5000 / 3 * 3
        (0, 5000, 6, 3, 2500),
        (0, 5000, 4, 1, 1250),
        (100, 5000, 4, 1, 100),  # the smaller non-zero limit wins
        (0, 5000, 0, 3, 0),  # no healthy ingester known: the global limit is skipped
        (7, 5000, 0, 3, 7),
    ],
)
def test_local_stream_limit_formula(local, global_, healthy, rf, expected):
    assert local_stream_limit(local, global_, healthy, rf) == expected


def test_rate_limit_applies_only_to_the_overridden_tenant(client):
    resp = _push(client, "slow", [_stream(1, "x" * 4000)])
    assert resp.status_code == 429
    assert resp.text.startswith("Ingestion rate limit exceeded for user slow (limit: 1048 bytes/sec)")
    assert _push(client, "other", [_stream(1, "x" * 4000)]).status_code == 204


def test_global_stream_limit_per_ingester(client):
    # 2 global / 2 ingesters * rf 1 = 1 stream per ingester: at most 2 streams in all
    statuses = [_push(client, "few-streams", [_stream(n)]).status_code for n in range(10)]
    assert statuses.count(204) <= 2 and set(statuses) == {204, 429}
    resp = _push(client, "few-streams", [_stream(n) for n in range(10, 13)])
    assert resp.status_code == 429
    assert resp.text.startswith('Maximum active stream limit exceeded when trying to create stream {app="a", n=')
    assert resp.text.rstrip().endswith("user: 'few-streams'")


def test_local_stream_limit_keeps_known_streams(client):
    statuses = [_push(client, "one-stream", [_stream(n)]).status_code for n in range(6)]
    accepted = [n for n, status in enumerate(statuses) if status == 204]
    assert 1 <= len(accepted) <= 2 and 429 in statuses
    assert _push(client, "one-stream", [_stream(accepted[0], "again")]).status_code == 204


@pytest.mark.parametrize(
    "tenant,status",
    [
        (None, 401),
        (".", 400),
        ("..", 400),
        ("a" * 151, 400),
        ("a b", 400),
        ("t\u00e9", 400),
        ("a|..", 400),
        ("a" * 150, 204),
        ("x!-_.*'()", 204),
    ],
)
def test_tenant_ids_on_push_and_query(client, tenant, status):
    headers = {} if tenant is None else {"X-Scope-OrgID": tenant}
    resp = client.request(
        "push",
        "POST",
        "/loki/api/v1/push",
        content=b'{"streams": []}',
        headers={**headers, "Content-Type": "application/json"},
    )
    assert resp.status_code == status, resp.text
    resp = client.request(
        "query_range", "GET", "/loki/api/v1/query_range", params={"query": '{a="b"}'}, headers=headers
    )
    assert resp.status_code == (200 if status == 204 else status), resp.text
