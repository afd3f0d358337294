"""A select's answer leaves the ingester through Ray's serializer, which sends only the rows a window
views: the ingester packs windows (slices of its heads and chunks) without copying them first."""

import time

from ray import cloudpickle
from ray._private.serialization import SerializationContext

from svclog.ingester.instance import INLINE_TABLE_BYTES, TenantInstance
from svclog.model import Labels, Matcher, MatchType, StreamColumns

ANY_APP = (Matcher("app", MatchType.RE, ".+"),)


def _ray_pickled_bytes(value) -> int:
    """Bytes of `value` as a Ray worker serializes it (in-band pickle plus out-of-band buffers)."""
    SerializationContext(None)  # registers Ray's reducers (Arrow tables among them), as every worker does
    buffers: list = []
    data = cloudpickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    return len(data) + sum(memoryview(b).nbytes for b in buffers)


def _instance(rows: int) -> TenantInstance:
    instance = TenantInstance("t")
    metadata = [[("trace_id", f"t{i}")] if i % 3 == 0 else None for i in range(rows)]
    instance.push(
        [
            StreamColumns(
                Labels((("app", "a"),)), list(range(rows)), [f"line {i} " + "x" * 60 for i in range(rows)], metadata
            )
        ],
        time.time_ns(),
    )
    return instance


def test_a_small_window_of_a_head_travels_as_its_rows_not_the_heads_buffers():
    instance = _instance(3_000)  # below a block's worth of lines: the head's open part, unpacked
    whole = instance.select_packed(ANY_APP, 0, 3_000)
    window = instance.select_packed(ANY_APP, 100, 110)
    assert _ray_pickled_bytes(window) * 50 < _ray_pickled_bytes(whole)


def test_packed_blocks_travel_compressed_and_only_those_in_the_window():
    instance = _instance(20_000)  # ~1.4 MB of lines: packed into blocks of 256 kB
    head = next(iter(instance.streams.values())).head
    assert len(head.blocks) >= 4
    whole = instance.select_packed(ANY_APP, 0, 20_000)
    window = instance.select_packed(ANY_APP, 100, 110)
    raw = sum(block.raw_bytes for block in head.blocks)
    assert _ray_pickled_bytes(whole) < raw / 2  # compressed on the wire
    assert _ray_pickled_bytes(window) * 3 < _ray_pickled_bytes(whole)  # one block of several
    ((_, table),) = window.unpack()
    assert table.column("ts").to_pylist() == list(range(100, 110))
    assert window.scan.head_lines == 10  # counted when unpacked: what the window kept


def test_windows_arrive_with_their_rows_and_metadata():
    instance = _instance(1_000)
    window = instance.select_packed(ANY_APP, 500, 520)
    SerializationContext(None)
    buffers: list = []
    data = cloudpickle.dumps(window, protocol=5, buffer_callback=buffers.append)
    ((labels, table),) = cloudpickle.loads(data, buffers=buffers).unpack()
    ((_, sent),) = window.unpack()
    assert labels.get("app") == "a" and table.equals(sent)
    assert table.column("ts").to_pylist() == list(range(500, 520))
    assert table.column("metadata").to_pylist()[1:3] == [[("trace_id", "t501")], None]


def _ray_round_trip(value):
    """`value` through a Ray worker's serializer and back, with the out-of-band buffers it used."""
    SerializationContext(None)
    buffers: list = []
    data = cloudpickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    return cloudpickle.loads(data, buffers=buffers), buffers


def test_a_small_answer_crosses_as_one_message_in_the_pickle():
    """A light query's rows skip Ray's Arrow reducer (Python over every array, on the ingester's
    call thread): they go as an IPC message inside the pickle and come back the same."""
    instance = _instance(1_000)
    window = instance.select_packed(ANY_APP, 200, 260)
    assert window.table is not None and window.table.nbytes <= INLINE_TABLE_BYTES
    back, buffers = _ray_round_trip(window)
    assert buffers == []  # nothing out of band: no Arrow buffer went through the reducer
    ((labels, table),) = back.unpack()
    ((_, sent),) = window.unpack()
    assert labels.get("app") == "a" and table.equals(sent) and table.schema.equals(sent.schema)
    assert table.column("ts").to_pylist() == list(range(200, 260))


def test_a_large_answer_keeps_its_buffers_out_of_band():
    instance = _instance(3_000)  # ~290 kB of rows in the head's open part
    whole = instance.select_packed(ANY_APP, 0, 3_000)
    assert whole.table is not None and whole.table.nbytes > INLINE_TABLE_BYTES
    back, buffers = _ray_round_trip(whole)
    assert buffers  # the reducer's buffers, written once into the object store
    ((_, table),) = back.unpack()
    assert table.column("ts").to_pylist() == list(range(3_000))
