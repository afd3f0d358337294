from svclog.ingester.wal import WAL


def test_records_replay_in_order_after_reopen(tmp_path):
    wal = WAL(tmp_path)
    for i in range(5):
        wal.append(("t", i))
    wal.close()
    snapshot, records = WAL(tmp_path).replay()
    assert snapshot is None
    assert list(records) == [("t", i) for i in range(5)]


def test_torn_tail_is_ignored(tmp_path):
    wal = WAL(tmp_path)
    wal.append("first")
    wal.append("second")
    wal.close()
    segment = next(tmp_path.glob("segment-*"))
    data = segment.read_bytes()
    segment.write_bytes(data[:-3])  # a crash in the middle of the last write
    _, records = WAL(tmp_path).replay()
    assert list(records) == ["first"]


def test_checkpoint_replaces_older_segments(tmp_path):
    wal = WAL(tmp_path)
    wal.append("before")
    wal.checkpoint({"state": 1})
    wal.append("after")
    wal.close()
    snapshot, records = WAL(tmp_path).replay()
    assert snapshot == {"state": 1}
    assert list(records) == ["after"]
    assert len(list(tmp_path.glob("checkpoint-*"))) == 1


def test_rotated_segment_is_synced_before_the_checkpoint_replaces_it(tmp_path, monkeypatch):
    import os

    wal = WAL(tmp_path)
    wal.append("before")
    covered = wal.rotate()
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    wal.append("after")  # the next segment takes appends while the checkpoint is pending
    wal.write_checkpoint(covered, {"state": 1})
    assert len(synced) >= 2  # the rotated segment, then the checkpoint file
    wal.close()
    snapshot, records = WAL(tmp_path).replay()
    assert snapshot == {"state": 1} and list(records) == ["after"]


def test_a_crash_between_rotation_and_checkpoint_loses_nothing(tmp_path):
    wal = WAL(tmp_path)
    wal.append("one")
    wal.rotate()  # the checkpoint never got written
    wal.append("two")
    wal.close()
    snapshot, records = WAL(tmp_path).replay()
    assert snapshot is None and list(records) == ["one", "two"]


def test_checkpoint_is_pickled_into_the_file_without_a_copy_in_memory(tmp_path):
    import tracemalloc

    import numpy as np
    import pyarrow as pa

    wal = WAL(tmp_path)
    table = pa.table({"ts": np.arange(200_000), "line": pa.array(["x" * 100] * 200_000)})
    tracemalloc.start()
    wal.checkpoint([("t", (("app", "a"),), [table])])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < table.nbytes / 4  # pickle.dumps built the whole ~22 MB payload as one bytes object
    snapshot, records = WAL(tmp_path).replay()
    assert snapshot[0][2][0].equals(table) and list(records) == []


def test_appends_are_fsynced_by_a_thread_of_their_own_within_the_interval(tmp_path, monkeypatch):
    import os
    import threading
    import time

    calls: list[tuple[int, str]] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append((fd, threading.current_thread().name)), real_fsync(fd)))
    wal = WAL(tmp_path, fsync_interval=0.5)
    mine = wal._file.fileno()

    def synced() -> list[str]:  # other tests' WALs may still fsync in their threads
        return [name for fd, name in calls if fd == mine]

    for i in range(20):  # appends never wait for the disk (an fsync under the ingester's lock stalled pushes)
        wal.append(i)
    assert synced() == []
    deadline = time.monotonic() + 5
    while not synced() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert synced() and set(synced()) == {"wal-fsync"}
    count = len(synced())
    time.sleep(1.2)
    assert len(synced()) == count  # nothing written since: no more fsyncs
    wal.close()
    assert list(WAL(tmp_path).replay()[1]) == list(range(20))
