"""The hosted frontend runs a query that reads little in its own process (the local lane), and
sends the others to the queriers; a client going away stops the local run."""

from __future__ import annotations

import asyncio
import collections
import threading
from concurrent.futures import ThreadPoolExecutor

from svclog.config import load_config
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
STAMPS = [T0 + i * 60 * S for i in range(100)]
SOURCE = MemorySource.from_dicts([({"app": "x"}, [(ts, f"line {ts} level=info") for ts in STAMPS])])


class _Reader:
    """The frontend's own querier: sizes as told, pieces evaluated over SOURCE."""

    def __init__(self, read_bytes: int, hold: threading.Event | None = None, probed_bytes: int | None = None):
        self.read_bytes = read_bytes
        self.probed_bytes = read_bytes if probed_bytes is None else probed_bytes  # after the token index
        self.filters: list = []  # the line filters each planning read was given, per window
        self.hold = hold  # execute waits on it (or its guard's cancellation)
        self.executed = 0
        self.stopped = threading.Event()
        self.told: set[int | None] = set()  # the read sizes the pieces carried
        self.rows_caps: list[int] = []  # what each planning read asked the ingesters' rows up to
        self.prefetched = Prefetched()  # the rows that read brought
        self.handed: set[int] = set()  # ids of the prefetched rows the pieces ran with

    def read_facts(self, tenants, window, windows, guard, rows_cap=0, rows_pad=0, filters=()):
        self.rows_caps.append(rows_cap)
        self.filters.append(filters)
        sizes = [WindowRead(1, self.read_bytes, self.probed_bytes)] + [WindowRead(0, 0, 0)] * (len(windows) - 1)
        return ReadFacts([(STAMPS[0], STAMPS[-1])], sizes, self.prefetched)

    def execute(self, tenants, sub, guard, prefetched=None):
        while self.hold is not None and not self.hold.wait(0.01):
            if guard.stopping():
                self.stopped.set()
                guard.check()  # raises: the query was cancelled
        self.executed += 1
        self.told.add(sub.params.read_bytes)
        self.handed.add(id(prefetched))
        return PartialResult(evaluate_subquery(sub, SOURCE), SourceStats())


class _Frontend(HostedFrontend):
    def __init__(self, reader: _Reader, *flags: str):
        self.cfg = load_config(None, list(flags))
        self._in_flight = 0
        self._tenants_busy = collections.Counter()
        self.foreground = ForegroundGate()
        self._max_queriers = lambda tenant, total: 0
        self.reader = reader
        self._reads = ThreadPoolExecutor(4)
        self.lane = LocalLane(self.cfg.frontend.local_query_slots)
        self.frontend = QueryFrontend(FrontendSettings())
        self.sent = 0
        self.told: set[int | None] = set()
        self.foreground_while_sent: set[int] = set()
        self.sent_large: set[bool] = set()  # whether the queriers' answers were to give way before their fetch

    async def _run(self, tenants, actor_path, items, limits, large=False):
        self.foreground_while_sent.add(self.foreground.in_flight)
        self.sent_large.add(large)
        self.sent += len(items)
        self.told.update(sub.params.read_bytes for _, sub in items)
        return [PartialResult(evaluate_subquery(sub, SOURCE), SourceStats()) for _, sub in items]


def _request(query: str) -> RangeRequest:
    return RangeRequest(query, T0, T0 + 3 * HOUR, 60 * S, None, 100, "backward")


def _ask(frontend: _Frontend, query: str) -> dict:
    data = asyncio.run(frontend.query(["t"], _request(query)))
    data.pop("stats")
    return data


QUERIES = ['{app="x"}', 'sum(count_over_time({app="x"} | logfmt [5m]))']


def test_a_query_reading_little_runs_here_with_the_queriers_answer() -> None:
    for query in QUERIES:
        here = _Frontend(_Reader(read_bytes=10_000))
        there = _Frontend(_Reader(read_bytes=10_000), "-limits.local-query-max-bytes=0")
        answer = _ask(here, query)
        assert answer == _ask(there, query) and answer["result"]
        assert here.sent == 0 and here.reader.executed >= 2  # the hours with data, none sent
        assert there.sent >= 2 and there.reader.executed == 0
        assert here.lane.taken == 1 and here.lane.seated() == 0
        # the pieces know what the whole query reads: a small log query reads its range at once
        assert here.reader.told == there.told == {10_000}
        # the planning read brought the ingesters' rows (up to the lane's limit) for the pieces
        assert here.reader.rows_caps == [1_000_000] and there.reader.rows_caps == [0]
        assert here.reader.handed == {id(here.reader.prefetched)}


def test_a_query_over_the_tenants_limit_goes_to_the_queriers() -> None:
    frontend = _Frontend(_Reader(read_bytes=2_000_000), "-limits.local-query-max-bytes=1MB")
    _ask(frontend, QUERIES[0])
    assert frontend.sent >= 2 and frontend.reader.executed == 0 and frontend.lane.taken == 0


def test_a_needle_the_token_index_rules_out_everywhere_runs_here() -> None:
    """What decides is what the query reads once the token index has ruled chunks out: a needle
    over a large range reads little. The pieces carry that figure (they are not lowered, and a
    log query reads its range at once)."""
    needle = '{app="x"} |= "0123456789abcdef"'
    frontend = _Frontend(_Reader(read_bytes=50_000_000, probed_bytes=20_000))
    _ask(frontend, needle)
    assert frontend.sent == 0 and frontend.lane.taken == 1 and frontend.reader.told == {20_000}
    [[filters]] = frontend.reader.filters  # the planning read was told the selector's line filter
    assert [value.value for node in filters for value in node.values] == ["0123456789abcdef"]
    common = _Frontend(_Reader(read_bytes=50_000_000, probed_bytes=45_000_000))
    _ask(common, '{app="x"} |= "level"')
    assert common.sent >= 2 and common.lane.taken == 0 and common.told == {45_000_000}


def test_no_rows_are_asked_for_when_the_tenant_has_no_seat() -> None:
    frontend = _Frontend(_Reader(read_bytes=10))
    frontend.lane.take("t", 10, 1_000_000)  # the tenant's seat is taken by its query in flight
    _ask(frontend, QUERIES[0])
    assert frontend.reader.rows_caps == [0] and frontend.sent >= 2


def test_a_client_going_away_stops_the_local_run_and_frees_its_seat() -> None:
    frontend = _Frontend(_Reader(read_bytes=10, hold=threading.Event()))

    async def leave_early() -> None:
        task = asyncio.ensure_future(frontend.query(["t"], _request(QUERIES[0])))
        await asyncio.sleep(0.2)
        assert frontend.lane.seated() == 1
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass

    asyncio.run(leave_early())
    assert frontend.reader.stopped.wait(5), "the local run did not see its cancellation"
    assert frontend.lane.seated() == 0


def test_a_query_is_foreground_until_its_facts_show_it_large() -> None:
    """A large query leaves the gateway's foreground before its sub-queries go out (its merge then
    gives way to small queries at the GIL); a small one stays in it until answered."""
    large = _Frontend(_Reader(read_bytes=50_000_000, probed_bytes=45_000_000))
    _ask(large, QUERIES[0])
    assert large.sent >= 2 and large.foreground_while_sent == {0}
    small = _Frontend(_Reader(read_bytes=10), "-limits.local-query-max-bytes=0")
    _ask(small, QUERIES[0])
    assert small.sent >= 1 and small.foreground_while_sent == {1}
    # and a large query's answers are fetched only once small queries in flight are answered
    assert large.sent_large == {True} and small.sent_large == {False}
    assert large.foreground.in_flight == 0 and small.foreground.in_flight == 0
