from svclog.compactor.tenant_index import TenantIndex
from svclog.storage import schema
from svclog.storage.layout_sidecar import decode_table, sidecar_key
from svclog.storage.objstore import ObjectStore
from tests.compactor.helpers import DAY, HOUR, NS, T0, Clock, flush, indexed_keys, labels, make_compactor, read_all


def test_segments_of_a_day_merge_into_one_and_nothing_is_lost(tmp_path):
    store = ObjectStore(str(tmp_path))
    a, b = labels(app="a"), labels(app="b")
    for i in range(5):
        flush(store, "t", a, [T0 + i * HOUR], [f"a{i}"], writer=f"ing{i % 2}")
        flush(store, "t", b, [T0 + i * HOUR + 1], [f"b{i}"])
    day = schema.period_of(T0)
    assert len(_segments(store, day)) == 10
    before = read_all(store, "t")

    report = make_compactor(store, Clock(), chunk_target_size=1).run_once()

    segments = _segments(store, day)
    assert len(segments) == 1 and segments[0].rsplit("/", 1)[1].startswith("compactor-")
    assert report["index_segments_removed"] == 10 and report["index_segments_written"] == 1
    assert read_all(store, "t") == before
    refs = TenantIndex(store, "t").day(day).refs
    assert len(refs) == 10
    # the merged segment's layouts beside it, every chunk's, and the old segments' gone with them
    assert store.list(schema.index_dir("t", day)) == [segments[0], sidecar_key(segments[0])]
    merged = decode_table(store.get(sidecar_key(segments[0])))
    assert sorted(merged.column("key").to_pylist()) == sorted(refs)


def _segments(store: ObjectStore, day: int) -> list[str]:
    return [key for key in store.list(schema.index_dir("t", day)) if key.endswith(".arrow")]


def test_chunk_spanning_two_days_stays_indexed_in_both(tmp_path):
    store = ObjectStore(str(tmp_path))
    s = labels(app="a")
    flush(store, "t", s, [T0 + DAY - NS, T0 + DAY + NS], ["late", "early"])
    flush(store, "t", s, [T0 + 5], ["x"])
    flush(store, "t", s, [T0 + DAY + 5 * NS], ["y"])
    make_compactor(store, Clock(), chunk_target_size=1).run_once()
    day = schema.period_of(T0)
    for d in (day, day + 1):
        assert len(_segments(store, d)) == 1
    assert [line for _, line in read_all(store, "t", T0 + DAY, T0 + 2 * DAY)[s]] == ["early", "y"]
    assert len(read_all(store, "t")[s]) == 4


def test_reader_copes_with_segments_removed_under_it(tmp_path):
    from svclog.storage.index import IndexReader

    store = ObjectStore(str(tmp_path))
    flush(store, "t", labels(app="a"), [T0], ["x"])
    flush(store, "t", labels(app="a"), [T0 + 1], ["y"])
    old = store.list(schema.index_dir("t", schema.period_of(T0)))
    make_compactor(store, Clock(), chunk_target_size=1).run_once()
    reader = IndexReader(store)
    assert all(reader._segment(key) is None for key in old)  # gone: treated as removed, no error
    assert indexed_keys(store, "t")
