from svclog.config import LimitsConfig
from svclog.model import NS
from svclog.storage.objstore import ObjectStore
from tests.compactor.helpers import (
    DAY,
    HOUR,
    T0,
    Clock,
    chunk_keys,
    flush,
    indexed_keys,
    labels,
    make_compactor,
    read_all,
    stored_lines,
)

GHOST, PROD, OTHER = labels(app="ghost", env="dev"), labels(app="ghost", env="prod"), labels(app="api")


def _load(store):
    """Three streams over two days; every 10th line of each says boom."""
    for stream in (GHOST, PROD, OTHER):
        for part in range(4):  # 4 chunks of 30 lines, 12 h apart
            ts = [T0 + part * 12 * HOUR + i * 60 * NS for i in range(30)]
            lines = [f"{stream.get('env') or 'api'} {part}-{i} {'boom' if i % 10 == 0 else 'ok'}" for i in range(30)]
            flush(store, "t", stream, ts, lines)


def test_processing_rewrites_chunks_without_deleted_lines(tmp_path):
    store = ObjectStore(str(tmp_path))
    _load(store)
    clock = Clock()
    compactor = make_compactor(store, clock, chunk_target_size=1)
    # boom lines of app=ghost in the first 30 h: parts 0, 1, 2 (part 3 starts at 36 h)
    rid = compactor.create_delete_request(
        "t", '{app="ghost"} |= "boom"', str(T0 // NS), str(T0 // NS + 30 * 3600), "12h"
    )
    assert compactor.run_once()["delete_shards_processed"] == 0  # still within the cancel period
    assert compactor.list_delete_requests("t")[0]["status"] == "received"

    clock.now += 2 * HOUR
    report = compactor.run_once()

    assert report["delete_shards_processed"] == 3 and report["deleted_lines"] == 2 * 3 * 3
    [listed] = compactor.list_delete_requests("t")
    assert (listed["request_id"], listed["status"]) == (rid, "processed")
    found = read_all(store, "t")
    for stream in (GHOST, PROD):
        lines = [line for _, line in found[stream]]
        assert len(lines) == 120 - 9
        assert [line for line in lines if "boom" in line] == [
            line for line in lines if line.split()[1][0] == "3" and "boom" in line
        ]
    assert len(found[OTHER]) == 120  # other stream untouched
    # the store no longer holds a deleted line anywhere, and no chunk object is left behind
    stored = stored_lines(store, "t")
    assert sum("boom" in line for line in stored) == 2 * 3 + 12  # part 3 of both ghost streams + all of api
    assert len(stored) == 3 * 120 - 18
    assert chunk_keys(store, "t") == indexed_keys(store, "t")
    # processing again changes nothing
    assert compactor.run_once()["deleted_lines"] == 0


def test_delete_without_filter_removes_whole_chunks_and_trims_edges(tmp_path):
    store = ObjectStore(str(tmp_path))
    _load(store)
    clock = Clock()
    compactor = make_compactor(store, clock, chunk_target_size=1)
    start = T0 + 12 * HOUR + 10 * 60 * NS  # inside part 1
    compactor.create_delete_request("t", '{env="prod"}', str(start // NS), str((T0 + DAY) // NS))
    clock.now += 2 * HOUR
    report = compactor.run_once()
    kept = [line for _, line in read_all(store, "t")[PROD]]
    # part 0, the first 10 of part 1, part 2 but its first entry (at the end, which is inclusive), part 3
    assert len(kept) == 30 + 10 + 29 + 30 and "prod 2-0 boom" not in kept and "prod 2-1 ok" in kept
    assert report["deleted_lines"] == 20 + 1 and len(read_all(store, "t")[GHOST]) == 120
    assert chunk_keys(store, "t") == indexed_keys(store, "t")


def test_filter_only_mode_keeps_the_data(tmp_path):
    store = ObjectStore(str(tmp_path))
    _load(store)
    clock = Clock()
    compactor = make_compactor(store, clock, LimitsConfig(deletion_mode="filter-only"))
    compactor.create_delete_request("t", '{app="ghost"}', str(T0 // NS), str((T0 + DAY) // NS))
    clock.now += 2 * HOUR
    assert compactor.run_once()["deleted_lines"] == 0
    assert len(stored_lines(store, "t")) == 360


def test_force_cancelled_request_is_not_processed_further(tmp_path):
    store = ObjectStore(str(tmp_path))
    _load(store)
    clock = Clock()
    compactor = make_compactor(store, clock)
    rid = compactor.create_delete_request("t", '{app="ghost"} |= "boom"', str(T0 // NS), str(T0 // NS + 7200), "1h")
    clock.now += 2 * HOUR
    compactor.cancel_delete_request("t", rid, force=True)
    assert compactor.run_once()["deleted_lines"] == 0
    assert compactor.list_delete_requests("t") == []
