"""The hosted frontend sends no sub-query whose time holds no data, and sends all when it cannot tell."""

from __future__ import annotations

import asyncio
import collections
from concurrent.futures import ThreadPoolExecutor

from svclog.config import default_config
from svclog.cpu_priority import ForegroundGate
from svclog.frontend.frontend import FrontendSettings, QueryFrontend
from svclog.frontend.local_lane import LocalLane
from svclog.logql.engine.memory_source import MemorySource
from svclog.logql.rewrite.subquery import evaluate_subquery
from svclog.querier.prefetched import Prefetched
from svclog.querier.querier import PartialResult, ReadFacts, WindowRead
from svclog.querier.request import RangeRequest
from svclog.querier.source import SourceStats
from svclog.serve.deployments import HostedFrontend

S = 1_000_000_000
HOUR = 3600 * S
T0 = 1_700_000_000 * S // HOUR * HOUR
STAMPS = [T0 + 100 * HOUR + i * S for i in range(5)]


class _Reader:
    """The frontend's own reads (`HostedFrontend.reader`): data spans and read sizes."""

    def __init__(self, spans):
        self.spans, self.asked = spans, []

    def read_facts(self, tenants, window, windows, guard, rows_cap=0, rows_pad=0, filters=()):
        self.asked.append("read_facts")
        if isinstance(self.spans, Exception):
            raise self.spans
        return ReadFacts(self.spans, [WindowRead(0, 0, 0)] * len(windows), Prefetched())


class _Frontend(HostedFrontend):
    """The hosted frontend over an in-memory store: `_run` evaluates what it is sent (no Ray)."""

    def __init__(self, spans):
        self.cfg = default_config()
        self._in_flight = 0
        self._tenants_busy = collections.Counter()
        self.foreground = ForegroundGate()
        self._max_queriers = lambda tenant, total: 0
        self.reader = _Reader(spans)
        self._reads = ThreadPoolExecutor(2)
        self.lane = LocalLane(0)  # every piece goes to `_run`
        self.frontend = QueryFrontend(FrontendSettings())
        self.source = MemorySource.from_dicts([({"app": "x"}, [(ts, f"line {ts}") for ts in STAMPS])])
        self.sent = 0

    async def _run(self, tenants, actor_path, items, limits, large=False):
        self.sent += len(items)
        return [PartialResult(evaluate_subquery(sub, self.source), SourceStats()) for _, sub in items]


def _ask(frontend: _Frontend, query: str) -> dict:
    request = RangeRequest(query, T0, T0 + 24 * 10 * HOUR, 300 * S, None, 100, "backward")
    data = asyncio.run(frontend.query(["t"], request))
    data.pop("stats")
    return data


def test_only_the_hours_with_data_are_sent_and_the_answer_is_the_same() -> None:
    for query in ['{app="x"}', 'count_over_time({app="x"}[5m])', 'sum(rate({app="x"}[1h] offset 2h))']:
        everything = _Frontend(None)  # the querier cannot tell: every piece is sent
        skipping = _Frontend([(STAMPS[0], STAMPS[-1])])
        assert _ask(skipping, query) == _ask(everything, query)
        assert everything.sent >= 240
        assert 1 <= skipping.sent <= 3, (query, skipping.sent)
        assert skipping.reader.asked == ["read_facts"]


def test_a_failed_extent_call_sends_everything() -> None:
    frontend = _Frontend(RuntimeError("ingester gone"))
    full = _ask(_Frontend(None), 'count_over_time({app="x"}[5m])')
    assert _ask(frontend, 'count_over_time({app="x"}[5m])') == full
    assert frontend.sent >= 240


def test_queries_that_answer_without_data_keep_their_empty_hours_answered_locally() -> None:
    """absent_over_time and `or vector(0)` answer for hours without data: those pieces are
    evaluated over an empty source in the frontend, not sent, and the answer is unchanged."""
    for query in ['absent_over_time({app="x"}[5m])', 'count_over_time({app="x"}[5m]) or vector(0)']:
        everything = _Frontend(None)
        skipping = _Frontend([(STAMPS[0], STAMPS[-1])])
        data = _ask(skipping, query)
        assert data == _ask(everything, query)
        assert data["result"]
        assert everything.sent >= 240
        assert 1 <= skipping.sent <= 3, (query, skipping.sent)
