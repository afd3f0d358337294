"""Equal timestamps across the read path: chunks, ingester replicas, the engine and the compactor.

Entries of one stream sharing a timestamp come back in push order (forward) and reversed
(backward), wherever they are stored; only true duplicates (timestamp and line) collapse.
"""

import pytest

from svclog.compactor.chunk_merge import merge_small_chunks
from svclog.compactor.chunks import ChunkIO
from svclog.compactor.tenant_index import TenantIndex
from svclog.ingester.ingester import Ingester, IngesterSettings
from svclog.logql.engine.evaluator import evaluate
from svclog.logql.engine.params import QueryParams
from svclog.logql.parser import parse
from svclog.model import Labels, StreamColumns
from svclog.querier.source import StoreSource
from svclog.storage import schema
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore
from tests.querier.test_source import Replicas

T = 1_700_000_000 * 10**9
APP = Labels({"app": "ties"}.items())
# pushes in order; every line of a push shares T, text order differs from push order
PUSHES = [["zz first", "mm second", "aa third"], ["yy fourth", "bb fifth"], ["xx sixth", "cc seventh"]]
PUSHED = [line for push in PUSHES for line in push]


def _push(ingesters, lines, ts=T):
    for ing in ingesters:
        ing.push("t", [StreamColumns(APP, [ts] * len(lines), lines)])


def _lines(source, query='{app="ties"}', direction="forward", limit=100):
    params = QueryParams.for_range(T - 10**9, T + 10**9, limit=limit, direction=direction)
    result = evaluate(parse(query), params, source)
    return [line for stream in result.streams for line in stream.texts()]


@pytest.fixture
def cluster(tmp_path):
    store = ObjectStore(str(tmp_path / "s"))
    chunks = ChunkStore(store)
    ings = [Ingester(IngesterSettings(f"i{i}", str(tmp_path / f"w{i}")), chunks) for i in range(3)]
    return store, chunks, ings


def test_head_only_replicas_collapse_and_keep_push_order(cluster):
    store, chunks, ings = cluster
    for push in PUSHES:
        _push(ings, push)
    source = StoreSource(["t"], IndexReader(store), chunks, Replicas(ings))
    assert _lines(source) == PUSHED
    assert source.stats.duplicates == 2 * len(PUSHED)
    assert _lines(StoreSource(["t"], IndexReader(store), chunks, Replicas(ings)), direction="backward") == PUSHED[::-1]


def test_tie_run_split_over_flushed_chunks_sealed_chunks_and_heads(cluster):
    store, chunks, ings = cluster
    _push(ings, PUSHES[0])
    ings[0].flush(force=True)  # replica 0: first push in a chunk of the store
    ings[1].flush(force=True)  # replica 1 too (an identical chunk)
    _push(ings, PUSHES[1])
    ings[0].flush(force=True)  # replica 0: a second chunk with only the same timestamp
    for ing in ings[1:]:
        for inst in ing.tenants.values():
            for stream in inst.streams.values():
                stream.cut()  # replicas 1 and 2: sealed in memory, not flushed
    _push(ings, PUSHES[2])  # every replica: in the head
    for direction, expected in (("forward", PUSHED), ("backward", PUSHED[::-1])):
        source = StoreSource(["t"], IndexReader(store), chunks, Replicas(ings))
        assert _lines(source, direction=direction) == expected
    store_only = StoreSource(["t"], IndexReader(store), chunks, None)
    assert _lines(store_only) == PUSHED[:5]


def test_limit_cuts_inside_a_tie_run(cluster):
    store, chunks, ings = cluster
    _push(ings[:1], ["before"], ts=T - 1)
    for push in PUSHES:
        _push(ings[:1], push)
    _push(ings[:1], ["after"], ts=T + 1)
    ings[0].flush(force=True)
    _push(ings[:1], ["late same ts"])  # pushed after the flush: last among equals

    def source() -> StoreSource:
        return StoreSource(["t"], IndexReader(store), chunks, Replicas(ings[:1]))

    assert _lines(source(), direction="forward", limit=4) == ["before", *PUSHED[:3]]
    assert _lines(source(), direction="backward", limit=4) == ["after", "late same ts", *PUSHED[:-3:-1]]
    assert _lines(source(), query='{app="ties"} |~ "(second|fifth|seventh)"', direction="backward", limit=2) == [
        "cc seventh",
        "bb fifth",
    ]


def test_metric_queries_count_every_entry_of_a_tie_run_once(cluster):
    store, chunks, ings = cluster
    for push in PUSHES:
        _push(ings[:2], push)
    ings[0].flush(force=True)
    source = StoreSource(["t"], IndexReader(store), chunks, Replicas(ings[:2]))
    params = QueryParams.for_instant(T + 10**9)
    result = evaluate(parse('count_over_time({app="ties"}[5s])'), params, source)
    assert [s.value for s in result.samples] == [len(PUSHED)]


def test_compactor_merge_keeps_push_order_of_ties(tmp_path):
    store = ObjectStore(str(tmp_path))
    chunks = ChunkStore(store)
    ing = Ingester(IngesterSettings("i0", str(tmp_path / "w")), chunks)
    for push in PUSHES:
        _push([ing], push)
        ing.flush(force=True)  # three chunks whose bounds are all (T, T)
    index = TenantIndex(store, "t")
    merged, written = merge_small_chunks(index, ChunkIO(store), schema.period_of(T), 1 << 20)
    assert (merged, written) == (3, 1)
    (ref,) = [r for r in index.refs_in(schema.period_of(T)) if r.labels == APP]
    assert ChunkIO(store).read(ref).column("line").to_pylist() == PUSHED
