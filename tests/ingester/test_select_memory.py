"""A select sends its rows without extra copies, and stops once its query's deadline has passed."""

import pickle
import time

import pytest

from svclog.chunk.head import entries_batch
from svclog.ingester.instance import PackedStreams, SelectDeadlinePassed, TenantInstance
from svclog.ingester.stream import MemoryStream
from svclog.model import Labels, Matcher, MatchType, StreamColumns

ANY_APP = (Matcher("app", MatchType.RE, ".+"),)


def _instance(streams: int = 3, rows: int = 100) -> TenantInstance:
    instance = TenantInstance("t")
    instance.push(
        [
            StreamColumns(Labels((("app", f"a{s}"),)), list(range(rows)), [f"line {s} {i}" for i in range(rows)])
            for s in range(streams)
        ],
        time.time_ns(),
    )
    return instance


def test_a_head_inside_the_range_is_sent_without_a_copy():
    instance = _instance(streams=1, rows=50)
    head = instance.streams[Labels((("app", "a0"),))].head.table()
    ((_, sent),) = instance.select_packed(ANY_APP, 0, 100).unpack()
    assert sent.column("line").chunk(0).buffers()[2].address == head.column("line").chunk(0).buffers()[2].address


def test_a_window_of_a_head_is_packed_without_a_copy():
    instance = _instance(streams=1, rows=10_000)
    head = instance.streams[Labels((("app", "a0"),))].head.table()
    ((_, sent),) = instance.select_packed(ANY_APP, 100, 110).unpack()
    assert sent.column("ts").to_pylist() == list(range(100, 110))
    assert sent.column("line").chunk(0).buffers()[2].address == head.column("line").chunk(0).buffers()[2].address


def test_out_of_order_pushes_keep_push_order_within_a_window():
    stream = MemoryStream(Labels((("app", "a"),)), 0)
    for ts in ([5, 1, 9], [2, 7]):
        stream.append(entries_batch(ts, [f"l{t}" for t in ts], None), min(ts), max(ts), 2 * len(ts), 0)
    ((from_head, head),) = stream.pieces(2, 8)
    assert from_head and head.column("ts").to_pylist() == [5, 2, 7]
    ((_, head),) = stream.pieces(5, 10)
    assert head.column("ts").to_pylist() == [5, 9, 7]


def test_packing_keeps_each_streams_rows():
    instance = _instance()
    packed = instance.select_packed(ANY_APP, 10, 20)
    again = pickle.loads(pickle.dumps(packed))
    assert [(labels.get("app"), t.column("ts").to_pylist()) for labels, t in again.unpack()] == [
        (f"a{s}", list(range(10, 20))) for s in range(3)
    ]
    assert PackedStreams.pack([]).unpack() == []


def test_a_select_past_its_deadline_stops():
    instance = _instance()
    with pytest.raises(SelectDeadlinePassed):
        instance.select_packed(ANY_APP, 0, 100, deadline=time.time() - 1)
    assert len(instance.select_packed(ANY_APP, 0, 100, deadline=time.time() + 60).unpack()) == 3
