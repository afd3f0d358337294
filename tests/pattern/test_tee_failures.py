"""The pattern feed's SampledTee (svclog/distributor/tee.py) when its sink fails: the batch
is dropped and counted, and the failure logged at most once a minute, never silently."""

from __future__ import annotations

import logging
import threading

from svclog.distributor.tee import SampledTee
from svclog.model import Labels, StreamColumns


def _stream(n: int) -> StreamColumns:
    return StreamColumns(Labels({"app": "a"}.items()), list(range(n)), [f"l{i}" for i in range(n)])


def test_failed_flushes_are_counted_and_logged_rate_limited(caplog):
    now = [100.0]
    stop = threading.Event()
    calls = []
    tee = SampledTee(lambda batches: None, clock=lambda: now[0])

    def failing_sink(batches):
        calls.append(batches)
        if len(calls) == 3:
            now[0] += 61  # a minute later: the next failure is logged again
        if len(calls) == 4:
            stop.set()
        tee.offer("t", [_stream(5)])  # keep a batch buffered for the next flush
        raise RuntimeError("pattern ingester unavailable")

    tee.sink = failing_sink
    tee.offer("t", [_stream(5)])
    with caplog.at_level(logging.WARNING, logger="svclog.distributor.tee"):
        tee.run_forever(interval=0.001, stop=stop)
    assert len(calls) == 4
    assert tee.failed_flushes == 4
    assert tee.dropped_lines == 20
    warnings = [r for r in caplog.records if "pattern tee" in r.getMessage()]
    assert len(warnings) == 2
    assert "1 flush(es) failed" in warnings[0].getMessage()
    assert "2 flush(es) failed" in warnings[1].getMessage()
    assert "pattern ingester unavailable" in warnings[1].getMessage()


def test_a_failed_flush_still_raises_to_a_direct_caller():
    tee = SampledTee(lambda batches: 1 / 0)
    tee.offer("t", [_stream(3)])
    try:
        tee.flush()
    except ZeroDivisionError:
        pass
    else:
        raise AssertionError("flush swallowed the sink's error")
    assert tee.dropped_lines == 3
