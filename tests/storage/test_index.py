import pyarrow as pa
import pytest

from svclog.chunk.format import CHUNK_SCHEMA
from svclog.chunk.head import SealedChunk
from svclog.model import Labels, Matcher, MatchType
from svclog.storage import chunk_store, schema
from svclog.storage.chunk_store import ChunkStore, FetchStats
from svclog.storage.index import IndexReader
from svclog.storage.layout_sidecar import sidecar_key
from svclog.storage.objstore import ObjectStore

DAY = schema.PERIOD_NS


def _chunk(ts, lines):
    table = pa.table(
        {
            "ts": pa.array(ts, pa.int64()),
            "line": lines,
            "metadata": pa.array([None] * len(ts), CHUNK_SCHEMA.field("metadata").type),
        }
    )
    return SealedChunk.from_table(table)


@pytest.fixture
def store(tmp_path):
    return ObjectStore(str(tmp_path))


def test_refs_are_found_by_matchers_time_and_tenant(store):
    chunks = ChunkStore(store)
    a, b = Labels({"app": "a", "env": "prod"}.items()), Labels({"app": "b", "env": "dev"}.items())
    chunks.put_chunks("t1", [(a, _chunk([10, 20], ["x", "y"])), (b, _chunk([30], ["z"]))], "w")
    reader = IndexReader(store)
    prod = Matcher("env", MatchType.EQ, "prod")
    assert list(reader.chunk_refs("t1", (prod,), 0, 100)) == [a]
    assert reader.chunk_refs("t1", (prod,), 21, 100) == {}  # chunk ends before the range
    assert reader.chunk_refs("t2", (prod,), 0, 100) == {}
    regex = Matcher("app", MatchType.RE, "a|b")
    assert reader.series("t1", (regex,), 0, 100) == {a, b}


def test_chunk_spanning_two_periods_is_indexed_in_both(store):
    chunks = ChunkStore(store)
    labels = Labels({"app": "a"}.items())
    chunks.put_chunks("t1", [(labels, _chunk([DAY - 1, DAY + 1], ["x", "y"]))], "w")
    reader = IndexReader(store)
    assert reader.chunk_refs("t1", (), DAY + 1, DAY + 2)
    assert reader.chunk_refs("t1", (), 0, DAY)
    for period in (0, 1):  # one segment each, its chunk's layout beside it
        segment, layouts = sorted(store.list(schema.index_dir("t1", period)))
        assert layouts == sidecar_key(segment)


def test_shard_selects_by_fingerprint(store):
    chunks = ChunkStore(store)
    streams = [Labels({"pod": str(i)}.items()) for i in range(20)]
    chunks.put_chunks("t1", [(s, _chunk([1], ["x"])) for s in streams], "w")
    reader = IndexReader(store)
    shards = [set(reader.chunk_refs("t1", (), 0, 10, shard=(i, 4))) for i in range(4)]
    assert set().union(*shards) == set(streams)
    assert sum(len(s) for s in shards) == len(streams)


def test_fetch_uses_cache_and_counts_downloads(store):
    chunks = ChunkStore(store)
    labels = Labels({"app": "a"}.items())
    (ref,) = chunks.put_chunks("t1", [(labels, _chunk([1, 2, 3], ["a", "b", "c"]))], "w")
    stats = FetchStats()
    assert chunks.fetch(ref, 2, 3, stats).column("line").to_pylist() == ["b"]
    chunks.fetch(ref, 0, 10, stats)
    assert stats.chunks_downloaded == 1
    assert stats.compressed_bytes == 2 * ref.compressed


def test_a_cached_chunk_is_opened_once_and_forgotten_with_its_bytes(store, monkeypatch):
    opened: list[int] = []
    real_open = chunk_store.open_chunk
    monkeypatch.setattr(chunk_store, "open_chunk", lambda data, lines=True: opened.append(1) or real_open(data, lines))
    labels = Labels({"app": "a"}.items())
    one = ChunkStore(store)
    (ref,) = one.put_chunks("t1", [(labels, _chunk([1, 2, 3], ["a", "b", "c"]))], "w")
    chunks = ChunkStore(store, cache_bytes=ref.compressed)  # room for one chunk
    assert chunks.fetch(ref, 100, 200).num_rows == 0 and opened == []  # no block wanted: not opened
    for start in (1, 2, 3, 1):
        assert chunks.fetch(ref, start, 10).num_rows == 4 - start
    assert len(opened) == 1
    (other,) = one.put_chunks("t1", [(Labels({"app": "b"}.items()), _chunk([1, 2, 3], ["d", "e", "f"]))], "w")
    assert chunks.fetch(other, 0, 10).column("line").to_pylist() == ["d", "e", "f"]  # evicts the first
    assert chunks.fetch(ref, 0, 10).column("line").to_pylist() == ["a", "b", "c"]
    assert len(opened) == 3 and len(chunks._readers) == 1
    assert chunks.fetch(ref, 0, 10, lines=False).column("line").to_pylist() == ["", "", ""]  # its second reader
    assert len(opened) == 4 and len(chunks._readers) == 2
    chunks.fetch(other, 0, 10)  # evicts the first again: both its readers go
    assert len(chunks._readers) == 1


def test_object_store_put_get_list_delete(store):
    store.put("a/b/c", b"data")
    assert store.get("a/b/c") == b"data"
    assert store.list("a/b") == ["a/b/c"]
    assert store.list("missing") == []
    store.delete("a/b/c")
    assert not store.exists("a/b/c")
    with pytest.raises(FileNotFoundError):
        store.get("a/b/c")


def test_a_stream_spanning_years_is_cut_per_day_not_indexed_every_day_between(store):
    chunks = ChunkStore(store)
    labels = Labels({"app": "a"}.items())
    far = 3 * 365 * DAY
    refs = chunks.put_chunks("t1", [(labels, _chunk([5, DAY + 5, far + 5], ["a", "b", "c"]))], "w")
    assert len(refs) == 3
    assert len([key for key in store.list("index/t1", recursive=True) if key.endswith(".arrow")]) == 3
    reader = IndexReader(store)
    (ref,) = reader.chunk_refs("t1", (), far, far + 10)[labels]
    assert chunks.fetch(ref, far, far + 10).column("line").to_pylist() == ["c"]
