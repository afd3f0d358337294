"""A cancelled or timed-out query stops everywhere (issue 17), Ray-free: the guard passes a cancel
on to work the query started elsewhere (on_cancel hooks) and hears of one from its caller (a probe);
metadata requests stop under their guard; a cancellable ingester reader's select is stopped through
the hook; an ingester's select stops between streams once cancelled; the actor-call helper cancels
a call its caller stopped waiting for, and the querier pool never sends a timed-out call again."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from svclog.actors import calls
from svclog.actors.calls import ActorUnavailable, CallTimeout, Handles, acall_cancelling
from svclog.actors.service_clients import Queriers
from svclog.ingester.instance import SelectCancelled, TenantInstance
from svclog.logql.engine.guard import QueryCancelled, QueryGuard, QueryLimits, QueryTimedOut
from svclog.logql.source import SelectRequest
from svclog.model import NS, Labels, Matcher, MatchType, StreamColumns
from svclog.querier.querier import Querier, QuerierSettings
from svclog.querier.source import StoreSource
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore

# ------------------------------------------------------------------ the guard


def test_cancel_runs_each_hook_once_and_a_late_hook_at_once():
    guard = QueryGuard()
    ran: list[str] = []
    guard.on_cancel(lambda: ran.append("a"))
    forget_b = guard.on_cancel(lambda: ran.append("b"))
    forget_b()  # its work finished before the cancel: nothing to stop
    guard.cancel()
    guard.cancel()
    assert ran == ["a"] and guard.cancelled
    guard.on_cancel(lambda: ran.append("late"))  # registered after the cancel: runs at once
    assert ran == ["a", "late"]
    with pytest.raises(QueryCancelled):
        guard.check()


def test_a_failing_hook_does_not_stop_the_others():
    guard = QueryGuard()
    ran: list[int] = []
    guard.on_cancel(lambda: 1 / 0)
    guard.on_cancel(lambda: ran.append(1))
    guard.cancel()
    assert ran == [1]


def test_a_cancel_from_the_caller_is_heard_through_the_probe_and_runs_the_hooks():
    asked: list[float] = []
    cancelled = [False]

    def probe() -> bool:
        asked.append(time.monotonic())
        return cancelled[0]

    guard = QueryLimits.starting_now(60 * NS, 0).guard(cancelled_elsewhere=probe)
    ran: list[int] = []
    guard.on_cancel(lambda: ran.append(1))
    for _ in range(1000):
        guard.check()  # a tight loop asks the probe only every PROBE_EVERY_S, not 1000 times
    assert 1 <= len(asked) <= 3
    cancelled[0] = True
    time.sleep(0.06)
    with pytest.raises(QueryCancelled):
        guard.check()
    assert ran == [1]


# ------------------------------------------------------------------ metadata requests in the querier


def _querier(tmp_path, ingesters=None) -> Querier:
    store = ObjectStore(str(tmp_path))
    return Querier(IndexReader(store), ChunkStore(store), ingesters, QuerierSettings(query_ingesters_within=0))


class _Series:
    """Ingesters that know a few streams (metadata reads ask them for series)."""

    def select(self, tenant, matchers, start, end, shard, line_filters=(), deadline=None):
        return [], 1

    def series(self, tenant, matchers, start, end):
        return [Labels.from_dict({"app": "a"})]

    def stats(self, tenant, matchers, start, end):
        return []


@pytest.mark.parametrize(
    "call",
    [
        lambda q, g: q.series(["t"], ['{app="a"}'], 0, NS, guard=g),
        lambda q, g: q.label_names(["t"], 0, NS, None, guard=g),
        lambda q, g: q.label_values(["t"], "app", 0, NS, None, guard=g),
        lambda q, g: q.index_stats(["t"], '{app="a"}', 0, NS, guard=g),
        lambda q, g: q.volume(["t"], '{app="a"}', 0, NS, 100, (), "series", None, guard=g),
    ],
    ids=["series", "labels", "label_values", "index_stats", "volume"],
)
def test_metadata_requests_stop_under_their_guard(tmp_path, call):
    querier = _querier(tmp_path, _Series())
    assert call(querier, QueryGuard()) is not None  # a live guard: answered
    cancelled = QueryGuard()
    cancelled.cancel()
    with pytest.raises(QueryCancelled):
        call(querier, cancelled)
    expired = QueryLimits.starting_now(NS, 0, now=time.time() - 2).guard()
    with pytest.raises(QueryTimedOut, match=r"after 1s \(query_timeout\)"):
        call(querier, expired)


# ------------------------------------------------------------------ ingester selects


class _BlockingIngesters:
    """A cancellable reader whose select runs until its query's cancel hook stops it, as a select
    in an ingester process runs until the querier cancels the call."""

    applies_line_filters = True
    cancellable = True

    def __init__(self) -> None:
        self.started = threading.Event()
        self.stopped = threading.Event()

    def select(self, tenant, matchers, start, end, shard, line_filters=(), deadline=None, on_cancel=None):
        assert on_cancel is not None, "a cancellable reader must be given the query's cancel hook"
        forget = on_cancel(self.stopped.set)
        try:
            self.started.set()
            if not self.stopped.wait(10):
                raise AssertionError("the select was never cancelled")
            raise SelectCancelled("stopped")
        finally:
            forget()

    def series(self, tenant, matchers, start, end):
        return []


def test_a_cancelled_query_cancels_its_ingester_select(tmp_path):
    ingesters = _BlockingIngesters()
    store = ObjectStore(str(tmp_path))
    guard = QueryGuard()
    source = StoreSource(["t"], IndexReader(store), ChunkStore(store), ingesters, guard=guard)
    request = SelectRequest((Matcher("app", MatchType.EQ, "a"),), 0, NS)
    threading.Thread(target=lambda: ingesters.started.wait(5) and guard.cancel(), daemon=True).start()
    began = time.perf_counter()
    with pytest.raises(QueryCancelled):
        list(source.select_logs(request))
    assert ingesters.stopped.is_set() and time.perf_counter() - began < 5


def _instance(streams: int) -> TenantInstance:
    instance = TenantInstance("t")
    instance.push(
        [
            StreamColumns(Labels.from_dict({"app": "a", "pod": str(p)}), [1, 2], ["x", "y"], None)
            for p in range(streams)
        ],
        0,
    )
    return instance


def test_an_ingester_select_stops_between_streams_once_cancelled():
    instance = _instance(50)
    asked = [0]

    def cancelled_after_three() -> bool:
        asked[0] += 1
        return asked[0] > 3

    matchers = (Matcher("app", MatchType.EQ, "a"),)
    assert len(instance.select_scanned(matchers, 0, 10, cancelled=lambda: False)[0]) == 50
    with pytest.raises(SelectCancelled):
        instance.select_scanned(matchers, 0, 10, cancelled=cancelled_after_three)
    assert asked[0] == 4  # stopped at the fourth stream, not after all fifty


# ------------------------------------------------------------------ the actor-call helper and the querier pool


class _Slow:
    """A stand-in remote method: `.remote` returns a coroutine (as test_actor_calls' stand-ins do)."""

    def __init__(self, delay: float, answer=None):
        self.delay, self.answer, self.calls = delay, answer, 0

    def remote(self, *args, **kwargs):
        self.calls += 1

        async def run():
            await asyncio.sleep(self.delay)
            return self.answer

        return run()


def _spy(monkeypatch) -> list:
    cancelled: list = []
    monkeypatch.setattr(calls, "cancel_calls", lambda refs: cancelled.extend(refs) or len(refs))
    return cancelled


def test_a_call_past_its_timeout_is_cancelled_in_the_actor(monkeypatch):
    cancelled = _spy(monkeypatch)
    with pytest.raises(CallTimeout):
        asyncio.run(acall_cancelling(_Slow(5.0), timeout=0.05))
    assert len(cancelled) == 1
    assert asyncio.run(acall_cancelling(_Slow(0.0, "ok"), timeout=5)) == "ok"
    assert len(cancelled) == 1  # an answered call is left alone


def test_a_call_whose_caller_goes_away_is_cancelled_in_the_actor(monkeypatch):
    cancelled = _spy(monkeypatch)

    async def client_leaves():
        task = asyncio.ensure_future(acall_cancelling(_Slow(5.0), timeout=60))
        await asyncio.sleep(0.05)
        task.cancel()  # what Serve does to the handler when the HTTP client disconnects
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(client_leaves())
    assert len(cancelled) == 1


class _Querier:
    def __init__(self, method):
        self.series = method


def test_the_querier_pool_never_sends_a_timed_out_call_again(monkeypatch):
    cancelled = _spy(monkeypatch)
    first, second = _Slow(5.0), _Slow(0.0, ["found"])
    handles = Handles()
    handles.put("q0", _Querier(first))
    handles.put("q1", _Querier(second))
    with pytest.raises(CallTimeout):
        asyncio.run(Queriers(["q0", "q1"], handles).acall("series", ["t"], timeout=0.05))
    assert (first.calls, second.calls, len(cancelled)) == (1, 0, 1)


def test_the_querier_pool_still_fails_over_from_a_dead_querier(monkeypatch):
    _spy(monkeypatch)

    class _Dead:
        def remote(self, *args, **kwargs):
            async def run():
                raise ActorUnavailable("dead")

            return run()

    handles = Handles()
    handles.put("q0", _Querier(_Dead()))
    handles.put("q1", _Querier(_Slow(0.0, ["found"])))
    monkeypatch.setattr(Queriers, "RETRY_PAUSE_S", 0.0)
    assert asyncio.run(Queriers(["q0", "q1"], handles).acall("series", ["t"], timeout=5)) == ["found"]
