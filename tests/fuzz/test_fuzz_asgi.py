"""Fuzz the push and query endpoints in process: every response must be < 500.

The app is the gateway's own route table and handlers over real decoding, validation,
ingesters and querier (tests/fuzz/harness.py); no Ray. Inputs tried per endpoint and the
5xx seen are printed at the end of the module (run with -s). Sized to finish in well
under a minute; FUZZ_SCALE=10 runs ten times as many examples.
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fuzz import strategies as fz
from tests.fuzz.harness import (
    Client,
    InProcessBackend,
    Stopwatch,
    build_app,
    form_encode,
    harness_config,
    report,
    seed_data,
)

SCALE = float(os.environ.get("FUZZ_SCALE", "1"))
MAX_BODY = 1 << 20
MAX_DECOMPRESSED = 4 << 20


def fuzz(examples: int):
    # No shrinking: inputs come from a seeded Random, so a failure is reported as drawn (and reproducible).
    return settings(
        max_examples=max(1, int(examples * SCALE)),
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("fuzz-asgi"))
    cfg = harness_config(
        root,
        f"-server.max-request-body-bytes={MAX_BODY}",
        f"-server.max-decompressed-body-bytes={MAX_DECOMPRESSED}",
        "-limits.reject-old-samples=false",
        "-distributor.ingestion-rate-limit-mb=1000",
        "-distributor.ingestion-burst-size-mb=1000",
    )
    c = Client(build_app(InProcessBackend(cfg, root)))
    _seed(c)
    clock = Stopwatch()
    yield c
    print(report("in-process fuzz (ASGI, no Ray)", c.tried, c.errors, clock()))
    c.close()


def _seed(c: Client) -> None:
    seed_data(c)


def _headers(tenant: str) -> dict[str, str]:
    return {"X-Scope-OrgID": tenant} if tenant else {}


def _ok(resp) -> None:
    assert resp.status_code < 500, (resp.status_code, resp.text[:500])


# ---------------------------------------------------------------- push


@fuzz(1000)
@given(
    request=fz.push_requests(bomb_size=2 * MAX_DECOMPRESSED),
    tenant=fz.tenants,
    path=st.sampled_from(["/loki/api/v1/push", "/svc/api/v1/push", "/api/prom/push"]),
)
def test_push(client, request, tenant, path):
    body, headers = request
    resp = client.request("push", "POST", path, content=body, headers={**_headers(tenant), **headers})
    _ok(resp)
    assert resp.status_code in (204, 400, 401, 413, 415, 429), (resp.status_code, resp.text)


@fuzz(250)
@given(request=fz.otlp_requests, tenant=fz.tenants)
def test_otlp(client, request, tenant):
    body, headers = request
    _ok(client.request("otlp", "POST", "/otlp/v1/logs", content=body, headers={**_headers(tenant), **headers}))


def test_bodies_beyond_the_cap_get_413(client):
    headers = {"X-Scope-OrgID": "fuzz", "Content-Type": "application/json"}
    resp = client.request("push", "POST", "/loki/api/v1/push", content=b" " * (MAX_BODY + 1), headers=headers)
    assert resp.status_code == 413, resp.text

    async def chunks():  # no Content-Length: the cap must hold while streaming
        for _ in range(MAX_BODY // 65536 + 2):
            yield b" " * 65536

    resp = client.request("push", "POST", "/loki/api/v1/push", content=chunks(), headers=headers)
    assert resp.status_code == 413, resp.text
    for body, encoding in fz.bombs(2 * MAX_DECOMPRESSED):
        resp = client.request(
            "push",
            "POST",
            "/loki/api/v1/push",
            content=body,
            headers={**headers, "Content-Encoding": encoding} if encoding else headers,
        )
        assert 400 <= resp.status_code < 500, resp.text


# ---------------------------------------------------------------- queries


@fuzz(900)
@given(params=fz.query_params(instant=False), tenant=fz.tenants, post=st.booleans())
def test_query_range(client, params, tenant, post):
    _query(client, "query_range", "/loki/api/v1/query_range", params, tenant, post)


@fuzz(400)
@given(params=fz.query_params(instant=True), tenant=fz.tenants, post=st.booleans())
def test_query(client, params, tenant, post):
    _query(client, "query", "/loki/api/v1/query", params, tenant, post)


@fuzz(100)
@given(params=fz.query_params(instant=False), tenant=fz.tenants)
def test_legacy_query(client, params, tenant):
    _query(client, "legacy_query", "/api/prom/query", params, tenant, False)


def _query(client, endpoint, path, params, tenant, post):
    if post:
        _ok(client.request(endpoint, "POST", path, data=params, headers=_headers(tenant)))
    else:
        _ok(client.request(endpoint, "GET", path, params=params, headers=_headers(tenant)))


@fuzz(200)
@given(params=fz.metadata_params(), tenant=fz.tenants)
def test_labels(client, params, tenant):
    _ok(client.request("labels", "GET", "/loki/api/v1/labels", params=params, headers=_headers(tenant)))


@fuzz(200)
@given(name=fz.label_names, params=fz.metadata_params(), tenant=fz.tenants)
def test_label_values(client, name, params, tenant):
    from urllib.parse import quote

    _ok(
        client.request(
            "label_values",
            "GET",
            f"/loki/api/v1/label/{quote(name, safe='', errors='surrogatepass')}/values",
            params=params,
            headers=_headers(tenant),
        )
    )


@fuzz(200)
@given(matches=st.lists(fz.selectors, max_size=3), params=fz.metadata_params(), tenant=fz.tenants, post=st.booleans())
def test_series(client, matches, params, tenant, post):
    params.pop("query", None)
    pairs = list(params.items()) + [("match[]", m) for m in matches]
    if post:
        form = {**_headers(tenant), "Content-Type": "application/x-www-form-urlencoded"}
        _ok(client.request("series", "POST", "/loki/api/v1/series", content=_form(pairs), headers=form))
    else:
        _ok(client.request("series", "GET", "/loki/api/v1/series", params=pairs, headers=_headers(tenant)))


def _form(pairs):
    return form_encode(pairs).encode()


@fuzz(200)
@given(params=fz.metadata_params(), tenant=fz.tenants)
def test_index_stats(client, params, tenant):
    _ok(client.request("index_stats", "GET", "/loki/api/v1/index/stats", params=params, headers=_headers(tenant)))


@fuzz(200)
@given(
    params=fz.metadata_params(),
    extra=st.fixed_dictionaries(
        {},
        optional={
            "limit": st.sampled_from(["1", "0", "-5", "x", "100000"]),
            "targetLabels": st.sampled_from(["app", "app,env", ",", "", "__name__"]),
            "aggregateBy": st.sampled_from(["series", "labels", "bogus", ""]),
            "step": st.sampled_from(["1m", "0", "-1s", "x", "0.001", "1"]),
        },
    ),
    ranged=st.booleans(),
    tenant=fz.tenants,
)
def test_volume(client, params, extra, ranged, tenant):
    path = "/loki/api/v1/index/volume_range" if ranged else "/loki/api/v1/index/volume"
    _ok(
        client.request(
            "volume_range" if ranged else "volume", "GET", path, params={**params, **extra}, headers=_headers(tenant)
        )
    )


@fuzz(300)
@given(query=fz.logql)
def test_format_query(client, query):
    _ok(client.request("format_query", "GET", "/loki/api/v1/format_query", params={"query": query}))


def test_counts_are_reported(client):
    """Runs last in the module: the counts themselves are printed by the fixture's teardown."""
    assert client.tried["push"] > 0 and client.tried["query_range"] > 0
    assert sum(client.errors.values()) == 0, client.failures[:5]
    json.dumps(dict(client.tried))
