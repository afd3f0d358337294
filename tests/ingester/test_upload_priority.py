"""Chunk uploads run at the background priority, below queries, and nothing else of the flush does."""

from __future__ import annotations

import os
import threading

from svclog import cpu_priority
from svclog.ingester.ingester import Ingester, IngesterSettings
from svclog.model import Labels, StreamColumns
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.objstore import ObjectStore


def _niceness() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


class _RecordingStore(ChunkStore):
    """The real chunk store, noting the niceness of the thread that uploads."""

    def __init__(self, store: ObjectStore):
        super().__init__(store)
        self.upload_niceness: list[int] = []

    def put_chunks(self, tenant, chunks, writer_id):
        self.upload_niceness.append(_niceness())
        return super().put_chunks(tenant, chunks, writer_id)


def test_uploads_run_in_the_background_and_the_flushing_thread_gets_its_priority_back(tmp_path):
    writer = _RecordingStore(ObjectStore(str(tmp_path / "store")))
    ing = Ingester(IngesterSettings("ing-0", str(tmp_path / "wal")), writer)
    ing.push("t1", [StreamColumns(Labels({"pod": "a"}.items()), [1000, 2000], ["one", "two"])])
    out: list = []

    def flush() -> None:
        base = _niceness()
        out.append((base, ing.flush(force=True), _niceness()))

    thread = threading.Thread(target=flush)
    thread.start()
    thread.join()
    base, flushed, after = out[0]
    assert flushed == 1 and after == base
    lowered = max(base, cpu_priority.BACKGROUND_NICENESS) if cpu_priority.can_restore_priority() else base
    assert writer.upload_niceness == [lowered]
