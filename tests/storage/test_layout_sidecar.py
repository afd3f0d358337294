"""The chunks' layouts written beside their index segment: a reader that never fetched a chunk
rules it out for a needle from them alone, with the answer of the chunk's own layout."""

from __future__ import annotations

import hashlib

import pyarrow as pa
import pytest

from svclog.chunk.format import CHUNK_SCHEMA, chunk_layout, encode_chunk
from svclog.chunk.head import SealedChunk
from svclog.chunk.pushdown import block_probe
from svclog.logql import ast
from svclog.model import Labels
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.layout_sidecar import decode_table, kept_rows, layouts_table, sidecar_key, table_layouts
from svclog.storage.objstore import ObjectStore

NS = 10**9
T0 = 1_793_491_200 * NS
STREAMS = [Labels((("app", "a"), ("pod", str(pod)))) for pod in range(4)]


def _chunk(pod: int, count: int = 400) -> SealedChunk:
    """Lines with a 32-character id each that no other line holds, ~100 bytes apiece."""
    table = pa.table(
        {
            "ts": pa.array([T0 + n * NS for n in range(count)], pa.int64()),
            "line": [f"level=info pod={pod} n={n} trace={_id(pod, n)} msg=something happened" for n in range(count)],
            "metadata": pa.array([None] * count, CHUNK_SCHEMA.field("metadata").type),
        }
    )
    return SealedChunk.from_table(table)


def _id(pod: int, n: int) -> str:
    return hashlib.sha1(f"{pod}-{n}".encode()).hexdigest()[:32]


def _needle(text: str):
    return block_probe((ast.LineFilter("|=", (ast.FilterValue(text),)),))


@pytest.fixture
def flushed(tmp_path):
    store = ObjectStore(str(tmp_path))
    # small blocks: several per chunk, so a needle rules out blocks as well as chunks
    ChunkStore(store, block_bytes=4096).put_chunks("t", [(s, _chunk(pod)) for pod, s in enumerate(STREAMS)], "ing")
    refs = [ref for found in IndexReader(store).chunk_refs("t", (), T0, T0 + 3600 * NS).values() for ref in found]
    return store, refs


def test_the_layouts_beside_a_segment_read_as_each_chunks_own(flushed):
    store, refs = flushed
    [segment] = {ref.segment for ref in refs}
    table = decode_table(store.get(sidecar_key(segment)))
    assert sorted(table.column("key").to_pylist()) == sorted(ref.key for ref in refs)
    for key, layout in table_layouts(table):
        own = chunk_layout(store.get(key))
        assert len(own.bounds) > 1
        assert (layout.bounds, layout.ascending, layout.line_bytes) == (own.bounds, own.ascending, own.line_bytes)
        assert layout.index_bytes == own.index_bytes and layout.index is not None


def test_a_reader_that_fetched_no_chunk_rules_them_out_from_the_layouts_alone(flushed):
    store, refs = flushed
    fresh = ChunkStore(store)  # another process: it has read nothing yet
    before = store.request_counts().get("GET", 0)
    end = T0 + 3600 * NS
    assert fresh.ruled_out(refs, T0, end, _needle(_id(9, 0))).tolist() == [True] * len(refs)
    holder = [ref.labels.get("pod") == "2" for ref in refs]
    assert fresh.ruled_out(refs, T0, end, _needle(_id(2, 123))).tolist() == [not hit for hit in holder]
    shares = fresh.kept_share(refs, T0, end, _needle(_id(2, 123))).tolist()
    assert [share > 0 for share in shares] == holder and max(shares) < 0.5  # a block of the holder's
    assert fresh.kept_share(refs, T0, end, _needle(_id(9, 0))).tolist() == [0.0] * len(refs)
    assert store.request_counts()["GET"] - before == 1  # the layouts object, once; no chunk
    assert fresh.sidecars.read == 1


def test_chunks_whose_segment_has_no_layouts_are_fetched_as_before(flushed):
    store, refs = flushed
    store.delete(sidecar_key(refs[0].segment))  # a segment of an older writer
    fresh = ChunkStore(store)
    assert not fresh.ruled_out(refs, T0, T0 + 3600 * NS, _needle(_id(9, 0))).any()
    before = store.request_counts().get("GET", 0)
    assert not fresh.ruled_out(refs, T0, T0 + 3600 * NS, _needle(_id(9, 0))).any()
    assert store.request_counts().get("GET", 0) == before  # a missing object is not asked for again
    for ref in refs:  # fetching a chunk teaches its layout, as before
        fresh.fetch(ref, T0, T0 + 3600 * NS)
    assert fresh.ruled_out(refs, T0, T0 + 3600 * NS, _needle(_id(9, 0))).all()


def test_a_damaged_layouts_object_leaves_the_chunks_to_be_fetched(flushed):
    store, refs = flushed
    store.put(sidecar_key(refs[0].segment), b"not an arrow file")
    fresh = ChunkStore(store)
    assert not fresh.ruled_out(refs, T0, T0 + 3600 * NS, _needle(_id(9, 0))).any()
    table = fresh.fetch(refs[0], T0, T0 + 3600 * NS)
    assert table.num_rows == 400


def test_a_merged_segments_layouts_keep_each_remaining_chunk_once():
    layout = chunk_layout(encode_chunk(_chunk(0, 10).table))
    first = layouts_table([("a", layout), ("b", layout)])
    second = layouts_table([("b", layout), ("c", layout)])
    merged = kept_rows([first, second], {"b", "c"})  # "a" left the index (a rewritten chunk)
    assert merged.column("key").to_pylist() == ["b", "c"]
    assert kept_rows([], {"a"}).num_rows == 0
