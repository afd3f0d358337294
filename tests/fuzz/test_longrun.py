"""The long-run fuzzer's guards and report (the run itself is the coordinator's; see longrun.py)."""

import random

import pytest

from tests.fuzz.longrun import STOPPING_ROUTES, live_routes, loopback_only
from tests.fuzz.route_requests import RouteSpec, Tally, gateway_routes, random_request


@pytest.mark.parametrize("url", ["http://127.0.0.1:3100", "http://localhost:3100/", "http://[::1]:3100"])
def test_loopback_urls_are_accepted(url):
    assert loopback_only(url) == url.rstrip("/")


@pytest.mark.parametrize("url", ["http://10.0.0.1:3100", "http://example.com", "http://0.0.0.0:3100"])
def test_other_hosts_are_refused(url):
    with pytest.raises(SystemExit):
        loopback_only(url)


def test_report_counts_classes_slow_answers_and_every_5xx():
    routes = gateway_routes()
    rnd = random.Random(3)
    tally = Tally(slow_s=5.0)
    reqs = [random_request(rnd, routes[i % len(routes)]) for i in range(4)]
    tally.add(reqs[0], 200, 0.1)
    tally.add(reqs[1], 400, 6.0)
    tally.add(reqs[2], 503, 0.2, "unavailable")
    tally.add(reqs[3], None, 30.0, "ReadTimeout")
    text = tally.report("t", 1.0)
    assert tally.by_class == {"2xx": 1, "4xx": 1, "5xx": 1, "error": 1}
    assert "slower than 5 s: 2" in text and "5xx / transport errors: 2" in text
    assert "2xx 0.100 / 0.100 / 0.100" in text and "4xx 6.000 / 6.000 / 6.000" in text
    assert reqs[2].method in text and "unavailable" in text


def test_a_live_run_leaves_out_what_stops_a_component_or_forgets_a_ring_member():
    routes = [
        RouteSpec(("POST",), "/ingester/shutdown"),
        RouteSpec(("GET", "POST"), "/ring"),
        RouteSpec(("GET", "POST"), "/ruler/ring"),
        RouteSpec(("GET", "POST"), "/loki/api/v1/query_range"),
    ]
    live = live_routes(routes)
    assert [(r.methods, r.path) for r in live] == [
        (("GET",), "/ring"),
        (("GET",), "/ruler/ring"),
        (("GET", "POST"), "/loki/api/v1/query_range"),
    ]
    assert live_routes(routes, with_shutdown=True) == routes
    every = gateway_routes()
    kept = live_routes(every)
    assert not any(r.path in STOPPING_ROUTES for r in kept)
    assert len(kept) == len(every) - len(STOPPING_ROUTES)  # the ring pages stay, GET only
