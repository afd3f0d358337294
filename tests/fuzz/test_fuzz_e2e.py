"""The fuzz inputs of test_fuzz_asgi.py against the real service (Ray, Serve, HTTP): every status < 500.

Bounded: FUZZ_E2E_EXAMPLES inputs per endpoint (default 200). Counts are printed at the end (-s).
"""

from __future__ import annotations

import os
import random
from collections import Counter
from urllib.parse import quote

import httpx
import pytest

from tests.fuzz import strategies as fz
from tests.fuzz.harness import Stopwatch, form_encode, raw_headers, record, report

pytestmark = pytest.mark.ray
EXAMPLES = int(os.environ.get("FUZZ_E2E_EXAMPLES", "200"))
SEED = int(os.environ.get("FUZZ_E2E_SEED", "20261101"))


class Tally:
    def __init__(self) -> None:
        self.tried: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.reconnects: Counter[str] = Counter()
        self.failures: list[tuple[str, int, str]] = []


@pytest.fixture(scope="module")
def tally():
    fz.EXTREME_TIMESTAMPS = False  # the service is shared and flushed by other tests
    t = Tally()
    clock = Stopwatch()
    yield t
    print(report(f"e2e fuzz against the real service (seed {SEED})", t.tried, t.errors, clock()))
    print(f"  connections the server closed after answering, sent again: {dict(t.reconnects)}")
    fz.EXTREME_TIMESTAMPS = True


def _tenant(rnd: random.Random) -> str:
    # Fuzz tenants get their own names, so their data cannot disturb other tests.
    tenant = fz.tenant(rnd)
    return {"fuzz": "fz-e2e", "fuzz-b": "fz-e2e-b", "fuzz|fuzz-b": "fz-e2e|fz-e2e-b"}.get(tenant, tenant)


def _run(svc, tally, endpoint: str, build) -> None:
    rnd = random.Random(f"{SEED}-{endpoint}")
    client = httpx.Client(base_url=svc.url, timeout=60)
    try:
        for _ in range(EXAMPLES):
            method, url, kwargs = build(rnd)
            try:
                resp = client.request(method, url, **kwargs)
            except httpx.RemoteProtocolError:
                # A request the HTTP server cannot parse (a control byte in a header) gets its
                # 400 before the body is read, and the server then closes the connection
                # without saying `Connection: close`; a client reusing it at that moment sees
                # a disconnect. Like any HTTP client, send again on a fresh connection: a
                # server that really died on this input fails the second try too.
                tally.reconnects[endpoint] += 1
                client.close()
                client = httpx.Client(base_url=svc.url, timeout=60)
                resp = client.request(method, url, **kwargs)
            record(tally, endpoint, resp, f"{method} {url}")
    finally:
        client.close()
    assert not tally.failures, tally.failures[:5]


def _headers(tenant: str, extra: dict[str, str] | None = None) -> list[tuple[bytes, bytes]]:
    return raw_headers({**({"X-Scope-OrgID": tenant} if tenant else {}), **(extra or {})})


def test_push(svc, tally):
    cap = svc.cfg.server.max_decompressed_body_bytes + (1 << 20)

    def build(rnd):
        body, headers = fz.push_request(rnd, cap)
        return "POST", "/loki/api/v1/push", {"content": body, "headers": _headers(_tenant(rnd), headers)}

    _run(svc, tally, "push", build)


def test_otlp(svc, tally):
    def build(rnd):
        body, headers = fz.otlp_request(rnd)
        return "POST", "/otlp/v1/logs", {"content": body, "headers": _headers(_tenant(rnd), headers)}

    _run(svc, tally, "otlp", build)


@pytest.mark.parametrize("endpoint", ["query_range", "query"])
def test_queries(svc, tally, endpoint):
    def build(rnd):
        params = fz.query_param_set(rnd, endpoint == "query")
        return "GET", f"/loki/api/v1/{endpoint}?{form_encode(params)}", {"headers": _headers(_tenant(rnd))}

    _run(svc, tally, endpoint, build)


@pytest.mark.parametrize(
    "endpoint,path",
    [
        ("labels", "/loki/api/v1/labels"),
        ("index_stats", "/loki/api/v1/index/stats"),
        ("volume", "/loki/api/v1/index/volume"),
        ("series", "/loki/api/v1/series"),
        ("label_values", None),
    ],
)
def test_metadata(svc, tally, endpoint, path):
    def build(rnd):
        params = list(fz.metadata_param_set(rnd).items())
        target = path
        if endpoint == "series":
            params += [("match[]", fz.selector_text(rnd)) for _ in range(rnd.randint(0, 2))]
        if endpoint == "label_values":
            name = rnd.choice(["app", "env", "x y", "..", "\u00e9"]) if rnd.random() < 0.5 else fz.text(rnd, 8)
            target = f"/loki/api/v1/label/{quote(name.replace('/', '') or 'x', safe='', errors='surrogatepass')}/values"
        return "GET", f"{target}?{form_encode(params)}", {"headers": _headers(_tenant(rnd))}

    _run(svc, tally, endpoint, build)
