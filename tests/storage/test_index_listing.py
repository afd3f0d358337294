"""How the index reader lists segments: once per day inside a query, again when a listed
segment was replaced by the compactor meanwhile."""

from __future__ import annotations

import pyarrow as pa

from svclog.chunk.format import CHUNK_SCHEMA
from svclog.chunk.head import SealedChunk
from svclog.compactor.tenant_index import TenantIndex
from svclog.model import Labels, Matcher, MatchType
from svclog.storage import schema
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader, listing_snapshot
from svclog.storage.objstore import ObjectStore

DAY = schema.PERIOD_NS
APP = (Matcher("app", MatchType.EQ, "a"),)


def _chunk(ts: list[int]) -> SealedChunk:
    table = pa.table(
        {
            "ts": pa.array(ts, pa.int64()),
            "line": [f"l{t}" for t in ts],
            "metadata": pa.array([None] * len(ts), CHUNK_SCHEMA.field("metadata").type),
        }
    )
    return SealedChunk.from_table(table)


def _store(tmp_path) -> tuple[ObjectStore, Labels]:
    store = ObjectStore(str(tmp_path))
    stream = Labels({"app": "a"}.items())
    for i in range(3):
        ChunkStore(store).put_chunks("t", [(stream, _chunk([10 * DAY + i * 100, 10 * DAY + i * 100 + 1]))], "w")
    return store, stream


def test_a_snapshot_lists_each_day_once(tmp_path):
    store, stream = _store(tmp_path)
    reader = IndexReader(store, listing_ttl_s=0)  # no listing shared across queries: the snapshot alone
    before = store.request_counts().get("LIST", 0)
    for window in range(4):  # a query reading its day in four windows
        reader.chunk_refs("t", APP, 10 * DAY + window * 100, 10 * DAY + window * 100 + 100)
    assert store.request_counts()["LIST"] - before == 4
    before = store.request_counts()["LIST"]
    with listing_snapshot():
        found = [reader.chunk_refs("t", APP, 10 * DAY + w * 100, 10 * DAY + w * 100 + 100) for w in range(4)]
        with listing_snapshot():  # nested: still the outer one
            reader.chunk_refs("t", APP, 10 * DAY, 11 * DAY)
    assert store.request_counts()["LIST"] - before == 1
    assert [len(f.get(stream, [])) for f in found] == [1, 1, 1, 0]
    # flushed after the snapshot: the next query sees it
    ChunkStore(store).put_chunks("t", [(stream, _chunk([10 * DAY + 350]))], "w")
    with listing_snapshot():
        assert len(reader.chunk_refs("t", APP, 10 * DAY, 11 * DAY)[stream]) == 4


def test_segments_replaced_under_a_listing_are_found_by_listing_again(tmp_path):
    store, stream = _store(tmp_path)
    reader = IndexReader(store)
    with listing_snapshot():
        assert len(reader.chunk_refs("t", APP, 10 * DAY, 10 * DAY + 1)[stream]) == 1  # lists the day, reads 3 segments
        reader._cache.clear()  # (as if evicted) so the next read goes to the store
        index = TenantIndex(store, "t")
        index.day(10)
        index.commit()  # the compactor merges the 3 segments into one
        assert len([key for key in store.list(schema.index_dir("t", 10)) if key.endswith(".arrow")]) == 1
        # the snapshot's listing names removed segments: the reader lists again and finds the merged one
        assert len(reader.chunk_refs("t", APP, 10 * DAY, 11 * DAY)[stream]) == 3
