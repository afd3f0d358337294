"""A flush cycle writes one index segment per tenant (and index period), whatever its stream count."""

from __future__ import annotations

from svclog.ingester.ingester import Ingester, IngesterSettings
from svclog.model import Labels, Matcher, MatchType, StreamColumns
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore


def test_one_segment_per_tenant_and_flush_for_a_hundred_streams(tmp_path):
    store = ObjectStore(str(tmp_path / "store"))
    ing = Ingester(IngesterSettings("ing-0", str(tmp_path / "wal")), ChunkStore(store))
    for tenant in ("t1", "t2"):
        ing.push(tenant, [StreamColumns(Labels({"pod": f"p{i}"}.items()), [1000 + i], [f"l{i}"]) for i in range(100)])
    assert ing.flush(force=True) == 200
    segments = [k for k in store.list("index", recursive=True) if k.endswith(".arrow")]
    assert len(segments) == 2 and {k.split("/")[1] for k in segments} == {"t1", "t2"}
    assert len(store.list("chunks", recursive=True)) == 200
    refs = IndexReader(store).chunk_refs("t1", (Matcher("pod", MatchType.RE, ".+"),), 0, 10**6)
    assert len(refs) == 100 and all(len(r) == 1 for r in refs.values())
    # a second cycle adds one more segment per tenant it has data for
    ing.push("t1", [StreamColumns(Labels({"pod": f"p{i}"}.items()), [2000], ["more"]) for i in range(10)])
    assert ing.flush(force=True) == 10
    assert len([k for k in store.list("index", recursive=True) if k.endswith(".arrow")]) == 3
