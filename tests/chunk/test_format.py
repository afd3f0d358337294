import random
import threading

import pyarrow as pa
import pytest

from svclog.chunk.format import ChunkLayout, chunk_layout, decode_chunk, encode_chunk, open_chunk
from svclog.chunk.head import HeadBlock, entries_batch, sort_dedupe
from svclog.logql.source import METADATA_TYPE


def _table(ts, lines, md=None):
    return pa.table(
        {"ts": pa.array(ts, pa.int64()), "line": lines, "metadata": pa.array(md or [None] * len(ts), METADATA_TYPE)}
    )


@pytest.mark.parametrize("encoding", ["zstd", "lz4", "snappy", "none", "lz4-256k", "flate", "gzip"])
def test_round_trip_keeps_entries_and_metadata(encoding):
    table = _table([1, 2, 3], ["a", "b", "c"], [[("trace_id", "t1")], None, [("k", "v"), ("x", "y")]])
    data = decode_chunk(encode_chunk(table, encoding=encoding))
    assert data.ts.to_pylist() == [1, 2, 3]
    assert data.line.to_pylist() == ["a", "b", "c"]
    assert data.metadata.to_pylist() == [[("trace_id", "t1")], None, [("k", "v"), ("x", "y")]]


def test_decode_reads_only_the_time_range_and_skips_blocks():
    n = 10_000
    table = _table(list(range(0, n * 10, 10)), ["x" * 100] * n)
    data = encode_chunk(table, block_bytes=50_000)
    reader = pa.ipc.open_file(pa.BufferReader(data))
    assert reader.num_record_batches == 20  # 1 MB of lines in 50 kB blocks
    window = decode_chunk(data, 5000, 20_000)
    assert window.ts[0].as_py() == 5000 and window.ts[-1].as_py() == 19_990
    assert len(window) == 1500
    assert len(decode_chunk(data, 10**9, 10**9 + 1)) == 0


@pytest.mark.parametrize("with_layout", [False, True])
def test_time_range_cuts_inside_blocks_like_a_row_filter(with_layout):
    # ties at the cut points, metadata on some rows: the slice must equal a row-by-row filter
    ts = sorted([t // 3 * 3 for t in range(0, 3000, 1)])
    md = [[("k", str(i))] if i % 7 == 0 else None for i in range(len(ts))]
    table = _table(ts, [f"line {i} " + "y" * (i % 50) for i in range(len(ts))], md)
    data = encode_chunk(table, block_bytes=20_000)
    layout = chunk_layout(data) if with_layout else None
    for start, end in [(0, 3000), (3, 2997), (1000, 1001), (999, 1500), (-5, 10**6), (2999, 3000), (1500, 1500)]:
        window = decode_chunk(data, start, end, layout=layout)
        rows = [i for i, t in enumerate(ts) if start <= t < end]
        assert window.ts.to_pylist() == [ts[i] for i in rows]
        assert window.line.to_pylist() == [table.column("line")[i].as_py() for i in rows]
        assert window.metadata.to_pylist() == [md[i] for i in rows]
        if len(window):  # a map slice's .keys ignore its offset: what readers get is compact
            assert window.metadata.offset == 0 or window.metadata.null_count == len(window)
            assert window.metadata.keys.to_pylist() == [k for i in rows if md[i] for k, _ in md[i]]


def test_unsorted_blocks_are_filtered_not_sliced():
    # a block whose timestamps do not ascend (no writer of ours makes one) still reads exactly
    batch = pa.record_batch(
        [pa.array([5, 1, 9, 3], pa.int64()), pa.array(["a", "b", "c", "d"]), pa.array([None] * 4, METADATA_TYPE)],
        names=["ts", "line", "metadata"],
    )
    sink = pa.BufferOutputStream()
    schema = batch.schema.with_metadata({"blocks": "[[5, 3]]"})
    with pa.ipc.new_file(sink, schema) as writer:
        writer.write_batch(batch)
    assert decode_chunk(sink.getvalue(), 2, 6).line.to_pylist() == ["a", "d"]


def test_layout_decodes_the_token_index_only_when_asked():
    data = encode_chunk(_table([1, 2, 3], ["alpha bravo", "charlie", "delta"]))
    layout = chunk_layout(data)
    assert isinstance(layout, ChunkLayout) and layout._index is None
    assert len(decode_chunk(data, 0, 10, layout=layout)) == 3 and layout._index is None
    assert layout.index is not None and len(layout.index) == len(layout.bounds) == 1
    assert layout.index is layout.index  # decoded once, then kept


def test_unknown_encoding_is_rejected():
    with pytest.raises(ValueError):
        encode_chunk(_table([1], ["a"]), encoding="brotli9")


def test_sort_dedupe_orders_and_drops_exact_duplicates_only():
    table = _table([5, 1, 5, 1, 3], ["b", "a", "b", "z", "c"])
    out = sort_dedupe(table)
    assert out.column("ts").to_pylist() == [1, 1, 3, 5]
    assert out.column("line").to_pylist() == ["a", "z", "c", "b"]


def test_head_block_tracks_bounds_and_seals_sorted():
    head = HeadBlock()
    head.append_batch(entries_batch([30, 10], ["c", "a"], None), 10, 30, 2)
    head.append_batch(entries_batch([20], ["b"], [[("k", "v")]]), 20, 20, 1)
    assert (head.min_ts, head.max_ts, head.raw_bytes, len(head)) == (10, 30, 3, 3)
    chunk = head.seal()
    assert chunk.table.column("ts").to_pylist() == [10, 20, 30]
    assert chunk.table.column("metadata").to_pylist()[1] == [("k", "v")]
    assert (chunk.min_ts, chunk.max_ts) == (10, 30)


def test_chunks_say_their_blocks_ascend_and_older_ones_are_checked():
    table = sort_dedupe(
        pa.table(
            {"ts": [5, 1, 3, 2, 4], "line": list("abcde"), "metadata": pa.nulls(5, METADATA_TYPE)},
        )
    )
    data = encode_chunk(table, block_bytes=2)
    assert chunk_layout(data).ascending  # every writer sorts: readers slice by binary search
    legacy = ChunkLayout(chunk_layout(data).bounds, None)  # a chunk written before the flag: checked
    assert not legacy.ascending
    for layout in (chunk_layout(data), legacy):
        assert decode_chunk(data, 2, 5, layout=layout).ts.to_pylist() == [2, 3, 4]


def test_one_opened_chunk_reads_blocks_from_many_threads_at_once():
    # the chunk store keeps one opened file per cached chunk for every query thread
    rows = 50_000
    table = pa.table(
        {
            "ts": pa.array(range(rows), pa.int64()),
            "line": pa.array([f"line {i} " + "x" * (i % 300) for i in range(rows)]),
            "metadata": pa.nulls(rows, METADATA_TYPE),
        }
    )
    data = encode_chunk(table, block_bytes=32 * 1024, encoding="lz4")
    shared = open_chunk(data)
    blocks = shared.num_record_batches
    want = [open_chunk(data).get_batch(i) for i in range(blocks)]
    wrong: list[int] = []

    def read(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(300):
            i = rng.randrange(blocks)
            if not shared.get_batch(i).equals(want[i]):
                wrong.append(i)

    threads = [threading.Thread(target=read, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert blocks > 50 and wrong == []
