"""Fuzz the gateway's whole route table in process: every answer < 500 and within 5 s.

The app is the gateway's one route table over in-process services (tests/fuzz/harness.py
`build_app`), no Ray. One sweep sends a
few seeded requests to every route, then hypothesis draws more over random routes. Counts by
status class are printed at the end (run with -s). FUZZ_SCALE=10 runs ten times as many.
"""

from __future__ import annotations

import os
import random
import time

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fuzz.harness import Client, InProcessBackend, build_app, harness_config, seed_data
from tests.fuzz.route_requests import Tally, gateway_routes, httpx_args, random_request

SCALE = float(os.environ.get("FUZZ_SCALE", "1"))
PER_ROUTE = max(1, int(4 * SCALE))
SLOW_S = 5.0
ROUTES = gateway_routes()


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("fuzz-routes"))
    cfg = harness_config(
        root,
        "-server.max-request-body-bytes=1048576",
        "-server.max-decompressed-body-bytes=4194304",
        "-limits.reject-old-samples=false",
        "-distributor.ingestion-rate-limit-mb=1000",
        "-distributor.ingestion-burst-size-mb=1000",
        "-pattern-ingester.enabled=true",
        "-ruler.enable-api=true",
    )
    client = Client(build_app(InProcessBackend(cfg, root)))
    seed_data(client)
    tally = Tally(slow_s=SLOW_S)
    began = time.perf_counter()
    yield client, tally
    print("\n" + tally.report("route-table fuzz (ASGI, no Ray)", time.perf_counter() - began))
    client.close()


def _send(client: Client, tally: Tally, rnd: random.Random, spec) -> None:
    req = random_request(rnd, spec)
    began = time.perf_counter()
    resp = client.loop.run_until_complete(client.client.request(timeout=30, **httpx_args(req)))
    tally.add(req, resp.status_code, time.perf_counter() - began, resp.text)


def test_every_route_of_the_table_is_fuzzed(fuzz):
    client, tally = fuzz
    rnd = random.Random(17)
    for spec in ROUTES:
        for _ in range(PER_ROUTE):
            _send(client, tally, rnd, spec)
    assert len(ROUTES) > 90 and set(tally.by_route) == {spec.path for spec in ROUTES}
    assert not tally.errors, tally.report("sweep", 0)
    assert not tally.slow, tally.report("sweep", 0)


@settings(
    max_examples=max(1, int(1000 * SCALE)),
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@given(rnd=st.randoms(use_true_random=False), index=st.integers(0, len(ROUTES) - 1))
def test_random_requests_over_the_route_table(fuzz, rnd, index):
    client, tally = fuzz
    errors, slow = len(tally.errors), len(tally.slow)
    _send(client, tally, rnd, ROUTES[index])
    assert len(tally.errors) == errors, tally.errors[-1]
    assert len(tally.slow) == slow, tally.slow[-1]


def test_counts_are_reported(fuzz):
    """Runs last in the module: the report itself is printed by the fixture's teardown."""
    _, tally = fuzz
    assert tally.total >= len(ROUTES) and not tally.errors
