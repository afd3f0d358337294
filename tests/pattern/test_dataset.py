"""Mining the conformance data set: every pattern is a `|>` filter for every line it counted,
and the grouping is sensible per log format."""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import pytest

from svclog.pattern import Drain, tokenize
from tests.pattern.matching import unmatched

CONFORMANCE = Path("/work/shared/conformance")


@pytest.fixture(scope="module")
def mined():
    if not (CONFORMANCE / "dataset.py").exists():
        pytest.skip("conformance data set not available")
    sys.path.insert(0, str(CONFORMANCE))
    try:
        import dataset
    finally:
        sys.path.remove(str(CONFORMANCE))
    out = []
    for tenant, streams in dataset.build().items():
        for stream in streams:
            drain = Drain()
            counted: dict[int, list[str]] = defaultdict(list)
            for value in stream["values"]:
                counted[drain.train(tokenize(value[1])).id].append(value[1])
            out.append((tenant, stream["stream"], drain, counted))
    return out


def test_every_pattern_matches_every_line_it_counted(mined):
    checked = 0
    for _, _, drain, counted in mined:
        for cluster in drain.clusters():
            lines = counted[cluster.id]
            assert len(lines) == cluster.size
            assert unmatched(cluster.pattern, lines) == [], cluster.pattern
            checked += len(lines)
    assert checked > 17000


def test_grouping_is_sensible(mined):
    by_app: dict[str, int] = defaultdict(int)
    for _, labels, drain, _ in mined:
        by_app[labels["app"]] = max(by_app[labels["app"]], len(drain))
    # logfmt, counters, postgres and cron streams reduce to a handful of templates
    assert by_app["checkout"] <= 5 and by_app["tps"] <= 5
    assert by_app["payments"] <= 4 and by_app["db"] <= 2 and by_app["cron"] <= 3
    # access logs: a few dozen (referer, path and user-agent shapes), never one per line
    assert by_app["nginx"] <= 40 and by_app["apache"] <= 40
    for _, _, drain, _ in mined:
        assert len(drain) < 60
        assert all(c.pattern.strip() for c in drain.clusters())


def test_logfmt_template(mined):
    for _, labels, drain, _ in mined:
        if labels.get("app") == "checkout":
            top = max(drain.clusters(), key=lambda c: c.size)
            assert top.pattern == (
                'ts=<_> level=<_> caller=<_> msg="<_> <_>" method=<_> path=/<_> status=<_> '
                "duration=<_> size=<_> user=<_> items=<_> amount=<_> client_ip=<_>"
            )
