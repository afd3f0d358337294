"""Abandoned work stops in the querier: the heartbeat watcher cancels the guards of tickets the
scheduler calls gone, and Querier.execute stops at its deadline or when cancelled."""

from __future__ import annotations

import threading
import time

import pytest

from svclog.logql.engine.guard import QueryCancelled, QueryGuard, QueryLimits, QueryTimedOut
from svclog.logql.engine.params import QueryParams
from svclog.logql.parser import parse
from svclog.logql.rewrite.subquery import SubQuery
from svclog.model import NS, Labels
from svclog.querier.querier import Querier, QuerierSettings
from svclog.querier.running import RunningQueries
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore


def test_beat_stops_only_what_the_scheduler_calls_gone():
    running = RunningQueries()
    guards = {t: QueryGuard() for t in (1, 2, 3)}
    for ticket, guard in guards.items():
        running.start(ticket, guard)
    asked = []
    assert running.beat(lambda tickets: asked.append(sorted(tickets)) or [2, 7]) == 1
    assert asked == [[1, 2, 3]]
    assert [guards[t].cancelled for t in (1, 2, 3)] == [False, True, False]
    running.finish(1)
    assert sorted(running.tickets()) == [2, 3]


def test_watch_beats_until_stopped_and_survives_a_failing_scheduler():
    running = RunningQueries()
    guard = QueryGuard()
    running.start(5, guard)
    calls = []

    def heartbeat(tickets):
        calls.append(tickets)
        if len(calls) == 1:
            raise ConnectionError("scheduler restarting")
        return tickets  # the second beat: the query was cancelled

    stopping = threading.Event()
    thread = threading.Thread(target=running.watch, args=(heartbeat, stopping, 0.01), daemon=True)
    thread.start()
    deadline = time.time() + 5
    while not guard.cancelled and time.time() < deadline:
        time.sleep(0.01)
    stopping.set()
    thread.join(2)
    assert guard.cancelled and len(calls) >= 2 and not thread.is_alive()


class SlowIngesters:
    """Unflushed data of many streams, read slowly, as a heavy query reads."""

    applies_line_filters = False

    def __init__(self, streams: int):
        import pyarrow as pa

        from svclog.chunk.format import CHUNK_SCHEMA

        self.found = [
            (
                Labels.from_dict({"app": "a", "pod": str(p)}),
                pa.Table.from_arrays(
                    [
                        pa.array([p * NS + i for i in range(50)], pa.int64()),
                        pa.array([f"trace_id={p}-{i}" for i in range(50)]),
                        pa.nulls(50, CHUNK_SCHEMA.field("metadata").type),
                    ],
                    schema=CHUNK_SCHEMA,
                ),
            )
            for p in range(streams)
        ]

    def select(self, tenant, matchers, start, end, shard, line_filters=(), deadline=None):
        import pyarrow.compute as pc

        out = []
        for labels, table in self.found:
            ts = table.column("ts")
            kept = table.filter(pc.and_(pc.greater_equal(ts, start), pc.less(ts, end)))
            if kept.num_rows:
                time.sleep(0.002)
                out.append((labels, kept))
        return out, 1

    def series(self, tenant, matchers, start, end):
        return [labels for labels, _ in self.found]


def make_querier(tmp_path, streams: int = 200) -> Querier:
    store = ObjectStore(str(tmp_path))
    return Querier(
        IndexReader(store), ChunkStore(store), SlowIngesters(streams), QuerierSettings(query_ingesters_within=0)
    )


SUB = SubQuery(parse('{app="a"} | logfmt'), QueryParams.for_range(0, 3600 * NS, step=NS, limit=10_000))


def test_execute_answers_within_its_limits(tmp_path):
    partial = make_querier(tmp_path, 20).execute(["t"], SUB, QueryLimits.starting_now(60 * NS, 0).guard())
    assert sum(len(s.ts) for s in partial.result.streams) == 1000


def test_execute_past_its_deadline_raises_a_timeout(tmp_path):
    guard = QueryLimits.starting_now(NS, 0, now=time.time() - 2).guard()
    with pytest.raises(QueryTimedOut, match=r"after 1s \(query_timeout\)"):
        make_querier(tmp_path).execute(["t"], SUB, guard)


def test_execute_stops_when_its_ticket_is_cancelled_mid_query(tmp_path):
    running = RunningQueries()
    guard = QueryGuard()
    running.start(42, guard)
    threading.Timer(0.05, lambda: running.stop([42])).start()  # the scheduler said: gone
    began = time.perf_counter()
    with pytest.raises(QueryCancelled):
        make_querier(tmp_path, streams=5000).execute(["t"], SUB, guard)
    assert time.perf_counter() - began < 5  # long before the 5000-stream read would end
