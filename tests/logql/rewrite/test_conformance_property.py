"""Property (issue 7): for every conformance query, split + sharded + merged == un-split.

The fast variant runs every query under two plans; the `slow` one under the full grid
of split intervals x shard counts.
"""

from __future__ import annotations

import pytest

from svclog.model import NS
from tests.logql.rewrite.conformance_queries import QueryCase, query_cases, source_for
from tests.logql.rewrite.property import differences, planned, unsplit

FAST_PLANS = [(3600 * NS, 2), (600 * NS, 4)]
FULL_PLANS = [(interval * NS, shards) for interval in (0, 600, 3600) for shards in (1, 2, 4)] + [(420 * NS, 3)]

OK_CASES = query_cases()
ERROR_CASES = query_cases(expect_ok=False)


def check(case: QueryCase, sources, plans: list[tuple[int, int]]) -> None:
    source = source_for(sources, case.tenants)
    want = unsplit(case.expr, case.params, source)
    for interval, shards in plans:
        got = planned(case.expr, case.params, source, interval, shards)
        diff = differences(want, got)
        assert not diff, f"{case.text} split {interval // NS}s x {shards} shards: {diff[:3]}"


def test_cases_loaded() -> None:
    assert len(OK_CASES) > 150


@pytest.mark.parametrize("case", OK_CASES, ids=lambda c: c.name)
def test_planned_equals_unsplit(case: QueryCase, tenant_sources) -> None:
    check(case, tenant_sources, FAST_PLANS)


@pytest.mark.parametrize("case", ERROR_CASES, ids=lambda c: c.name)
def test_planned_fails_like_unsplit(case: QueryCase, tenant_sources) -> None:
    check(case, tenant_sources, FAST_PLANS)


@pytest.mark.slow
@pytest.mark.parametrize("case", OK_CASES, ids=lambda c: c.name)
def test_planned_equals_unsplit_all_plans(case: QueryCase, tenant_sources) -> None:
    check(case, tenant_sources, FULL_PLANS)
