"""Counting queries read stored chunks without their lines, and answer as a full read does.

`count_over_time`, `rate` and `absent_over_time` over a pipeline of label-only stages never look
at a line, so the store's chunks are decoded without the line column; streams whose chunks
overlap in time (replicas) or that have unflushed entries are still read whole, since dropping
repeats compares lines.
"""

import pyarrow as pa
import pytest

from svclog.chunk.format import CHUNK_SCHEMA, BlockScan, ChunkLayout, decode_blocks, encode_chunk, open_chunk
from svclog.ingester.ingester import Ingester, IngesterSettings
from svclog.logql.engine.evaluator import evaluate
from svclog.logql.engine.params import QueryParams
from svclog.logql.parser import parse
from svclog.logql.source import METADATA_TYPE
from svclog.model import Labels, StreamColumns
from svclog.querier.source import StoreSource
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore
from tests.querier.test_source import Replicas

T = 1_700_000_000 * 10**9
S = 10**9
APP = Labels({"app": "a"}.items())
OTHER = Labels({"app": "b"}.items())


class _Recording(ChunkStore):
    """A chunk store that notes, per fetch, whether the lines were asked for."""

    def __init__(self, store):
        super().__init__(store, block_bytes=64)  # small blocks: windows cut through them
        self.asked: list[bool] = []

    def fetch(self, ref, start, end, stats=None, may_match=None, lines=True):
        self.asked.append(lines)
        return super().fetch(ref, start, end, stats, may_match, lines)


def _ingester(tmp_path, chunks, name="i0"):
    return Ingester(IngesterSettings(name, str(tmp_path / f"w-{name}")), chunks)


def _push(ingesters, labels, seconds, lines, metadata=None):
    for ing in ingesters:
        ing.push("t", [StreamColumns(labels, [T + s * S for s in seconds], lines, metadata)])


def _samples(source, query, start=T, end=T + 60 * S, step=10 * S):
    params = QueryParams.for_range(start, end, step=step)
    result = evaluate(parse(query), params, source)
    return {str(series.labels): list(zip(series.ts.tolist(), series.values.tolist())) for series in result.series}


def _both(store, chunks, ingesters, query, **window):
    """(answer with the chunk store as it is, answer with every chunk read whole), and the
    `lines` each of the first answer's fetches asked for."""
    chunks.asked.clear()
    fast = StoreSource(["t"], IndexReader(store), chunks, Replicas(ingesters) if ingesters else None)
    answer = _samples(fast, query, **window)
    asked = list(chunks.asked)
    whole = _WholeReads(chunks.store)
    slow = StoreSource(["t"], IndexReader(store), whole, Replicas(ingesters) if ingesters else None)
    return answer, _samples(slow, query, **window), asked, fast, slow


class _WholeReads(ChunkStore):
    def fetch(self, ref, start, end, stats=None, may_match=None, lines=True):
        return super().fetch(ref, start, end, stats, may_match, True)


@pytest.fixture
def store(tmp_path):
    return ObjectStore(str(tmp_path / "s"))


def test_counts_over_chunks_apart_in_time_skip_the_lines_and_keep_ties(tmp_path, store):
    chunks = _Recording(store)
    ing = _ingester(tmp_path, chunks)
    # equal timestamps with different lines are distinct entries: none may collapse
    _push([ing], APP, [1, 1, 1, 5, 9, 9], ["x one", "x two", "x three", "four", "five", "six"])
    ing.flush(force=True)
    _push([ing], APP, [20, 20, 31, 45], ["seven", "eight", "nine", "ten"])
    ing.flush(force=True)
    _push([ing], OTHER, [3, 50], ["b one", "b two"])
    ing.flush(force=True)
    query = 'sum by (app) (count_over_time({app=~"a|b"}[30s]))'
    fast, slow, asked, fast_source, slow_source = _both(store, chunks, [], query)
    assert fast == slow
    assert asked and not any(asked)
    assert fast_source.stats.store_lines == slow_source.stats.store_lines
    assert fast_source.stats.store_bytes == slow_source.stats.store_bytes  # whole blocks: exact
    for query in (
        'rate({app="a"}[20s])',
        'absent_over_time({app="a"}[5s])',
        'count_over_time({app="a"} | drop x [1m])',
    ):
        fast, slow, asked, _, _ = _both(store, chunks, [], query)
        assert fast == slow and not any(asked), query


def test_a_window_cutting_blocks_counts_their_bytes_in_proportion(tmp_path, store):
    chunks = _Recording(store)
    ing = _ingester(tmp_path, chunks)
    _push([ing], APP, list(range(40)), [f"line number {i:08d}" for i in range(40)])  # 20 bytes each
    ing.flush(force=True)
    fast, slow, asked, fast_source, slow_source = _both(
        store, chunks, [], 'count_over_time({app="a"}[10s])', start=T + 15 * S, end=T + 25 * S
    )
    assert fast == slow and not any(asked)
    assert fast_source.stats.store_lines == slow_source.stats.store_lines < 40  # blocks cut by the window
    assert fast_source.stats.store_bytes == slow_source.stats.store_bytes == 20 * slow_source.stats.store_lines


def test_reads_that_need_lines_still_decode_them(tmp_path, store):
    chunks = _Recording(store)
    ing = _ingester(tmp_path, chunks)
    _push([ing], APP, [1, 2, 3], ["error one", "fine", "error two"])
    ing.flush(force=True)
    for query in (
        'count_over_time({app="a"} |= "error" [1m])',  # a line filter
        'bytes_over_time({app="a"}[1m])',  # the lines' sizes
        'count_over_time({app="a"} | logfmt [1m])',  # a parser
        'sum_over_time({app="a"} | regexp "(?P<n>\\\\d+)" | unwrap n [1m])',
    ):
        fast, slow, asked, _, _ = _both(store, chunks, [], query)
        assert fast == slow and asked and all(asked), query


def test_replicas_and_unflushed_entries_are_read_whole_to_drop_repeats(tmp_path, store):
    chunks = _Recording(store)
    replicas = [_ingester(tmp_path, chunks, f"i{n}") for n in range(2)]
    _push(replicas, APP, [1, 2, 2], ["one", "two", "two again"])
    _push(replicas[1:], APP, [3], ["three"])  # one replica took one more: two chunks, spans overlapping
    for ing in replicas:
        ing.flush(force=True)
    query = 'count_over_time({app="a"}[1m])'
    fast, slow, asked, _, _ = _both(store, chunks, [], query)
    assert fast == slow and len(asked) == 2 and all(asked)
    assert list(fast.values())[0][-1][1] == 4.0  # each entry once

    alone = _ingester(tmp_path, chunks, "solo")
    _push([alone], OTHER, [1, 2], ["flushed", "flushed too"])
    alone.flush(force=True)
    _push([alone], OTHER, [3, 3], ["in memory", "in memory too"])  # the same stream, unflushed
    fast, slow, asked, _, _ = _both(store, chunks, [alone], 'count_over_time({app="b"}[1m])')
    assert fast == slow and asked and all(asked)
    assert list(fast.values())[0][-1][1] == 4.0


def test_label_filters_on_structured_metadata_need_no_lines(tmp_path, store):
    chunks = _Recording(store)
    ing = _ingester(tmp_path, chunks)
    metadata = [[("user", "ann")], None, [("user", "bob")], [("user", "ann")]]
    _push([ing], APP, [1, 2, 3, 4], ["w", "x", "y", "z"], metadata)
    ing.flush(force=True)
    query = 'sum by (user) (count_over_time({app="a"} | user="ann" [1m]))'
    fast, slow, asked, _, _ = _both(store, chunks, [], query)
    assert fast == slow and not any(asked)
    assert list(fast.values())[0][-1][1] == 2.0


def test_a_chunk_read_without_lines_keeps_timestamps_and_metadata():
    rows = 300
    table = pa.table(
        {
            "ts": pa.array(range(rows), pa.int64()),
            "line": pa.array([f"entry {i:04d}" for i in range(rows)]),  # 10 bytes each
            "metadata": pa.array([[("k", str(i))] if i % 3 == 0 else None for i in range(rows)], METADATA_TYPE),
        },
        schema=CHUNK_SCHEMA,
    )
    data = encode_chunk(table, block_bytes=1000, encoding="lz4")
    layout = ChunkLayout.read(open_chunk(data))
    assert layout.line_bytes is not None and sum(layout.line_bytes) == 3000 and len(layout.line_bytes) == 3
    for start, end in ((None, None), (50, 250), (120, 130)):
        whole, scan = decode_blocks(data, start, end), BlockScan()
        bare = decode_blocks(data, start, end, scan=scan, layout=layout, lines=False)
        joined = pa.Table.from_batches(bare, schema=CHUNK_SCHEMA)
        full = pa.Table.from_batches(whole, schema=CHUNK_SCHEMA)
        assert joined.column("ts").to_pylist() == full.column("ts").to_pylist()
        assert joined.column("metadata").to_pylist() == full.column("metadata").to_pylist()
        assert set(joined.column("line").to_pylist()) <= {""}
        assert scan.unread_line_bytes == 10 * full.num_rows  # equal-sized lines: exact


def test_a_chunk_without_block_sizes_is_read_whole():
    table = pa.table(
        {"ts": pa.array([1, 2], pa.int64()), "line": ["a", "bb"], "metadata": pa.nulls(2, METADATA_TYPE)},
        schema=CHUNK_SCHEMA,
    )
    data = encode_chunk(table, encoding="lz4")
    layout = ChunkLayout.read(open_chunk(data))
    older = ChunkLayout(layout.bounds, None, layout.ascending)  # as a chunk written before the sizes
    scan = BlockScan()
    batches = decode_blocks(data, scan=scan, layout=older, lines=False)
    assert batches[0].column(1).to_pylist() == ["a", "bb"] and scan.unread_line_bytes == 0
