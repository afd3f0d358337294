"""What the index reader and chunk store ask the object store for: a period's listing serves
every query for `listing_ttl_s` (segments other processes write show after it; this process's
own writes at once), and concurrent misses of one listing, segment or chunk make one request."""

from __future__ import annotations

import threading
import time

import pyarrow as pa

from svclog.chunk.format import CHUNK_SCHEMA
from svclog.chunk.head import SealedChunk
from svclog.model import Labels, Matcher, MatchType
from svclog.storage import schema
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader, listing_snapshot
from svclog.storage.objstore import ObjectStore

DAY = schema.PERIOD_NS
APP = (Matcher("app", MatchType.EQ, "a"),)
STREAM = Labels({"app": "a"}.items())


def _chunk(ts: list[int]) -> SealedChunk:
    table = pa.table(
        {
            "ts": pa.array(ts, pa.int64()),
            "line": [f"l{t}" for t in ts],
            "metadata": pa.array([None] * len(ts), CHUNK_SCHEMA.field("metadata").type),
        }
    )
    return SealedChunk.from_table(table)


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _refs(reader: IndexReader) -> int:
    return len(reader.chunk_refs("t", APP, 10 * DAY, 11 * DAY).get(STREAM, []))


def _write_elsewhere(tmp_path, ts: int) -> None:
    """A flush by another process: its own ObjectStore generations, not this process's."""
    other = tmp_path / "other-process"
    ChunkStore(ObjectStore(str(other))).put_chunks("t", [(STREAM, _chunk([ts]))], "w2")
    for path in other.rglob("*"):
        if path.is_file():
            target = tmp_path / "store" / path.relative_to(other)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())


def test_a_listing_serves_every_query_until_its_ttl_then_other_processes_segments_show(tmp_path):
    store = ObjectStore(str(tmp_path / "store"))
    ChunkStore(store).put_chunks("t", [(STREAM, _chunk([10 * DAY + 1]))], "w")
    clock = Clock()
    reader = IndexReader(store, listing_ttl_s=5.0, clock=clock)
    lists = store.request_counts().get("LIST", 0)
    for _ in range(10):  # ten queries (each in its own snapshot) within the TTL: one LIST
        with listing_snapshot():
            assert _refs(reader) == 1
    assert store.request_counts()["LIST"] - lists == 1
    _write_elsewhere(tmp_path, 10 * DAY + 2)
    clock.now += 4.9
    assert _refs(reader) == 1  # not yet: the listing is 4.9 s old
    clock.now += 0.1
    assert _refs(reader) == 2  # the TTL passed: listed again, the other process's segment shows
    assert store.request_counts()["LIST"] - lists == 2


def test_this_process_writes_show_at_once(tmp_path):
    store = ObjectStore(str(tmp_path / "store"))
    ChunkStore(store).put_chunks("t", [(STREAM, _chunk([10 * DAY + 1]))], "w")
    reader = IndexReader(store, listing_ttl_s=3600.0, clock=Clock())
    assert _refs(reader) == 1
    # another ObjectStore over the same root in this process (the in-process service's ingester)
    ChunkStore(ObjectStore(str(tmp_path / "store"))).put_chunks("t", [(STREAM, _chunk([10 * DAY + 2]))], "w")
    assert _refs(reader) == 2
    assert _refs(reader) == 2 and store.request_counts()["LIST"] == 2


def test_wide_ranges_list_the_tenant_periods_once_per_ttl(tmp_path):
    store = ObjectStore(str(tmp_path / "store"))
    ChunkStore(store).put_chunks("t", [(STREAM, _chunk([10 * DAY + 1]))], "w")
    clock = Clock()
    reader = IndexReader(store, listing_ttl_s=5.0, clock=clock)
    for _ in range(3):
        assert len(reader.chunk_refs("t", APP, 0, 400 * DAY)[STREAM]) == 1
    assert store.request_counts()["LIST"] == 2  # the periods present, then day 10: once each
    clock.now += 5
    reader.chunk_refs("t", APP, 0, 400 * DAY)
    assert store.request_counts()["LIST"] == 4


class SlowStore(ObjectStore):
    """Each request takes 50 ms, so concurrent callers overlap."""

    def get(self, key: str) -> bytes:
        time.sleep(0.05)
        return super().get(key)

    def list(self, prefix: str, recursive: bool = False) -> list[str]:
        time.sleep(0.05)
        return super().list(prefix, recursive)


def _together(count: int, work) -> list:
    out: list = [None] * count
    barrier = threading.Barrier(count)

    def run(i: int) -> None:
        barrier.wait()
        out[i] = work()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return out


def test_concurrent_sub_queries_make_one_list_and_one_get_per_segment_and_chunk(tmp_path):
    store = SlowStore(str(tmp_path / "store"))
    refs = ChunkStore(store).put_chunks("t", [(STREAM, _chunk([10 * DAY + i])) for i in range(3)], "w")
    reader = IndexReader(store, listing_ttl_s=5.0)  # a listing the first caller made serves the rest
    answers = _together(8, lambda: _refs(reader))
    assert answers == [3] * 8
    counts = store.request_counts()
    assert counts["LIST"] == 1 and counts["GET"] == 1  # one listing, one segment (the 3 chunks share it)
    chunks = ChunkStore(store)
    read = _together(8, lambda: [len(chunks.fetch(ref, 0, 11 * DAY)) for ref in refs])
    assert read == [[1, 1, 1]] * 8
    assert store.request_counts()["GET"] - counts["GET"] == 3  # each chunk once
