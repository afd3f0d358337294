"""End to end: per-tenant limits from the runtime overrides file, bad bodies, tenant IDs on every endpoint.

Every tenant here is named `lim-*` and has its own overrides, so the limits touch no other test.
The service has 2 ingesters and replication factor 1 (tests/conftest.py).
"""

from __future__ import annotations

import gzip
import json
import time
import zlib

import httpx
import pytest

from svclog.model import Entry, Labels, PushStream
from svclog.serve.codecs.push import encode_push_protobuf
from tests.e2e.runtime_overrides import add_overrides

pytestmark = pytest.mark.ray
BASE = 1_793_491_200 * 10**9  # 2026-11-01T00:00:00Z
MB = 1 << 20

OVERRIDES = {
    "lim-slow": {"ingestion_rate_mb": 0.002, "ingestion_burst_size_mb": 0.004},  # ~2 KiB/s, 4 KiB burst
    "lim-line": {"max_line_size": "100B"},
    "lim-trunc": {"max_line_size": "100B", "max_line_size_truncate": True},
    "lim-labels": {"max_label_names_per_series": 3, "max_label_name_length": 10, "max_label_value_length": 12},
    "lim-meta": {"max_structured_metadata_size": "40B", "max_structured_metadata_entries_count": 2},
    "lim-global-streams": {"max_global_streams_per_user": 4},  # 4 / 2 ingesters * rf 1 = 2 per ingester
    "lim-local-streams": {"max_streams_per_user": 1},
}


@pytest.fixture(scope="module")
def limits(svc):
    add_overrides(svc, OVERRIDES)  # the ring snapshot in ingesters is cached 5 s at most: within the reload wait
    return svc


def _push(svc, tenant, streams, **headers):
    body = json.dumps({"streams": streams}).encode()
    return httpx.post(
        svc.url + "/loki/api/v1/push",
        content=body,
        timeout=30,
        headers={"X-Scope-OrgID": tenant, "Content-Type": "application/json", **headers},
    )


def _stream(labels, *lines, metadata=None):
    values = [[str(BASE + i), line] + ([metadata] if metadata else []) for i, line in enumerate(lines)]
    return {"stream": labels, "values": values}


def _lines(svc, tenant, query):
    resp = httpx.get(
        svc.url + "/loki/api/v1/query_range",
        headers={"X-Scope-OrgID": tenant},
        timeout=30,
        params={"query": query, "start": str(BASE - 10**9), "end": str(BASE + 3600 * 10**9)},
    )
    assert resp.status_code == 200, resp.text
    return [v[1] for s in resp.json()["data"]["result"] for v in s["values"]]


# ---------------------------------------------------------------- ingestion rate and burst


def test_rate_limit_is_per_tenant_from_the_overrides_file(limits):
    big = _stream({"app": "rate"}, "x" * 5000)  # more than lim-slow's burst, nothing for the default 6 MB
    resp = _push(limits, "lim-slow", [big])
    assert resp.status_code == 429, resp.text
    assert resp.text.startswith(
        "Ingestion rate limit exceeded for user lim-slow (limit: 2097 bytes/sec) while "
        "attempting to ingest '1' lines totaling '5000' bytes"
    ), resp.text
    assert _push(limits, "lim-fast", [big]).status_code == 204  # no override: the default limits

    small = _stream({"app": "rate"}, "y" * 1500)
    assert _push(limits, "lim-slow", [small]).status_code == 204  # within the burst
    statuses = [_push(limits, "lim-slow", [small]).status_code for _ in range(3)]
    assert 429 in statuses, statuses  # the bucket drains faster than ~2 KiB/s refills it


# ---------------------------------------------------------------- line size


def test_max_line_size_rejects_or_truncates(limits):
    long_line = "é" * 80  # 160 bytes in UTF-8
    resp = _push(limits, "lim-line", [_stream({"app": "line"}, "short", long_line)])
    assert resp.status_code == 400, resp.text
    assert (
        "Max entry size '100' bytes exceeded for stream '{app=\"line\"}' while adding an entry with length "
        "'160' bytes" in resp.text
    )
    assert _lines(limits, "lim-line", '{app="line"}') == ["short"]  # the valid entry was still written

    assert _push(limits, "lim-trunc", [_stream({"app": "line"}, long_line)]).status_code == 204
    (stored,) = _lines(limits, "lim-trunc", '{app="line"}')
    assert stored == "é" * 50 and len(stored.encode()) == 100  # cut at 100 bytes, never inside a character


# ---------------------------------------------------------------- labels


def test_label_names_per_series_and_label_lengths(limits):
    resp = _push(limits, "lim-labels", [_stream({"a": "1", "b": "2", "c": "3", "d": "4"}, "x")])
    assert resp.status_code == 400
    assert 'entry for stream \'{a="1", b="2", c="3", d="4"}\' has 4 label names; limit 3' in resp.text

    resp = _push(limits, "lim-labels", [_stream({"a_very_long_name": "1"}, "x")])
    assert resp.status_code == 400
    assert "has label name too long: 'a_very_long_name'" in resp.text

    resp = _push(limits, "lim-labels", [_stream({"app": "value-too-long"}, "x")])
    assert resp.status_code == 400
    assert "has label value too long: 'value-too-long'" in resp.text
    assert _push(limits, "lim-labels", [_stream({"a": "1", "b": "2", "c": "3"}, "x")]).status_code == 204


# ---------------------------------------------------------------- structured metadata


def test_structured_metadata_size_and_count(limits):
    resp = _push(limits, "lim-meta", [_stream({"app": "md"}, "x", metadata={"trace": "t" * 60})])
    assert resp.status_code == 400
    assert "has structured metadata too large: '65' bytes, limit: '40' bytes" in resp.text
    resp = _push(limits, "lim-meta", [_stream({"app": "md"}, "x", metadata={"a": "1", "b": "2", "c": "3"})])
    assert resp.status_code == 400
    assert "has too many structured metadata labels: '3', limit: '2'" in resp.text
    assert _push(limits, "lim-meta", [_stream({"app": "md"}, "x", metadata={"a": "1", "b": "2"})]).status_code == 204


# ---------------------------------------------------------------- active streams


def _push_streams_one_by_one(svc, tenant, count):
    outcomes = []
    for i in range(count):
        resp = _push(svc, tenant, [_stream({"app": "streams", "n": str(i)}, f"line {i}")])
        outcomes.append(resp)
    return outcomes


def test_global_stream_limit_is_split_across_ingesters(limits):
    outcomes = _push_streams_one_by_one(limits, "lim-global-streams", 12)
    accepted = sum(r.status_code == 204 for r in outcomes)
    refused = [r for r in outcomes if r.status_code == 429]
    assert accepted + len(refused) == 12, [(r.status_code, r.text) for r in outcomes]
    # 4 global / 2 ingesters * rf 1 = 2 per ingester: at most 4 streams in all
    assert 2 <= accepted <= 4 and refused
    assert refused[0].text.startswith("Maximum active stream limit exceeded when trying to create stream {app=")
    assert "user: 'lim-global-streams'" in refused[0].text
    # a known stream is still accepted, and other tenants are not affected
    first_ok = next(i for i, r in enumerate(outcomes) if r.status_code == 204)
    assert (
        _push(limits, "lim-global-streams", [_stream({"app": "streams", "n": str(first_ok)}, "again")]).status_code
        == 204
    )
    assert all(r.status_code == 204 for r in _push_streams_one_by_one(limits, "lim-unlimited", 12))


def test_local_stream_limit(limits):
    outcomes = _push_streams_one_by_one(limits, "lim-local-streams", 8)
    accepted = sum(r.status_code == 204 for r in outcomes)
    assert 1 <= accepted <= 2, [(r.status_code, r.text) for r in outcomes]  # 1 per ingester
    assert all(r.status_code in (204, 429) for r in outcomes)


# ---------------------------------------------------------------- bad bodies


def _proto(*streams):
    return encode_push_protobuf([PushStream(Labels(labels.items()), [Entry(BASE, "x")]) for labels in streams])


@pytest.mark.parametrize(
    "body,headers",
    [
        (b'{"streams": [{"stream": {"a": "b"}, "values": [["1", "x"]', {}),
        (b"\xff\xfe\x00", {}),
        (b'{"streams": [{"stream": {"a": "b"}, "values": [["1", 5]]}]}', {}),
        (b"not snappy at all", {"Content-Type": "application/x-protobuf"}),
        (_proto({"a": "b"})[:-3], {"Content-Type": "application/x-protobuf"}),
        (b"\xff\xff\xff\xff\x0f" + b"\0" * 16, {"Content-Type": "application/x-protobuf"}),  # claims 4 GiB
        (gzip.compress(b'{"streams": []}')[:-6], {"Content-Encoding": "gzip"}),
        (b"\x1f\x8b garbage", {"Content-Encoding": "gzip"}),
        (zlib.compress(b"x" * 100)[:10], {"Content-Encoding": "deflate"}),
        (b"{}", {"Content-Encoding": "br"}),
        (b"{}", {"Content-Type": "/"}),
    ],
)
def test_malformed_bodies_get_400(svc, body, headers):
    resp = httpx.post(
        svc.url + "/loki/api/v1/push",
        content=body,
        timeout=30,
        headers={"X-Scope-OrgID": "lim-bad", "Content-Type": "application/json", **headers},
    )
    assert resp.status_code == 400, resp.text


def test_compression_bombs_and_huge_bodies_get_4xx_quickly(svc):
    cap = svc.cfg.server.max_decompressed_body_bytes
    bomb = gzip.compress(b"\0" * (cap + MB), compresslevel=9)  # ~250 KiB on the wire
    began = time.monotonic()
    resp = httpx.post(
        svc.url + "/loki/api/v1/push",
        content=bomb,
        timeout=60,
        headers={"X-Scope-OrgID": "lim-bad", "Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert resp.status_code == 400 and "larger than max" in resp.text, resp.text
    assert time.monotonic() - began < 30

    size = svc.cfg.server.max_request_body_bytes + 1
    resp = httpx.post(
        svc.url + "/loki/api/v1/push",
        content=b" " * size,
        timeout=60,
        headers={"X-Scope-OrgID": "lim-bad", "Content-Type": "application/json"},
    )
    assert resp.status_code == 413, resp.text

    def chunked():  # no Content-Length: the cap holds while the body streams in
        sent = 0
        while sent < size:
            sent += MB
            yield b" " * MB

    resp = httpx.post(
        svc.url + "/loki/api/v1/push",
        content=chunked(),
        timeout=60,
        headers={"X-Scope-OrgID": "lim-bad", "Content-Type": "application/json"},
    )
    assert resp.status_code == 413, resp.text


# ---------------------------------------------------------------- tenant IDs on every endpoint

Q = '{app="x"}'
ENDPOINTS = [
    ("GET", "/loki/api/v1/query", {"query": "count_over_time(" + Q + "[1m])"}, None),
    ("GET", "/loki/api/v1/query_range", {"query": Q}, None),
    ("GET", "/loki/api/v1/labels", {}, None),
    ("GET", "/loki/api/v1/label/app/values", {}, None),
    ("GET", "/loki/api/v1/series", {"match[]": Q}, None),
    ("GET", "/loki/api/v1/index/stats", {"query": Q}, None),
    ("GET", "/loki/api/v1/index/volume", {"query": Q}, None),
    ("GET", "/loki/api/v1/index/volume_range", {"query": Q}, None),
    ("GET", "/loki/api/v1/patterns", {"query": Q}, None),
    ("GET", "/loki/api/v1/rules", {}, None),
    ("GET", "/prometheus/api/v1/rules", {}, None),
    ("GET", "/loki/api/v1/delete", {}, None),
    ("POST", "/loki/api/v1/delete", {"query": Q, "start": "1"}, None),
    ("POST", "/loki/api/v1/push", {}, b'{"streams": []}'),
    ("POST", "/otlp/v1/logs", {}, b"{}"),
    ("GET", "/loki/api/v1/tail", {"query": Q}, None),
]
BAD_IDS = [".", "..", "a" * 151, "bad tenant", "a/b", "ünï", "a|..", "x\x7f"]


@pytest.mark.parametrize("method,path,params,body", ENDPOINTS, ids=[f"{m} {p}" for m, p, _, _ in ENDPOINTS])
def test_tenant_ids_are_validated_on_every_endpoint(svc, method, path, params, body):
    def call(headers):
        return httpx.request(
            method,
            svc.url + path,
            params=params,
            content=body,
            timeout=30,
            headers={"Content-Type": "application/json", **headers},
        )

    missing = call({})
    if missing.status_code == 404 and "not enabled" in missing.text:
        pytest.skip(missing.text.strip())  # e.g. patterns with the pattern ingester off: no route at all
    assert missing.status_code == 401, missing.text
    assert "no org id" in missing.text
    for tenant in BAD_IDS:
        resp = call({"X-Scope-OrgID": tenant.encode("utf-8")})
        assert resp.status_code == 400, (tenant, resp.status_code, resp.text)
        if tenant.isprintable():  # a control character is already refused by the HTTP server itself
            # a single-tenant endpoint reads the first part only: `a|..` names two tenants there
            assert "tenant ID" in resp.text or (tenant == "a|.." and "multiple org IDs" in resp.text), resp.text
    ok = call({"X-Scope-OrgID": "lim-ok"})
    assert ok.status_code < 500, ok.text
