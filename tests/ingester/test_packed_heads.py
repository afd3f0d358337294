"""An ingester keeps what it holds as packed (compressed) blocks once a head has a block's worth:
every read answers as from the plain rows (order of ties, time windows, filters, counts, the WAL),
and a select ships the blocks compressed for the querier to decode."""

from __future__ import annotations

import pickle
import random

import pyarrow as pa
import pytest

from svclog.chunk.head import HeadBlock, entries_batch
from svclog.chunk.packed import PackedBlock
from svclog.ingester.ingester import Ingester, IngesterSettings
from svclog.ingester.instance import TenantInstance
from svclog.logql.parser import parse
from svclog.model import Labels, Matcher, MatchType, StreamColumns
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.objstore import ObjectStore

ANY = (Matcher("app", MatchType.RE, ".+"),)
BLOCK = 2048  # line bytes per block: a few dozen of the lines below


def _rows(rng: random.Random, count: int, ts: int) -> tuple[list[int], list[str]]:
    stamps, lines = [], []
    for i in range(count):
        ts += rng.choice((0, 0, 1, 5))  # ties, also across pushes and block edges
        stamps.append(ts)
        lines.append(f"{rng.choice(['GET', 'POST', 'error'])} n={i} id={rng.getrandbits(64):016x}")
    return stamps, lines


def _push_many(target, rng: random.Random, pushes: int, shuffle: bool = False) -> list[tuple[int, str]]:
    """Pushes of one stream `a`; returns every (ts, line) in push order."""
    written: list[tuple[int, str]] = []
    ts = 0
    for _ in range(pushes):
        stamps, lines = _rows(rng, rng.randrange(1, 60), ts)
        ts = stamps[-1]
        if shuffle:  # out of order within the push: the head keeps push order, a window filters
            order = list(range(len(stamps)))
            rng.shuffle(order)
            stamps, lines = [stamps[i] for i in order], [lines[i] for i in order]
        target(StreamColumns(Labels({"app": "a"}.items()), stamps, lines))
        written.extend(zip(stamps, lines))
    return written


def _instance() -> TenantInstance:
    return TenantInstance("t", block_bytes=BLOCK)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("shuffle", [False, True])
def test_a_packed_head_answers_every_window_in_push_order(seed, shuffle):
    rng = random.Random(seed)
    instance = _instance()
    written = _push_many(lambda s: instance.push([s], 0), rng, 40, shuffle)
    head = next(iter(instance.streams.values())).head
    assert len(head.blocks) >= 5 and head.raw_bytes - sum(b.raw_bytes for b in head.blocks) < BLOCK  # the rest open
    assert not shuffle or not all(block.ascending for block in head.blocks)
    top = max(ts for ts, _ in written)
    for _ in range(20):
        start = rng.randrange(0, top + 1)
        end = rng.randrange(start, top + 2)
        ((_, table),) = instance.select(ANY, start, end) or [(None, pa.table({"ts": [], "line": []}))]
        expected = [(ts, line) for ts, line in written if start <= ts < end]
        assert list(zip(table.column("ts").to_pylist(), table.column("line").to_pylist())) == expected
        lines, size = next(iter(instance.streams.values())).count(start, end)
        assert (lines, size) == (len(expected), sum(len(line) for _, line in expected))
        assert bool(instance.series(ANY, start, end)) == bool(expected)


def test_filters_over_packed_blocks_keep_what_filtering_the_rows_keeps():
    rng = random.Random(7)
    instance = _instance()
    written = _push_many(lambda s: instance.push([s], 0), rng, 30)
    filters = tuple(parse('{app="a"} |= "error" != "n=1"').stages)
    found, scan = instance.select_scanned(ANY, 0, 10**9, None, filters)
    ((_, table),) = found
    kept = [line for _, line in written if "error" in line and "n=1" not in line]
    assert table.column("line").to_pylist() == kept
    assert scan.head_lines == len(written)  # counted before the filters, as for plain rows


def test_a_select_ships_blocks_compressed_and_counts_them_when_unpacked():
    rng = random.Random(3)
    instance = _instance()
    written = _push_many(lambda s: instance.push([s], 0), rng, 40)
    packed = instance.select_packed(ANY, 0, 10**9)
    assert packed.blocks is not None and all(isinstance(b, PackedBlock) for _, b in packed.blocks[0])
    again = pickle.loads(pickle.dumps(packed))
    ((_, table),) = again.unpack()
    assert list(zip(table.column("ts").to_pylist(), table.column("line").to_pylist())) == written
    assert again.scan.head_lines == len(written)
    assert again.unpack()[0][1].num_rows < len(written)  # a second unpack counts nothing again


def test_a_head_cut_into_a_chunk_sorts_and_dedupes_over_its_blocks():
    head = HeadBlock()
    for ts, lines in (([3, 1, 2], ["c", "a", "b"]), ([2, 2, 4], ["b", "b2", "d"]), ([1], ["a"])):
        batch = entries_batch(ts, [line * 40 for line in lines], None)
        head.append_batch(batch, min(ts), max(ts), sum(len(x) * 40 for x in lines))
        head.pack(100)
    assert head.blocks
    chunk = head.seal(100)
    table = chunk.table
    # sorted stably (push order among ties), later copies of (ts, line) dropped
    assert table.column("ts").to_pylist() == [1, 2, 2, 3, 4]
    assert [line[0:2] for line in table.column("line").to_pylist()] == ["aa", "bb", "b2", "cc", "dd"]
    assert chunk.rows == 5 and all(block.ascending for block in chunk.blocks)


def test_a_checkpoint_keeps_packed_blocks_and_replays_them(tmp_path):
    rng = random.Random(11)
    store = ObjectStore(str(tmp_path / "store"))
    settings = IngesterSettings("ing-0", str(tmp_path / "wal"), chunk_block_size=BLOCK)
    ing = Ingester(settings, ChunkStore(store, block_bytes=BLOCK))
    written = _push_many(lambda s: ing.push("t", [s]), rng, 30)
    assert ing.packed()  # the packer thread compresses off the push path
    stream = next(iter(ing.tenants["t"].streams.values()))
    assert stream.head.blocks
    ing.checkpoint()
    _push_many(lambda s: ing.push("t", [s]), random.Random(12), 0)
    ing.close()
    again = Ingester(settings, ChunkStore(store, block_bytes=BLOCK))
    ((_, table),) = again.select("t", ANY, 0, 10**9)
    assert list(zip(table.column("ts").to_pylist(), table.column("line").to_pylist())) == written


def test_retained_blocks_are_the_flushed_chunks_blocks(tmp_path):
    rng = random.Random(5)
    store = ObjectStore(str(tmp_path / "store"))
    settings = IngesterSettings("ing-0", str(tmp_path / "wal"), wal_enabled=False, chunk_block_size=BLOCK)
    ing = Ingester(settings, ChunkStore(store, block_bytes=BLOCK))
    written = _push_many(lambda s: ing.push("t", [s]), rng, 30)
    ing.flush(force=True)
    stream = next(iter(ing.tenants["t"].streams.values()))
    ((chunk, _),) = stream.retained
    assert chunk.layout is not None and len(chunk.layout.bounds) == len(chunk.blocks)
    assert [(b.min_ts, b.max_ts) for b in chunk.blocks] == list(chunk.layout.bounds)
    ((_, table),) = ing.select("t", ANY, 0, 10**9)
    assert sorted(zip(table.column("ts").to_pylist(), table.column("line").to_pylist())) == sorted(set(written))


def test_a_stream_pushed_in_time_order_is_flushed_as_the_blocks_it_was_packed_in(tmp_path):
    """Sealing keeps such a head's packed blocks (no decode, no second compression), and the
    flushed file's blocks are those very blocks: the retained copy's token index still fits."""
    store = ObjectStore(str(tmp_path / "store"))
    settings = IngesterSettings("ing-0", str(tmp_path / "wal"), wal_enabled=False, chunk_block_size=BLOCK)
    ing = Ingester(settings, ChunkStore(store, block_bytes=BLOCK))
    rng = random.Random(8)
    written, ts = [], 0
    for _ in range(30):
        stamps, lines = [], []
        for _ in range(rng.randrange(1, 60)):
            ts += rng.choice((1, 3))
            stamps.append(ts)
            lines.append(f"GET id={rng.getrandbits(64):016x}")
        ing.push("t", [StreamColumns(Labels({"app": "a"}.items()), stamps, lines)])
        written += list(zip(stamps, lines))
    assert ing.packed()
    stream = next(iter(ing.tenants["t"].streams.values()))
    packed = stream.head.blocks
    ing.flush(force=True)
    ((chunk, _),) = stream.retained
    assert len(packed) > 3 and chunk.blocks[: len(packed)] == tuple(packed)
    assert chunk.layout is not None and [(b.min_ts, b.max_ts) for b in chunk.blocks] == list(chunk.layout.bounds)
    needle = written[len(written) // 2]
    filters = tuple(parse(f'{{app="a"}} |= "{needle[1]}"').stages)
    ((_, table),) = ing.select("t", ANY, 0, 10**9, line_filters=filters)
    assert needle in list(zip(table.column("ts").to_pylist(), table.column("line").to_pylist()))
    ((_, table),) = ing.select("t", ANY, 0, 10**9)
    assert list(zip(table.column("ts").to_pylist(), table.column("line").to_pylist())) == written
