"""Series, labels, label values, index stats and volume have the query's deadline (issue 17): the
strictest tenant's query_timeout, then a 504 naming it."""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import time

from svclog.actors.calls import acall_cancelling
from svclog.config import default_config
from svclog.serve.deployments import HostedFrontend
from svclog.serve.errors import ErrorReply


class _SlowMethod:
    """An actor method whose `.remote()` answers after `delay_s` (a coroutine stands for the ref)."""

    def __init__(self, name: str, delay_s: float, calls: list):
        self.name, self.delay_s, self.calls = name, delay_s, calls

    def remote(self, *args, **kwargs):
        self.calls.append((self.name, args))

        async def answer():
            await asyncio.sleep(self.delay_s)
            return {"method": self.name}

        return answer()


class _Queriers:
    """The querier pool's call path (acall_cancelling) over slow stand-in methods (no Ray)."""

    names = ["querier-0"]

    def __init__(self, delay_s: float, calls: list):
        self.delay_s, self.calls = delay_s, calls

    async def acall(self, method, *args, timeout, prefer=None, **kwargs):
        return await acall_cancelling(_SlowMethod(method, self.delay_s, self.calls), *args, timeout=timeout, **kwargs)


class _Frontend(HostedFrontend):
    """The hosted frontend with querier calls that take `delay_s` (no Ray)."""

    def __init__(self, cfg, delay_s: float):
        self.cfg, self.calls = cfg, []
        self.queriers = _Queriers(delay_s, self.calls)
        self._tenants_busy = collections.Counter()
        self._max_queriers = lambda tenant, total: 0


def _cfg(timeout_ns: int):
    cfg = default_config()
    return dataclasses.replace(cfg, limits_config=dataclasses.replace(cfg.limits_config, query_timeout=timeout_ns))


def test_a_slow_metadata_call_answers_504_at_the_query_timeout():
    frontend = _Frontend(_cfg(300_000_000), delay_s=5)  # 300ms
    for method, args in [
        ("series", (["a"], [], 0, 1)),
        ("label_names", (["a"], 0, 1, None)),
        ("label_values", (["a"], "app", 0, 1, None)),
        ("index_stats", (["a"], "{}", 0, 1)),
        ("volume", (["a"], "{}", 0, 1)),
    ]:
        began = time.perf_counter()
        reply = asyncio.run(frontend.metadata(method, *args))
        took = time.perf_counter() - began
        assert isinstance(reply, ErrorReply) and reply.status == 504, (method, reply)
        assert "timed out after 300ms (query_timeout)" in reply.message, reply.message
        assert 0.25 < took < 2, (method, took)


def test_a_call_within_the_timeout_answers_normally():
    frontend = _Frontend(_cfg(2_000_000_000), delay_s=0.01)
    assert asyncio.run(frontend.metadata("series", ["a"], [], 0, 1)) == {"method": "series"}
    assert frontend.calls == [("series", (["a"], [], 0, 1))]


def test_no_timeout_configured_waits_for_the_answer():
    frontend = _Frontend(_cfg(0), delay_s=0.05)
    assert asyncio.run(frontend.metadata("volume", ["a"], "{}", 0, 1)) == {"method": "volume"}


def test_a_client_that_goes_away_cancels_the_metadata_call_in_the_querier(monkeypatch):
    """The HTTP client disconnecting cancels the handler's task (Serve does): the querier's call
    is cancelled too (ray.cancel on its reference, which the querier's guard hears), for every
    metadata route, long before any timeout."""
    import svclog.actors.calls as calls

    cancelled_refs: list = []
    monkeypatch.setattr(calls, "cancel_calls", lambda refs: cancelled_refs.extend(refs) or len(refs))
    frontend = _Frontend(_cfg(60 * 10**9), delay_s=30)
    for method, args in [
        ("series", (["a"], [], 0, 1)),
        ("label_names", (["a"], 0, 1, None)),
        ("label_values", (["a"], "app", 0, 1, None)),
        ("volume", (["a"], "{}", 0, 1)),
    ]:
        cancelled_refs.clear()

        async def client_leaves(method: str, args: tuple) -> float:
            task = asyncio.create_task(frontend.metadata(method, *args))
            await asyncio.sleep(0.05)  # the call is under way in the querier
            task.cancel()
            began = time.perf_counter()
            try:
                await task
            except asyncio.CancelledError:
                return time.perf_counter() - began
            raise AssertionError(f"{method}: the cancelled request still answered")

        took = asyncio.run(client_leaves(method, args))
        assert took < 0.5, (method, took)
        assert len(cancelled_refs) == 1, (method, cancelled_refs)  # exactly the querier call it started
        frontend.calls.clear()
