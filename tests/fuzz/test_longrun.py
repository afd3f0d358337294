"""The long-run fuzzer's guards and report (the run itself is the coordinator's; see longrun.py)."""

import random

import pytest

from tests.fuzz.longrun import loopback_only
from tests.fuzz.route_requests import Tally, gateway_routes, random_request


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
