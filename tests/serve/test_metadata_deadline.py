"""Series, labels, label values, index stats and volume have the query's deadline (issue 17): the
strictest tenant's query_timeout, then a 504 naming it."""

from __future__ import annotations

import asyncio
import dataclasses
import time

from svclog.config import default_config
from svclog.serve.deployments import HostedFrontend
from svclog.serve.errors import ErrorReply


class _Frontend(HostedFrontend):
    """The hosted frontend with a querier call that takes `delay_s` (no Ray)."""

    def __init__(self, cfg, delay_s: float):
        self.cfg, self.delay_s, self.calls = cfg, delay_s, []

    async def _call(self, method, *args):
        self.calls.append((method, args))
        await asyncio.sleep(self.delay_s)
        return {"method": method}


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
