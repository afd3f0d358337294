"""Query path with the delete hook: deleted lines vanish from StoreSource results before compaction.

Skipped until svclog/querier/source.py's StoreSource accepts `deletes=` (the lead's hook).
"""

from svclog.compactor import QueryTimeDeletes
from svclog.logql.source import SelectRequest
from svclog.model import NS, Matcher, MatchType
from svclog.querier.source import StoreSource
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore
from tests.compactor.helpers import HOUR, T0, Clock, flush, labels, make_compactor, stored_lines


def _lines(store, deletes):
    source = StoreSource(["t"], IndexReader(store), ChunkStore(store), None, deletes=deletes)
    request = SelectRequest((Matcher("app", MatchType.RE, ".+"),), T0, T0 + 2 * HOUR)
    return {str(block.labels): block.line.to_pylist() for block in source.select_logs(request)}


def test_deleted_lines_disappear_at_once_then_from_the_store(tmp_path):
    store = ObjectStore(str(tmp_path))
    ghost, api = labels(app="ghost"), labels(app="api")
    for stream in (ghost, api):
        flush(
            store,
            "t",
            stream,
            [T0 + i * NS for i in range(100)],
            [f"{i} {'boom' if i % 4 == 0 else 'ok'}" for i in range(100)],
        )
    clock = Clock()
    compactor = make_compactor(store, clock)
    deletes = QueryTimeDeletes(compactor.requests)
    compactor.create_delete_request("t", '{app="ghost"} |= "boom"', str(T0 // NS), str(T0 // NS + 3600))

    seen = _lines(store, deletes)
    assert len(seen['{app="ghost"}']) == 75 and not any("boom" in x for x in seen['{app="ghost"}'])
    assert len(seen['{app="api"}']) == 100
    assert sum("boom" in x for x in stored_lines(store, "t")) == 50  # still stored: not processed yet

    clock.now += 2 * HOUR
    assert compactor.run_once()["deleted_lines"] == 25
    assert _lines(store, deletes) == seen
    assert _lines(store, None) == seen  # the store itself no longer holds them
    assert sum("boom" in x for x in stored_lines(store, "t")) == 25
