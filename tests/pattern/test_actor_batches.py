"""PatternActor.push_batches as a plain object (no cluster): one failing batch is logged
and skipped, the other tenants' batches are still mined."""

from __future__ import annotations

import logging

from svclog.actors.pattern_actor import PatternActor
from svclog.config import load_config
from svclog.model import NS, StreamColumns
from tests.pattern.test_ingester import T0, eq, stream


def _stream(lines: list[str]) -> StreamColumns:
    return stream({"app": "a"}, [(T0, line) for line in lines])


def test_a_failing_batch_does_not_drop_the_others(caplog, monkeypatch):
    actor = PatternActor(load_config(None, []))
    push = actor.ingester.push

    def push_failing_for_bad(tenant, streams, weight=1):
        if tenant == "bad":
            raise RuntimeError("miner bug")
        return push(tenant, streams, weight)

    monkeypatch.setattr(actor.ingester, "push", push_failing_for_bad)
    batches = [
        ("bad", [_stream(["x 1 y"])], 1),
        ("good", [_stream(["job 1 done", "job 2 done", "}"])], 1),
        ("bad", [_stream(["x 2 y"])], 1),
    ]
    with caplog.at_level(logging.ERROR, logger="svclog.actors.pattern_actor"):
        assert actor.push_batches(batches) == 2
    out = actor.patterns("good", [eq("app", "a")], T0, T0 + NS, NS)
    assert [(p["pattern"], p["samples"]) for p in out] == [("job <_> done", [[T0 // NS, 2]])]
    assert actor.stats()["failed_batches"] == 2
    assert len([r for r in caplog.records if "teed batch" in r.getMessage()]) == 1
