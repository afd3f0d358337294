import pyarrow as pa

from svclog.chunk.format import CHUNK_SCHEMA
from svclog.compactor import (
    DeleteRequestStore,
    QueryTimeDeletes,
    apply_to_block,
    apply_to_table,
    pending_delete_filters,
)
from svclog.compactor.delete_filter import DELETES_TTL_S
from svclog.logql.source import StreamBlock
from svclog.model import NS
from svclog.storage.objstore import ObjectStore
from tests.compactor.helpers import T0, Clock, labels, make_compactor

GHOST, OTHER = labels(app="ghost"), labels(app="api")


def _table(n: int) -> pa.Table:
    ts = pa.array([T0 + i * NS for i in range(n)], pa.int64())
    lines = pa.array([f"{i} {'boom' if i % 2 else 'ok'}" for i in range(n)], pa.string())
    meta = pa.array([[("k", str(i))] for i in range(n)], CHUNK_SCHEMA.field("metadata").type)
    return pa.Table.from_arrays([ts, lines, meta], schema=CHUNK_SCHEMA)


def test_pending_requests_filter_matching_lines_in_range_at_once(tmp_path):
    store = ObjectStore(str(tmp_path))
    compactor = make_compactor(store, Clock())
    # [T0+2s, T0+6s] inclusive, lines with boom, app=ghost only
    compactor.create_delete_request("t", '{app="ghost"} |= "boom"', str(T0 // NS + 2), str(T0 // NS + 6))
    filters = pending_delete_filters(compactor.requests, "t")
    table = _table(10)
    kept = apply_to_table(filters, GHOST, table)
    assert kept.column("line").to_pylist() == ["0 ok", "1 boom", "2 ok", "4 ok", "6 ok", "7 boom", "8 ok", "9 boom"]
    assert kept.column("metadata").to_pylist()[3] == [("k", "4")]
    assert apply_to_table(filters, OTHER, table).num_rows == 10
    assert pending_delete_filters(compactor.requests, "other-tenant") == []

    block = StreamBlock(
        GHOST, table.column("ts").chunk(0), table.column("line").chunk(0), table.column("metadata").chunk(0)
    )
    out = apply_to_block(filters, block)
    assert len(out) == 8 and len(out.metadata) == 8 and out.labels == GHOST

    view = QueryTimeDeletes(compactor.requests)
    assert view.table_filter("other-tenant") is None
    assert view.table_filter("t")(GHOST, table).num_rows == 8


def test_cancelled_request_stops_filtering(tmp_path):
    store = ObjectStore(str(tmp_path))
    compactor = make_compactor(store, Clock())
    rid = compactor.create_delete_request("t", '{app="ghost"}', str(T0 // NS), str(T0 // NS + 100))
    view = QueryTimeDeletes(compactor.requests)
    assert view.table_filter("t")(GHOST, _table(10)).num_rows == 0
    compactor.cancel_delete_request("t", rid)
    assert view.table_filter("t") is None


class _Tick:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_query_time_deletes_list_once_per_ttl_and_read_each_request_once(tmp_path):
    """Another process's requests show within the TTL; this process's own at once; bodies read once."""
    root = tmp_path / "store"
    root.mkdir()
    (tmp_path / "alias").symlink_to(root)  # the compactor's writes as another process's
    compactor = make_compactor(ObjectStore(str(root)), Clock())
    querier_store = ObjectStore(str(tmp_path / "alias"))
    tick = _Tick()
    view = QueryTimeDeletes(DeleteRequestStore(querier_store), clock=tick)
    assert view.filters("t") == [] and view.listings_read == 1
    compactor.create_delete_request("t", '{app="ghost"}', str(T0 // NS), str(T0 // NS + 100))
    for _ in range(10):  # every sub-query within the TTL: no request at all
        assert view.filters("t") == []
    assert view.listings_read == 1 and querier_store.request_counts() == {"LIST": 1}
    tick.now += DELETES_TTL_S
    assert len(view.filters("t")) == 1 and view.listings_read == 2
    # the results-cache digest names the change while other queriers may lag, then settles
    settling = view.digest("t")
    tick.now += DELETES_TTL_S - 0.1
    assert view.digest("t") == settling
    tick.now += 0.2
    settled = view.digest("t")
    assert settled != settling and view.digest("t") == settled
    assert len(view.filters("t")) == 1 and querier_store.request_counts() == {"LIST": 3, "GET": 1}

    # a request this process cancels is gone from its very next query
    own = QueryTimeDeletes(compactor.requests, clock=tick)
    rid = compactor.requests.list("t")[0].request_id
    assert len(own.filters("t")) == 1
    compactor.cancel_delete_request("t", rid)
    assert own.filters("t") == []
