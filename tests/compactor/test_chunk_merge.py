from svclog.compactor.chunks import split_by_size
from svclog.compactor.tenant_index import TenantIndex
from svclog.storage import schema
from svclog.storage.objstore import ObjectStore
from tests.compactor.helpers import (
    DAY,
    T0,
    Clock,
    chunk_keys,
    flush,
    indexed_keys,
    labels,
    make_compactor,
    read_all,
    sealed,
)


def test_small_chunks_of_a_stream_merge_to_target_size_and_old_chunks_go(tmp_path):
    store = ObjectStore(str(tmp_path))
    s, other = labels(app="a"), labels(app="b")
    for i in range(20):  # 20 chunks of 10 lines x 10 bytes = 100 bytes each
        flush(store, "t", s, [T0 + i * 100 + j for j in range(10)], [f"line-{i:02d}-{j}" for j in range(10)])
    flush(store, "t", other, [T0], ["lonely"])
    flush(store, "t", s, [T0 + 5], ["line-00-5"])  # a replica's duplicate entry
    before = read_all(store, "t")
    old_keys = chunk_keys(store, "t")

    report = make_compactor(store, Clock(), chunk_target_size=500).run_once()

    after = read_all(store, "t")
    assert after == before and len(after[s]) == 200
    refs = TenantIndex(store, "t").refs_in(schema.period_of(T0))
    stream_refs = [r for r in refs if r.labels == s]
    assert len(stream_refs) == 4  # 2000 bytes / 500
    assert all(r.bytes >= 500 for r in stream_refs[:-1])
    assert report["chunks_merged"] == 21 and report["chunks_written_by_merge"] == 4
    # none of the merged-away chunks is left behind; the lonely one stays as it was
    assert chunk_keys(store, "t") == indexed_keys(store, "t")
    assert len(old_keys & chunk_keys(store, "t")) == 1


def test_merge_is_stable_and_keeps_chunks_within_one_day(tmp_path):
    store = ObjectStore(str(tmp_path))
    s = labels(app="a")
    # spans two days: the flush cuts it into one chunk per day, so day 0 holds three small chunks
    flush(store, "t", s, [T0 + DAY - 2, T0 + DAY + 2], ["x", "y"])
    flush(store, "t", s, [T0 + 1], ["a"])
    flush(store, "t", s, [T0 + 2], ["b"])
    compactor = make_compactor(store, Clock(), chunk_target_size=1000)
    first = compactor.run_once()
    second = compactor.run_once()
    assert first["chunks_merged"] == 3 and second["chunks_merged"] == 0
    assert len(indexed_keys(store, "t")) == 2  # day 0 merged, day 1 alone
    assert chunk_keys(store, "t") == indexed_keys(store, "t")


def test_removed_chunks_wait_for_the_delete_delay(tmp_path):
    store = ObjectStore(str(tmp_path))
    s = labels(app="a")
    flush(store, "t", s, [T0 + 1], ["a"])
    flush(store, "t", s, [T0 + 2], ["b"])
    clock = Clock()
    compactor = make_compactor(store, clock, chunk_target_size=1000, retention_delete_delay=3600 * 10**9)
    compactor.run_once()
    assert len(chunk_keys(store, "t")) == 3  # two old ones still readable by queries in flight
    clock.now += 3600 * 10**9
    assert compactor.run_once()["chunks_removed"] == 2
    assert chunk_keys(store, "t") == indexed_keys(store, "t")


def test_split_by_size_cuts_at_the_target():
    table = sealed(list(range(10)), ["x" * 10] * 10).table
    pieces = split_by_size(table, 30)
    assert [p.num_rows for p in pieces] == [3, 3, 3, 1]
    assert split_by_size(table, 1000)[0].num_rows == 10
