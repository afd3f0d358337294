import pytest

from svclog.ingester.ingester import Ingester, IngesterSettings
from svclog.model import Labels, LimitError, Matcher, MatchType, StreamColumns
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore

APP_A = Matcher("app", MatchType.EQ, "a")


def _stream(app, ts, lines, md=None):
    return StreamColumns(Labels({"app": app}.items()), ts, lines, md)


@pytest.fixture
def parts(tmp_path):
    store = ObjectStore(str(tmp_path / "store"))
    return tmp_path, store, ChunkStore(store)


def _ingester(tmp_path, chunks, **kw):
    return Ingester(IngesterSettings("ing-0", str(tmp_path / "wal"), **kw), chunks)


def test_push_then_select_by_matchers_and_time(parts):
    tmp, _, chunks = parts
    ing = _ingester(tmp, chunks)
    ing.push("t1", [_stream("a", [1, 2, 3], ["x", "y", "z"]), _stream("b", [1], ["other"])])
    found = ing.select("t1", (APP_A,), 2, 4)
    assert len(found) == 1
    labels, table = found[0]
    assert labels.to_dict() == {"app": "a"}
    assert sorted(table.column("ts").to_pylist()) == [2, 3]


def test_tenants_are_isolated(parts):
    tmp, _, chunks = parts
    ing = _ingester(tmp, chunks)
    ing.push("t1", [_stream("a", [1], ["secret"])])
    assert ing.select("t2", (APP_A,), 0, 10) == []
    assert ing.series("t2", (), 0, 10) == []


def test_wal_replay_restores_unflushed_entries(parts):
    tmp, _, chunks = parts
    ing = _ingester(tmp, chunks)
    ing.push("t1", [_stream("a", [1, 2], ["x", "y"], [[("k", "v")], None])])
    # a new instance on the same WAL directory stands for the restarted process
    again = _ingester(tmp, chunks)
    table = again.select("t1", (APP_A,), 0, 10)[0][1]
    assert table.column("line").to_pylist() == ["x", "y"]
    assert table.column("metadata").to_pylist()[0] == [("k", "v")]


def test_flush_writes_chunks_and_index_and_empties_memory(parts):
    tmp, store, chunks = parts
    ing = _ingester(tmp, chunks)
    ing.push("t1", [_stream("a", [5, 1], ["late", "early"])])
    assert ing.flush(force=True) == 1
    assert ing.flush_queue_length() == 0 and ing.memory_chunks() == 1  # retained for the retain period
    refs = IndexReader(store).chunk_refs("t1", (APP_A,), 0, 10)
    (ref,) = refs[Labels({"app": "a"}.items())]
    data = chunks.fetch(ref, 0, 10)
    assert data.column("line").to_pylist() == ["early", "late"]
    # flushed data is not replayed again after a restart (the checkpoint leaves retained chunks out)
    assert _ingester(tmp, chunks).memory_chunks() == 0


def test_cut_by_size(parts):
    tmp, _, chunks = parts
    ing = _ingester(tmp, chunks, chunk_target_size=10)
    ing.push("t1", [_stream("a", [1], ["0123456789abc"])])
    ing.push("t1", [_stream("b", [1], ["tiny"])])
    assert ing.flush() == 1  # only the full head is cut


def test_failed_upload_keeps_chunks_for_retry(parts):
    tmp, _, chunks = parts

    class Broken:
        def put_chunks(self, *a):
            raise OSError("store down")

    ing = _ingester(tmp, Broken())
    ing.push("t1", [_stream("a", [1], ["keep me"])])
    assert ing.flush(force=True) == 0
    assert ing.stats.flush_failures == 1
    assert ing.select("t1", (APP_A,), 0, 10)[0][1].num_rows == 1
    ing.writer = chunks
    assert ing.flush(force=True) == 1


def test_stream_limit_refuses_new_streams_without_logging_them(parts):
    tmp, _, chunks = parts
    ing = _ingester(tmp, chunks, max_streams_per_tenant=1)
    ing.push("t1", [_stream("a", [1], ["x"])])
    with pytest.raises(LimitError):
        ing.push("t1", [_stream("b", [1], ["y"])])
    ing.push("t1", [_stream("a", [2], ["z"])])  # existing stream still accepted
    again = _ingester(tmp, chunks)
    assert [labels.to_dict() for labels in again.series("t1", (), 0, 10)] == [{"app": "a"}]


def test_packed_select_round_trips_streams_in_one_table(parts):
    tmp, _, chunks = parts
    ing = _ingester(tmp, chunks)
    ing.push("t1", [_stream("a", [1, 2], ["x", "y"]), _stream("b", [3], ["z"])])
    packed = ing.select_packed("t1", (), 0, 10)
    assert packed.table.num_rows == 3 and len(packed.labels) == 2
    unpacked = {labels.get("app"): t.column("line").to_pylist() for labels, t in packed.unpack()}
    assert unpacked == {"a": ["x", "y"], "b": ["z"]}
    assert ing.select_packed("nobody", (), 0, 10).unpack() == []


def test_encoded_batches_are_logged_verbatim_and_replayed(parts):
    from svclog.ingester.payload import decode_batch, encode_batch

    tmp, _, chunks = parts
    ing = _ingester(tmp, chunks)
    batch = [_stream("a", [1, 2], ["x", "y"], [[("k", "v")], None])]
    payload = encode_batch("t1", batch)
    assert decode_batch(payload)[0] == "t1"
    ing.push_payload(payload)
    again = _ingester(tmp, chunks)
    table = again.select("t1", (APP_A,), 0, 10)[0][1]
    assert table.column("line").to_pylist() == ["x", "y"]
    assert table.column("metadata").to_pylist()[0] == [("k", "v")]


def test_pushes_go_on_while_a_checkpoint_is_written(parts):
    import threading

    tmp, _, chunks = parts
    ing = _ingester(tmp, chunks)
    ing.push("t1", [_stream("a", [1], ["x"])])
    writing, pushed = threading.Event(), threading.Event()
    real_write = ing.wal.write_checkpoint

    def slow_write(covered, snapshot):
        writing.set()
        assert pushed.wait(5), "a push waited for the checkpoint write"
        real_write(covered, snapshot)

    ing.wal.write_checkpoint = slow_write
    worker = threading.Thread(target=ing.checkpoint)
    worker.start()
    assert writing.wait(5)
    ing.push("t1", [_stream("a", [2], ["y"])])  # logged to the segment after the checkpoint's
    pushed.set()
    worker.join(5)
    ing.close()
    again = _ingester(tmp, chunks)
    assert sorted(again.select("t1", (APP_A,), 0, 10)[0][1].column("ts").to_pylist()) == [1, 2]


class _DepthLock:
    """An RLock that records when no thread holds it any more (depth back to 0)."""

    def __init__(self, events: list):
        import threading

        self._lock, self._depth, self.events = threading.RLock(), 0, events

    def acquire(self, *args, **kwargs):
        got = self._lock.acquire(*args, **kwargs)
        if got:
            self._depth += 1
        return got

    def release(self):
        self._depth -= 1
        if self._depth == 0:
            self.events.append("free")
        self._lock.release()

    __enter__ = acquire

    def __exit__(self, *exc):
        self.release()


def test_the_flush_tick_lets_pushes_in_between_streams(parts):
    # compacting or cutting every head in one lock hold stalled all pushes for the whole pass
    tmp, _, chunks = parts
    ing = _ingester(tmp, chunks)
    ing.push("t1", [_stream("a", [1], ["x"]), _stream("b", [1], ["y"])])
    events: list = []
    for stream in ing.tenants["t1"].streams.values():
        stream.head.compact = lambda lock, name=stream.labels.to_dict()["app"]: events.append(name)  # noqa: B008  binds this stream's name now
    ing._lock = _DepthLock(events)
    ing.flush()
    compacted = [i for i, e in enumerate(events) if e != "free"]
    assert len(compacted) == 2
    assert "free" in events[compacted[0] + 1 : compacted[1]], events


def test_a_checkpoint_copies_the_heads_after_releasing_the_lock(parts, monkeypatch):
    import threading

    import svclog.ingester.ingester as ingester_module

    tmp, _, chunks = parts
    ing = _ingester(tmp, chunks)
    ing.push("t1", [_stream("a", [1], ["x"])])
    copying, pushed = threading.Event(), threading.Event()
    real_own = ingester_module._own_table

    def slow_own(batches):
        copying.set()
        assert pushed.wait(5), "a push waited while the checkpoint copied a head"
        return real_own(batches)

    monkeypatch.setattr(ingester_module, "_own_table", slow_own)
    worker = threading.Thread(target=ing.checkpoint)
    worker.start()
    assert copying.wait(5)
    ing.push("t1", [_stream("a", [2], ["y"])])
    pushed.set()
    worker.join(5)
    ing.close()
    again = _ingester(tmp, chunks)
    assert sorted(again.select("t1", (APP_A,), 0, 10)[0][1].column("ts").to_pylist()) == [1, 2]


def test_a_checkpointed_head_slice_does_not_carry_the_whole_push():
    import pyarrow as pa

    from svclog.ingester.ingester import _own_table
    from svclog.ingester.payload import entries_of

    push = entries_of([_stream("a", list(range(1000)), ["x" * 200] * 1000)])
    table = _own_table([push.slice(10, 20)])
    assert table.column("ts").to_pylist() == list(range(10, 30))
    assert table.get_total_buffer_size() < 20 * 300
    assert isinstance(table, pa.Table)


def test_a_checkpoint_of_heads_compacted_between_pushes_replays_every_entry_in_push_order(parts):
    from svclog.ingester.payload import encode_batch

    tmp, _, chunks = parts
    ing = _ingester(tmp, chunks)
    pushed: list[str] = []
    for round_ in range(3):  # compacted, compacted, then slices of the last pushes left as they are
        for push in range(2):
            lines = [f"r{round_}p{push}-{i}" for i in range(3)]
            pushed += lines
            # equal timestamps: only push order tells the rows apart after a replay
            ing.push_payload(encode_batch("t1", [_stream("a", [7, 7, 7], lines), _stream("b", [1], ["other"])]))
        if round_ < 2:
            for inst in ing.tenants.values():
                for stream in inst.streams.values():
                    stream.head.compact()
    ing.checkpoint()
    assert not list((tmp / "wal").glob("segment-0"))  # the records are covered by the checkpoint
    again = _ingester(tmp, chunks)
    assert again.select("t1", (APP_A,), 0, 10)[0][1].column("line").to_pylist() == pushed
