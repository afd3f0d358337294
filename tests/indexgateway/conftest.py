"""A small object store: two tenants' streams flushed twice a day over three days (six index segments)."""

import pyarrow as pa
import pytest

from svclog.chunk.format import CHUNK_SCHEMA
from svclog.chunk.head import SealedChunk
from svclog.model import Labels
from svclog.storage import schema
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.objstore import ObjectStore

DAY = schema.PERIOD_NS


def _chunk(ts):
    table = pa.table(
        {
            "ts": pa.array(ts, pa.int64()),
            "line": [f"l{t}" for t in ts],
            "metadata": pa.array([None] * len(ts), CHUNK_SCHEMA.field("metadata").type),
        }
    )
    return SealedChunk.from_table(table)


class CountingStore(ObjectStore):
    """Counts reads of index segments."""

    def __init__(self, root: str):
        super().__init__(root)
        self.index_reads = 0

    def get(self, key: str) -> bytes:
        if key.startswith("index/"):
            self.index_reads += 1
        return super().get(key)


@pytest.fixture
def store(tmp_path):
    store = CountingStore(str(tmp_path))
    chunks = ChunkStore(store)
    for day in range(3):  # three periods, two flushes (segments) each, two tenants
        for flush in range(2):
            streams = [
                (Labels({"app": app, "pod": str(pod)}.items()), _chunk([day * DAY + flush * 10 + pod]))
                for app in ("api", "db")
                for pod in range(3)
            ]
            chunks.put_chunks("t1", streams, f"w{flush}")
            chunks.put_chunks("t2", streams[:2], f"w{flush}")
    return store
