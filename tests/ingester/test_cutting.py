"""Chunk cutting: by size on append, by idle time and by age on the flush tick; the flush queue."""

from __future__ import annotations

import pytest

from svclog.ingester import ingester as ingester_module
from svclog.ingester.ingester import FlushError, Ingester, IngesterSettings
from svclog.ingester.stream import MemoryStream
from svclog.model import Labels, StreamColumns

MINUTE = 60 * 10**9


class MemoryWriter:
    def __init__(self, failing: bool = False):
        self.failing = failing
        self.chunks = []

    def put_chunks(self, tenant, chunks, writer_id):
        if self.failing:
            raise OSError("object store unreachable: connection refused")
        self.chunks.extend(chunks)
        return []


class Clock:
    def __init__(self, now: int):
        self.now = now

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock(1_700_000_000 * 10**9)
    monkeypatch.setattr(ingester_module.time, "time_ns", clock)
    return clock


def _stream(app, n, size=10, start=0):
    return StreamColumns(Labels({"app": app}.items()), list(range(start, start + n)), ["x" * size] * n)


def _ingester(tmp_path, writer, **kw):
    return Ingester(IngesterSettings("ing-0", str(tmp_path / "wal"), wal_enabled=False, **kw), writer)


def test_a_head_is_cut_on_the_append_that_fills_it(tmp_path, clock):
    writer = MemoryWriter()
    ing = _ingester(tmp_path, writer, chunk_target_size=1000)
    for i in range(25):  # 25 pushes of 100 bytes: cut at 1000 and 2000, 500 bytes left in the head
        ing.push("t", [_stream("a", 10, start=i * 10)])
    stream = ing.tenants["t"].streams[Labels({"app": "a"}.items())]
    assert [c.raw_bytes for c in stream.sealed] == [1000, 1000] and stream.head.raw_bytes == 500
    assert ing.flush_queue_length() == 2 and ing.memory_chunks() == 3
    assert ing.flush() == 2  # the tick uploads sealed chunks; the young, small head stays
    assert ing.flush_queue_length() == 0 and len(stream.head) == 50
    assert all(c.raw_bytes <= 1000 for _, c in writer.chunks)


def test_cut_by_idle_period(tmp_path, clock):
    writer = MemoryWriter()
    ing = _ingester(tmp_path, writer, chunk_idle_period=30 * MINUTE, max_chunk_age=120 * MINUTE)
    ing.push("t", [_stream("quiet", 3)])
    clock.now += 29 * MINUTE
    ing.push("t", [_stream("busy", 3)])
    assert ing.flush() == 0
    clock.now += 2 * MINUTE  # "quiet" idle for 31 minutes, "busy" for 2
    assert ing.flush() == 1
    assert [str(labels) for labels, _ in writer.chunks] == ['{app="quiet"}']


def test_cut_by_max_chunk_age_even_while_appended_to(tmp_path, clock):
    writer = MemoryWriter()
    ing = _ingester(tmp_path, writer, chunk_idle_period=30 * MINUTE, max_chunk_age=60 * MINUTE)
    for i in range(6):  # an append every 10 minutes: never idle, the head ages
        ing.push("t", [_stream("steady", 1, start=i)])
        assert ing.flush() == 0
        clock.now += 10 * MINUTE
    ing.push("t", [_stream("steady", 1, start=6)])
    assert ing.flush() == 1
    ((_, chunk),) = writer.chunks
    assert chunk.table.num_rows == 7


def test_cut_reason_order():
    stream = MemoryStream(Labels({"app": "a"}.items()), 0)
    assert stream.cut_reason(10**15, 1, 1, 1) is None  # empty head: nothing to cut
    stream.append(_batch(), 0, 0, 10, now_ns=0)
    assert stream.cut_reason(5, 10, 100, 100) == "full"
    assert stream.cut_reason(100, 11, 100, 50) == "idle"
    assert stream.cut_reason(60, 11, 100, 50) == "max_age"
    assert stream.cut_reason(40, 11, 100, 50) is None


def _batch():
    from svclog.chunk.head import entries_batch

    return entries_batch([0], ["x" * 10], None)


def test_flush_all_reports_a_store_failure_and_keeps_the_chunks(tmp_path, clock):
    writer = MemoryWriter(failing=True)
    ing = _ingester(tmp_path, writer)
    ing.push("t", [_stream("a", 3), _stream("b", 2)])
    with pytest.raises(FlushError, match="2 stream.*object store.*OSError: object store unreachable") as err:
        ing.flush_all()
    assert err.value.status == 503
    assert ing.flush_queue_length() == 2 and ing.stats.flush_failures == 2
    writer.failing = False
    assert ing.flush_all() == 2 and ing.flush_queue_length() == 0
    assert ing.memory_chunks() == 2  # flushed, and retained for the retain period
